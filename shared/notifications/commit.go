package notifications

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

// ItemCommit is everything the processing of one item writes: the event,
// the payment record and the deliveries, stored at once.
type ItemCommit struct {
	// Event is the event as processed; PrevEventVersion is the version it
	// was read at (0: the event is new).
	Event            Event
	PrevEventVersion int64
	// Payment is the payment record as updated or created (nil: none
	// changed); PrevPaymentVersion is the version it was read at (0: new).
	Payment            *payments.Payment
	PrevPaymentVersion int64
	// Deliveries are the event's deliveries (Version 1, Enqueued). Each one
	// not stored yet is created and a job for its first attempt enqueued;
	// a stored one that is pending without a job gets its job and is
	// marked enqueued; any other stored one is left as it is.
	Deliveries []webhooks.Delivery
	// MerchantEvent is the event as its merchant's history keeps it (nil:
	// no history kept).
	MerchantEvent *MerchantEvent
}

// Outbox is the port of a store that also holds the delivery queue (the
// embedded store under the local queue): CommitItem writes c and the jobs
// of its deliveries in one durable transaction, so an item takes one write.
// storeerr.ErrConflict when the event's or the payment's stored version is
// not the one given; nothing is written then.
type Outbox interface {
	CommitItem(ctx context.Context, c ItemCommit) error
}

// waker is a queue that can be told jobs were written by an Outbox
// (localqueue.Queue).
type waker interface{ Wake() }

// acceptAtOnce is acceptItem with an Outbox: the reads one item needs run
// concurrently (its event, its payment record, and the merchant and
// subscriptions its routing metadata names), then one transaction writes
// the event, the payment record, the deliveries and their jobs. So a new
// item takes two sequential store steps (an AUTHORISATION three: it lists
// its payment's events afterwards for unroutable ones), and the upstream is
// answered only after the transaction is durable. A concurrent change of
// the event or the record (the transaction's conditions) redoes the item.
func (r *Receiver) acceptAtOnce(ctx context.Context, live string, item upstream.NotificationRequestItem) error {
	for range maxMutateAttempts {
		ev, done, err := r.commitItem(ctx, live, item)
		switch {
		case errors.Is(err, storeerr.ErrConflict):
			continue
		case err != nil:
			return err
		case done && item.EventCode == upstream.EventAuthorisation:
			if err := r.replayUnroutable(ctx, ev); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("store event %s: too many concurrent updates: %w", EventID(DedupKey(item)), storeerr.ErrConflict)
}

// tenantRead is a merchant and its subscriptions, read together.
type tenantRead struct {
	merchantID string
	merchant   tenant.Merchant
	merchErr   error
	subs       []tenant.Subscription
	subsErr    error
}

func (r *Receiver) readTenant(ctx context.Context, merchantID string) *tenantRead {
	t := &tenantRead{merchantID: merchantID}
	parallel(
		func() { t.merchant, t.merchErr = r.Tenants.GetMerchant(ctx, merchantID) },
		func() { t.subs, t.subsErr = r.Tenants.ListSubscriptions(ctx, merchantID) },
	)
	return t
}

// parallel runs fns concurrently and waits for all of them.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns[1:] {
		wg.Go(fn)
	}
	fns[0]()
	wg.Wait()
}

// commitItem processes item once. done reports that it was processed now
// (not a duplicate, not unroutable); ev is the event as stored.
func (r *Receiver) commitItem(ctx context.Context, live string, item upstream.NotificationRequestItem) (ev Event, done bool, err error) {
	now := r.Clock.Now()
	ev = newEvent(live, item, now)
	var (
		stored    Event
		storedErr error
		pay       payments.Payment
		payErr    error
		pre       *tenantRead
	)
	reads := []func(){
		func() { stored, storedErr = r.Events.GetEvent(ctx, ev.ID) },
		func() { pay, payErr = r.Payments.GetPayment(ctx, ev.PaymentPSP) },
	}
	if m := item.AdditionalData[keyMetaMerchant]; m != "" {
		reads = append(reads, func() { pre = r.readTenant(ctx, m) })
	}
	parallel(reads...)

	prevEv := int64(0)
	switch {
	case storedErr == nil:
		prevEv = stored.Version
		ev = stored
		ev.Received++
		ev.UpdatedAt = now
		if stored.DeliveriesEnqueued() {
			ev.Version = prevEv + 1
			if err := r.Events.SaveEvent(ctx, ev, prevEv); err != nil {
				return ev, false, fmt.Errorf("store event %s again: %w", ev.ID, err)
			}
			r.Log.InfoContext(ctx, "duplicate notification: already processed",
				"eventId", ev.ID, "eventCode", item.EventCode, "pspReference", item.PSPReference, "received", ev.Received)
			return ev, false, nil
		}
	case !errors.Is(storedErr, storeerr.ErrNotFound):
		return ev, false, fmt.Errorf("read event %s: %w", ev.ID, storedErr)
	}
	log := r.Log.With("eventId", ev.ID, "eventCode", item.EventCode, "pspReference", ev.PaymentPSP)

	// The merchant is read with its subscriptions, unless they were read
	// above for the merchant the metadata names.
	getMerchant := func(ctx context.Context, id string) (tenant.Merchant, error) {
		if pre == nil || pre.merchantID != id {
			pre = r.readTenant(ctx, id)
		}
		return pre.merchant, pre.merchErr
	}
	o, unroutable, err := r.routeWith(ctx, ev, pay, payErr, getMerchant)
	if err != nil {
		return ev, false, err
	}
	if unroutable != "" {
		ev.Status, ev.UnroutableReason, ev.UpdatedAt = EventUnroutable, unroutable, now
		if ev.UnroutableAt == nil {
			ev.UnroutableAt = &now
		}
		ev.Version = prevEv + 1
		if err := r.Events.SaveEvent(ctx, ev, prevEv); err != nil {
			return ev, false, fmt.Errorf("mark event %s unroutable: %w", ev.ID, err)
		}
		r.Log.WarnContext(ctx, "notification kept unroutable: no owning merchant found", "reason", unroutable,
			"eventId", ev.ID, "eventCode", item.EventCode, "pspReference", ev.PaymentPSP,
			"merchantAccountCode", item.MerchantAccountCode)
		return ev, false, nil
	}
	log = log.With("merchant", o.merchant.ID)

	// The payment record: the domain's update, applied to the record read
	// above and captured instead of saved.
	staged := &stagedPayment{psp: ev.PaymentPSP, p: pay, err: payErr, store: r.Payments}
	popts := payments.NotificationOptions{
		Now: now, FirstSeen: ev.ReceivedAt, Grace: r.Grace, CaptureMode: o.merchant.CaptureMode,
	}
	if o.via != viaPayment {
		popts.Owner = &payments.NotificationOwner{MerchantID: o.merchant.ID, SiteID: o.siteID, Source: o.source, SessionID: o.sessionID}
	}
	res, err := payments.ApplyNotification(ctx, staged, item, popts)
	switch {
	case errors.Is(err, payments.ErrUnknownPayment):
		log.InfoContext(ctx, "notification for a payment without record: delivered, no record updated")
	case errors.Is(err, payments.ErrNotReady):
		// Keep the event (its first arrival starts the grace period).
		ev.Version = prevEv + 1
		if err := r.Events.SaveEvent(ctx, ev, prevEv); err != nil {
			return ev, false, fmt.Errorf("store event %s: %w", ev.ID, err)
		}
		log.WarnContext(ctx, "notification not applied yet: its operation is still being recorded; the upstream retries")
		return ev, false, err
	case err != nil:
		return ev, false, err
	case res.Created:
		log.InfoContext(ctx, "payment record created from its notification", "state", string(res.Payment.State))
	}
	source := o.source
	if res.Payment.Source != "" {
		source = res.Payment.Source
	}
	payload, err := webhooks.BuildPayload(r.Live, item, string(source))
	if err != nil {
		return ev, false, err
	}

	subs, subsErr := pre.subs, pre.subsErr // pre is o.merchant's (routeWith read it)
	if subsErr != nil {
		return ev, false, fmt.Errorf("list subscriptions of %s: %w", o.merchant.ID, subsErr)
	}
	c := ItemCommit{PrevEventVersion: prevEv}
	for _, sub := range subs {
		if !sub.Enabled || !wants(sub, item.EventCode) {
			continue
		}
		d := webhooks.Delivery{
			ID: webhooks.DeliveryID(ev.ID, sub.ID), MerchantID: o.merchant.ID, SubscriptionID: sub.ID,
			EventID: ev.ID, EventCode: item.EventCode, PSPReference: ev.PaymentPSP, Payload: payload,
			Status: webhooks.StatusPending, Enqueued: true, CreatedAt: now, UpdatedAt: now, Version: 1,
		}
		c.Deliveries = append(c.Deliveries, d)
		if !slices.Contains(ev.DeliveryIDs, d.ID) {
			ev.DeliveryIDs = append(ev.DeliveryIDs, d.ID)
		}
	}
	if staged.saved != nil {
		c.Payment, c.PrevPaymentVersion = staged.saved, staged.prev
	}
	ev.Status, ev.MerchantID, ev.ProcessedAt, ev.Version = EventProcessed, o.merchant.ID, &now, prevEv+1
	c.Event = ev
	if r.History != nil {
		c.MerchantEvent = &MerchantEvent{
			ID: ev.ID, MerchantID: o.merchant.ID, EventCode: item.EventCode, PSPReference: item.PSPReference,
			PaymentPSP: ev.PaymentPSP, Payload: payload, CreatedAt: ev.ReceivedAt,
		}
	}
	if err := r.Outbox.CommitItem(ctx, c); err != nil {
		return ev, false, fmt.Errorf("commit event %s: %w", ev.ID, err)
	}
	if w, ok := r.Queue.(waker); ok {
		w.Wake()
	}
	log.InfoContext(ctx, "notification processed", "deliveries", len(c.Deliveries), "routedBy", o.via)
	return ev, true, nil
}

// stagedPayment serves one payment record read beforehand to the domain's
// update and keeps what it would save, so the save joins the item's
// transaction. The domain's Mutate reads once and saves once through it.
// Other records the update touches (a pending record the payment is bound
// from, pending.go) are read and written in the store directly.
type stagedPayment struct {
	psp   string
	p     payments.Payment
	err   error
	saved *payments.Payment
	prev  int64
	store payments.Store
}

var _ payments.Store = (*stagedPayment)(nil)

func (s *stagedPayment) GetPayment(ctx context.Context, psp string) (payments.Payment, error) {
	if psp != s.psp {
		return s.store.GetPayment(ctx, psp)
	}
	return s.p, s.err
}

func (s *stagedPayment) SavePayment(ctx context.Context, p payments.Payment, prev int64) error {
	if p.PSPReference != s.psp {
		return s.store.SavePayment(ctx, p, prev)
	}
	s.saved, s.prev = &p, prev
	return nil
}

func (s *stagedPayment) PutSession(context.Context, payments.Session) error {
	return errors.New("notifications: no session is written while applying a notification")
}

func (s *stagedPayment) GetSession(context.Context, string) (payments.Session, error) {
	return payments.Session{}, errors.New("notifications: no session is read while applying a notification")
}
