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
	"github.com/yp/paysvc/shared/webhooks"
)

// maxItems bounds the items of one notification (the upstream sends one).
const maxItems = 100

// Receiver processes the upstream's notifications, on every store the
// same way (process.go). Every field but Grace and Live is required. It is
// safe for concurrent use.
type Receiver struct {
	Events     EventStore
	Payments   payments.Store
	Tenants    tenant.Store
	Deliveries webhooks.DeliveryStore
	Queue      queue.Queue
	Clock      clock.Clock
	Log        *slog.Logger
	// Live is the deployment's environment: webhooks carry "live": true
	// only in production (docs/security.md).
	Live bool
	// Grace is payments.NotificationOptions.Grace (0: the default).
	Grace time.Duration
}

// Accept processes the items of one notification, whose signatures the
// upstream adapter verified (live: the notification's live field as
// sent). It returns nil only when every item is stored, applied to its
// payment and has its deliveries enqueued (or is kept as unroutable) — the
// upstream is then answered "[accepted]"; any other error means the
// upstream must retry (it is answered 500).
func (r *Receiver) Accept(ctx context.Context, live string, items []payments.Notification) error {
	if len(items) == 0 {
		return apperr.New(apperr.Invalid, "notification without notificationItems")
	}
	if len(items) > maxItems {
		return apperr.Newf(apperr.Invalid, "notification with more than %d items", maxItems)
	}
	for _, it := range items {
		if it.EventCode == "" || it.PSPReference == "" {
			return apperr.New(apperr.Invalid, "notification item without eventCode or pspReference")
		}
	}
	for _, it := range items {
		err := r.acceptItem(ctx, live, it)
		switch {
		case err == nil:
		case errors.Is(err, payments.ErrNotReady):
			return apperr.Wrap(apperr.Internal, "notification not processed yet; retry", err)
		default:
			return apperr.Wrap(apperr.Internal, "internal error", err)
		}
	}
	return nil
}

// acceptItem stores one arrival of item and processes it unless an
// earlier arrival did. The item's event, its payment record and the
// merchant its routing metadata names are read at once; a concurrent
// change of the event or the record (the commit's conditions) redoes the
// item.
func (r *Receiver) acceptItem(ctx context.Context, live string, item payments.Notification) error {
	fresh := newEvent(live, item, r.Clock.Now())
	for range maxMutateAttempts {
		var stored Event
		var storedErr error
		in := r.read(ctx, fresh.PaymentPSP, item.AdditionalData[keyMetaMerchant],
			func() { stored, storedErr = r.Events.GetEvent(ctx, fresh.ID) })
		ev, prev := fresh, int64(0)
		switch {
		case storedErr == nil:
			ev, prev = stored, stored.Version
			ev.Received++
			ev.UpdatedAt = r.Clock.Now()
		case !errors.Is(storedErr, storeerr.ErrNotFound):
			return fmt.Errorf("read event %s: %w", fresh.ID, storedErr)
		}
		if prev != 0 && stored.DeliveriesEnqueued() {
			ev.Version = prev + 1
			err := r.Events.SaveEvent(ctx, ev, prev)
			if errors.Is(err, storeerr.ErrConflict) {
				continue
			}
			if err != nil {
				return fmt.Errorf("store event %s again: %w", ev.ID, err)
			}
			r.Log.InfoContext(ctx, "duplicate notification: already processed",
				"eventId", ev.ID, "eventCode", item.EventCode, "pspReference", item.PSPReference, "received", ev.Received)
			return nil
		}
		err := r.process(ctx, ev, prev, in, processOpts{})
		if !errors.Is(err, storeerr.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("store event %s: too many concurrent updates: %w", fresh.ID, storeerr.ErrConflict)
}
