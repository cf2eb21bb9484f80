package notifications

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

// processOpts tune one processing of an event.
type processOpts struct {
	// replay: an unroutable event processed again because its payment's
	// record appeared (or an operator routes it); the upstream will not
	// retry it, so failures are applied without waiting (no ErrNotReady).
	replay bool
	// to: the owner an operator gives the event (Route); nil: route it.
	to *RouteTo
}

// process routes ev, applies it to its payment, creates and enqueues its
// deliveries and marks it processed; an event without owner is marked
// unroutable. Every step is idempotent, so a retry redoes what is missing.
func (r *Receiver) process(ctx context.Context, ev Event, opts processOpts) error {
	log := r.Log.With("eventId", ev.ID, "eventCode", ev.Item.EventCode, "pspReference", ev.PaymentPSP)
	o, unroutable, err := r.route(ctx, ev)
	if opts.to != nil && err == nil && unroutable != "" {
		o, unroutable, err = r.routeTo(ctx, ev, *opts.to)
	}
	if err != nil {
		return err
	}
	if unroutable != "" {
		return r.markUnroutable(ctx, ev, unroutable)
	}
	log = log.With("merchant", o.merchant.ID)
	popts := payments.NotificationOptions{
		Now: r.Clock.Now(), FirstSeen: ev.ReceivedAt, Grace: r.Grace, CaptureMode: o.merchant.CaptureMode,
	}
	if opts.replay {
		popts.Grace = -1
	}
	if o.via != viaPayment {
		popts.Owner = &payments.NotificationOwner{MerchantID: o.merchant.ID, SiteID: o.siteID, Source: o.source, SessionID: o.sessionID}
	}
	res, err := payments.ApplyNotification(ctx, r.Payments, ev.Item, popts)
	switch {
	case errors.Is(err, payments.ErrUnknownPayment):
		log.InfoContext(ctx, "notification for a payment without record: delivered, no record updated")
	case err != nil:
		return err
	case res.Created:
		log.InfoContext(ctx, "payment record created from its notification", "state", string(res.Payment.State))
	}
	source := o.source
	if res.Payment.Source != "" {
		source = res.Payment.Source
	}
	payload, err := webhooks.BuildPayload(r.Live, ev.Item, string(source))
	if err != nil {
		return err
	}
	if r.History != nil {
		if err := r.History.PutMerchantEvent(ctx, MerchantEvent{
			ID: ev.ID, MerchantID: o.merchant.ID, EventCode: ev.Item.EventCode, PSPReference: ev.Item.PSPReference,
			PaymentPSP: ev.PaymentPSP, Payload: payload, CreatedAt: ev.ReceivedAt,
		}); err != nil {
			return fmt.Errorf("keep event %s in the history of %s: %w", ev.ID, o.merchant.ID, err)
		}
	}
	ids, err := r.deliver(ctx, ev, o.merchant.ID, payload)
	if err != nil {
		return err
	}
	if ev.Item.EventCode == upstream.EventAuthorisation && (!opts.replay || opts.to != nil) {
		if err := r.replayUnroutable(ctx, ev); err != nil {
			return err
		}
	}
	if err := r.markProcessed(ctx, ev.ID, o.merchant.ID, ids); err != nil {
		return err
	}
	log.InfoContext(ctx, "notification processed", "deliveries", len(ids), "routedBy", o.via)
	return nil
}

// deliver creates (once) a delivery of ev for every enabled subscription of
// the merchant that wants its event code, and enqueues each one not yet
// enqueued. It returns the ids of the deliveries.
func (r *Receiver) deliver(ctx context.Context, ev Event, merchantID string, payload []byte) ([]string, error) {
	subs, err := r.Tenants.ListSubscriptions(ctx, merchantID)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions of %s: %w", merchantID, err)
	}
	now := r.Clock.Now()
	var ids []string
	for _, sub := range subs {
		if !sub.Enabled || !wants(sub, ev.Item.EventCode) {
			continue
		}
		d, _, err := webhooks.CreateDelivery(ctx, r.Deliveries, webhooks.Delivery{
			ID: webhooks.DeliveryID(ev.ID, sub.ID), MerchantID: merchantID, SubscriptionID: sub.ID,
			EventID: ev.ID, EventCode: ev.Item.EventCode, PSPReference: ev.PaymentPSP, Payload: payload,
			Status: webhooks.StatusPending, CreatedAt: now, UpdatedAt: now,
		})
		if err != nil {
			return nil, fmt.Errorf("create delivery for subscription %s: %w", sub.ID, err)
		}
		ids = append(ids, d.ID)
		if d.Enqueued || d.Status != webhooks.StatusPending {
			continue
		}
		if err := r.Queue.Enqueue(ctx, queue.Job{DeliveryID: d.ID, Attempt: 1}, 0); err != nil {
			return nil, fmt.Errorf("enqueue delivery %s: %w", d.ID, err)
		}
		if _, err := webhooks.MutateDelivery(ctx, r.Deliveries, d.ID, func(d *webhooks.Delivery) error {
			d.Enqueued, d.UpdatedAt = true, now
			return nil
		}); err != nil {
			return nil, fmt.Errorf("mark delivery %s enqueued: %w", d.ID, err)
		}
	}
	return ids, nil
}

// wants reports whether sub subscribes to code (no filter: every code).
func wants(sub tenant.Subscription, code string) bool {
	if len(sub.EventCodes) == 0 {
		return true
	}
	return slices.ContainsFunc(sub.EventCodes, func(c string) bool { return strings.EqualFold(c, code) })
}

// replayUnroutable processes the unroutable events of ev's payment again,
// now that its AUTHORISATION has been applied (a modification that
// overtook the authorisation of a Sessions-flow payment).
func (r *Receiver) replayUnroutable(ctx context.Context, ev Event) error {
	events, err := r.Events.ListPaymentEvents(ctx, ev.PaymentPSP)
	if err != nil {
		return fmt.Errorf("list events of payment %s: %w", ev.PaymentPSP, err)
	}
	for _, e := range events {
		if e.ID == ev.ID || e.Status != EventUnroutable {
			continue
		}
		r.Log.InfoContext(ctx, "processing an unroutable notification again: its payment is now known",
			"eventId", e.ID, "eventCode", e.Item.EventCode, "pspReference", e.PaymentPSP)
		if err := r.process(ctx, e, processOpts{replay: true}); err != nil {
			return fmt.Errorf("replay event %s: %w", e.ID, err)
		}
	}
	return nil
}

// markProcessed records that ev's deliveries are all enqueued.
func (r *Receiver) markProcessed(ctx context.Context, id, merchantID string, deliveries []string) error {
	now := r.Clock.Now()
	_, err := mutateEvent(ctx, r.Events, id, func(e *Event) error {
		if e.Status == EventProcessed {
			return errSkip
		}
		e.Status, e.MerchantID, e.ProcessedAt, e.UpdatedAt = EventProcessed, merchantID, &now, now
		for _, d := range deliveries {
			if !slices.Contains(e.DeliveryIDs, d) {
				e.DeliveryIDs = append(e.DeliveryIDs, d)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark event %s processed: %w", id, err)
	}
	return nil
}

// markUnroutable keeps an event no merchant could be found for and logs it.
func (r *Receiver) markUnroutable(ctx context.Context, ev Event, why string) error {
	now := r.Clock.Now()
	_, err := mutateEvent(ctx, r.Events, ev.ID, func(e *Event) error {
		if e.Status == EventProcessed || (e.Status == EventUnroutable && e.UnroutableReason == why) {
			return errSkip
		}
		e.Status, e.UnroutableReason, e.UpdatedAt = EventUnroutable, why, now
		if e.UnroutableAt == nil {
			e.UnroutableAt = &now
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark event %s unroutable: %w", ev.ID, err)
	}
	r.Log.WarnContext(ctx, "notification kept unroutable: no owning merchant found", "reason", why,
		"eventId", ev.ID, "eventCode", ev.Item.EventCode, "pspReference", ev.PaymentPSP,
		"merchantAccountCode", ev.Item.MerchantAccountCode)
	return nil
}
