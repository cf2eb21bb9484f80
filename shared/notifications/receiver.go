package notifications

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

// maxItems bounds the items of one notification (the upstream sends one).
const maxItems = 100

// Receiver processes the upstream's notifications. Every field is required
// except Outbox and Grace. It is safe for concurrent use.
type Receiver struct {
	Signer     *upstream.Signer // the upstream's HMAC key
	Events     EventStore
	Payments   payments.Store
	Tenants    tenant.Store
	Deliveries webhooks.DeliveryStore
	// History keeps each routed event for its merchant's event history
	// (nil: none kept).
	History EventLog
	Queue   queue.Queue
	// Outbox, when set, writes each item's outcome and its delivery jobs in
	// one transaction (see ItemCommit); Queue must then be the queue those
	// jobs land in. Optional: without it an item is processed step by
	// step, enqueueing through Queue.
	Outbox Outbox
	Clock  clock.Clock
	Log    *slog.Logger
	// Live is the deployment's environment: webhooks carry "live": true
	// only in production (docs/security.md).
	Live bool
	// Grace is payments.NotificationOptions.Grace (0: the default).
	Grace time.Duration
}

// Accept verifies and processes a notification. It returns nil only when
// every item is stored, applied to its payment and has its deliveries
// enqueued (or is kept as unroutable) — the upstream is then answered
// "[accepted]". A missing or bad signature on any item is an
// apperr.Unauthenticated error and nothing is stored; any other error means
// the upstream must retry (it is answered 500).
func (r *Receiver) Accept(ctx context.Context, n upstream.Notification) error {
	if len(n.NotificationItems) == 0 {
		return apperr.New(apperr.Invalid, "notification without notificationItems")
	}
	if len(n.NotificationItems) > maxItems {
		return apperr.Newf(apperr.Invalid, "notification with more than %d items", maxItems)
	}
	for i, w := range n.NotificationItems {
		if !r.Signer.VerifyItem(w.Item) {
			r.Log.WarnContext(ctx, "notification refused: bad or missing HMAC signature",
				"item", i, "eventCode", w.Item.EventCode, "pspReference", w.Item.PSPReference)
			return apperr.New(apperr.Unauthenticated, "invalid notification signature")
		}
		if w.Item.EventCode == "" || w.Item.PSPReference == "" {
			return apperr.New(apperr.Invalid, "notification item without eventCode or pspReference")
		}
	}
	for _, w := range n.NotificationItems {
		if err := r.acceptItem(ctx, n.Live, w.Item); err != nil {
			return err
		}
	}
	return nil
}

// acceptItem processes one item: at once through the Outbox when there is
// one, else step by step.
func (r *Receiver) acceptItem(ctx context.Context, live string, item upstream.NotificationRequestItem) error {
	var err error
	if r.Outbox != nil {
		err = r.acceptAtOnce(ctx, live, item)
	} else {
		err = r.acceptStepwise(ctx, live, item)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, payments.ErrNotReady):
		return apperr.Wrap(apperr.Internal, "notification not processed yet; retry", err)
	}
	return apperr.Wrap(apperr.Internal, "internal error", err)
}

// acceptStepwise stores one item (once) and processes it unless an earlier
// arrival already did, one store call after the other.
func (r *Receiver) acceptStepwise(ctx context.Context, live string, item upstream.NotificationRequestItem) error {
	ev, created, err := r.store(ctx, live, item)
	if err != nil {
		return err
	}
	log := r.Log.With("eventId", ev.ID, "eventCode", item.EventCode, "pspReference", item.PSPReference)
	if !created && ev.DeliveriesEnqueued() {
		log.InfoContext(ctx, "duplicate notification: already processed", "received", ev.Received)
		return nil
	}
	err = r.process(ctx, ev, processOpts{})
	if errors.Is(err, payments.ErrNotReady) {
		log.WarnContext(ctx, "notification not applied yet: its operation is still being recorded; the upstream retries")
	}
	return err
}

// store creates the item's event, or counts another arrival of it.
func (r *Receiver) store(ctx context.Context, live string, item upstream.NotificationRequestItem) (Event, bool, error) {
	now := r.Clock.Now()
	ev := newEvent(live, item, now)
	err := r.Events.SaveEvent(ctx, ev, 0)
	if err == nil {
		return ev, true, nil
	}
	if !errors.Is(err, storeerr.ErrConflict) {
		return Event{}, false, fmt.Errorf("store event %s: %w", ev.ID, err)
	}
	stored, err := mutateEvent(ctx, r.Events, ev.ID, func(e *Event) error {
		e.Received++
		e.UpdatedAt = now
		return nil
	})
	if err != nil {
		return Event{}, false, fmt.Errorf("store event %s again: %w", ev.ID, err)
	}
	return stored, false, nil
}
