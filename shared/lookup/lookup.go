// Package lookup answers merchants' read-only questions about their own
// data (docs/openapi.yaml): one payment with its amounts and timeline, the
// history of their notifications as their webhooks receive them, and their
// webhook deliveries. It reads only; another merchant's (or site's) data is
// answered exactly like data that does not exist.
package lookup

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// Payments is the port to payments.
type Payments interface {
	// GetPayment returns storeerr.ErrNotFound for an unknown pspReference.
	GetPayment(ctx context.Context, pspReference string) (payments.Head, error)
	// Timeline returns at most limit facts of a payment after cursor and
	// the cursor of the last one when more follow.
	Timeline(ctx context.Context, psp, cursor string, limit int) ([]payments.Fact, string, error)
}

// Events is the port to notification events and merchants' histories.
type Events interface {
	// GetEvent returns storeerr.ErrNotFound for an unknown id.
	GetEvent(ctx context.Context, id string) (notifications.Event, error)
	// ListMerchantEvents returns a page of the merchant's events, newest first.
	ListMerchantEvents(ctx context.Context, merchantID string, q notifications.EventQuery) ([]notifications.MerchantEvent, error)
}

// Deliveries is the port to webhook deliveries.
type Deliveries interface {
	// GetDelivery returns storeerr.ErrNotFound for an unknown id.
	GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error)
	// ListDeliveryPage returns a page of the merchant's deliveries, newest first.
	ListDeliveryPage(ctx context.Context, merchantID string, q webhooks.DeliveryQuery) ([]webhooks.Delivery, error)
}

// Service answers the lookups.
type Service struct {
	payments   Payments
	events     Events
	deliveries Deliveries
}

// New returns a Service reading from the three ports.
func New(p Payments, e Events, d Deliveries) *Service {
	return &Service{payments: p, events: e, deliveries: d}
}

// TimelinePage is how many lines of a payment's timeline one answer holds
// at most (GET payment holds the first page).
const TimelinePage = 50

// Payment returns the payment psp of merchant m and site as the merchant
// may see it, with the first page of its timeline: its head and that page
// read at once. Unknown, another merchant's and another site's payments
// are all 404 yp_3006, and so are the service's internal records kept
// beside payments (payments.Owned).
func (s *Service) Payment(ctx context.Context, m tenant.Merchant, site tenant.Site, psp string) (PaymentView, error) {
	head, page, err := s.ownedPage(ctx, m, site, psp, "")
	if err != nil {
		return PaymentView{}, err
	}
	if page.err != nil {
		return PaymentView{}, apperr.Wrap(apperr.Internal, "internal error", page.err)
	}
	v := paymentView(head)
	v.Timeline, v.TimelineNext = page.Data, page.Next
	return v, nil
}

// Timeline returns a page of payment psp's timeline after cursor (the
// Next of the page before), for GET payments/{pspReference}/timeline:
// the payment's head (its owner) and the page read at once.
func (s *Service) Timeline(ctx context.Context, m tenant.Merchant, site tenant.Site, psp, cursor string) (TimelineView, error) {
	_, page, err := s.ownedPage(ctx, m, site, psp, cursor)
	if err != nil {
		return TimelineView{}, err
	}
	if page.err != nil {
		return TimelineView{}, apperr.InvalidField("startingAfter", "not a position in this payment's timeline")
	}
	return page.TimelineView, nil
}

// pageRead is a page of a timeline, or why it could not be read.
type pageRead struct {
	TimelineView
	err error
}

// ownedPage reads payment psp's head and its timeline's page after cursor
// at once: err when the payment is not the merchant's site's (nothing of
// the page is returned then), else the head and the page as read.
func (s *Service) ownedPage(ctx context.Context, m tenant.Merchant, site tenant.Site, psp, cursor string) (payments.Head, pageRead, error) {
	var (
		page pageRead
		wg   sync.WaitGroup
	)
	wg.Go(func() { page.TimelineView, page.err = s.timeline(ctx, psp, cursor) })
	head, err := payments.Owned(ctx, s.payments, m, site, psp)
	wg.Wait()
	return head, page, err
}

// timeline reads one page of psp's timeline.
func (s *Service) timeline(ctx context.Context, psp, cursor string) (TimelineView, error) {
	facts, next, err := s.payments.Timeline(ctx, psp, cursor, TimelinePage)
	if err != nil {
		return TimelineView{}, fmt.Errorf("timeline of %s: %w", psp, err)
	}
	return TimelineView{Data: timelineOf(facts), Next: next, HasMore: next != ""}, nil
}

// EventHistory returns a page of the merchant's event history, newest first.
func (s *Service) EventHistory(ctx context.Context, m tenant.Merchant, in EventsInput) (EventPage, error) {
	q := notifications.EventQuery{Limit: in.Limit + 1, PSPReference: in.PSPReference, EventCode: in.EventCode}
	if in.StartingAfter != "" {
		ev, err := s.events.GetEvent(ctx, in.StartingAfter)
		if errors.Is(err, storeerr.ErrNotFound) || (err == nil && ev.MerchantID != m.ID) {
			return EventPage{}, apperr.InvalidField("startingAfter", "no such event")
		}
		if err != nil {
			return EventPage{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read event %s: %w", in.StartingAfter, err))
		}
		q.After = &notifications.EventCursor{CreatedAt: ev.ReceivedAt, ID: ev.ID}
	}
	evs, err := s.events.ListMerchantEvents(ctx, m.ID, q)
	if err != nil {
		return EventPage{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("list events of %s: %w", m.ID, err))
	}
	page := EventPage{Data: make([]EventView, 0, min(len(evs), in.Limit)), HasMore: len(evs) > in.Limit}
	for _, e := range evs[:min(len(evs), in.Limit)] {
		page.Data = append(page.Data, eventView(e))
	}
	return page, nil
}

// DeliveryList returns a page of the merchant's webhook deliveries, newest first.
func (s *Service) DeliveryList(ctx context.Context, m tenant.Merchant, in DeliveriesInput) (DeliveryPage, error) {
	q := webhooks.DeliveryQuery{Status: in.Status, Limit: in.Limit + 1}
	if in.StartingAfter != "" {
		d, err := s.deliveries.GetDelivery(ctx, in.StartingAfter)
		if errors.Is(err, storeerr.ErrNotFound) || (err == nil && d.MerchantID != m.ID) {
			return DeliveryPage{}, apperr.InvalidField("startingAfter", "no such webhook delivery")
		}
		if err != nil {
			return DeliveryPage{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read delivery %s: %w", in.StartingAfter, err))
		}
		q.After = &webhooks.DeliveryCursor{CreatedAt: d.CreatedAt, ID: d.ID}
	}
	ds, err := s.deliveries.ListDeliveryPage(ctx, m.ID, q)
	if err != nil {
		return DeliveryPage{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("list deliveries of %s: %w", m.ID, err))
	}
	page := DeliveryPage{Data: make([]DeliveryView, 0, min(len(ds), in.Limit)), HasMore: len(ds) > in.Limit}
	for _, d := range ds[:min(len(ds), in.Limit)] {
		page.Data = append(page.Data, DeliveryViewOf(d))
	}
	return page, nil
}
