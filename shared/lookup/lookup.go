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

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// Payments is the port to payment records.
type Payments interface {
	// GetPayment returns storeerr.ErrNotFound for an unknown pspReference.
	GetPayment(ctx context.Context, pspReference string) (payments.Payment, error)
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

// Payment returns the payment psp of merchant m and site as the merchant
// may see it: one store read (payments.Owned). Unknown, another
// merchant's and another site's payments are all 404 yp_3006, and so are
// the service's internal records kept beside payments (a pending record of
// a payment started with an action, bound to one or not: merchants see the
// payment under its pspReference).
func (s *Service) Payment(ctx context.Context, m tenant.Merchant, site tenant.Site, psp string) (PaymentView, error) {
	p, err := payments.Owned(ctx, s.payments, m, site, psp)
	if err != nil {
		return PaymentView{}, err
	}
	return paymentView(p), nil
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
