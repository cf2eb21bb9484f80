package webhooks

import (
	"context"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/storeerr"
)

// Admin holds the operator functions behind the admin CLI's delivery
// commands: listing a merchant's deliveries, redriving failed ones and
// redriving the dead-letter queue.
type Admin struct {
	Deliveries  DeliveryStore
	Queue       queue.Queue
	DeadLetters queue.DeadLetters
	Clock       clock.Clock
}

// ErrNotRedrivable is returned when a delivery asked for by id cannot be
// redriven (it is pending with a job queued, or delivered).
var ErrNotRedrivable = errors.New("webhooks: delivery is not failed")

// ListDeliveries returns merchantID's deliveries in status (every status
// when status is ""), newest first, at most limit (limit <= 0: all). Each
// carries its attempts, last HTTP status and last error.
func (a *Admin) ListDeliveries(ctx context.Context, merchantID string, status Status, limit int) ([]Delivery, error) {
	if status != "" && !status.Valid() {
		return nil, fmt.Errorf("webhooks: unknown delivery status %q (known: %v)", status, Statuses)
	}
	ds, err := a.Deliveries.ListDeliveries(ctx, merchantID, status, limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", merchantID, err)
	}
	return ds, nil
}

// RedriveOptions selects what RedriveDeliveries redrives.
type RedriveOptions struct {
	// DeliveryID redrives that one delivery; "" redrives every failed
	// delivery of the merchant.
	DeliveryID string
	// IncludeDisabled also redrives deliveries that ended disabled (their
	// subscription was disabled or answered 410 Gone); enable the
	// subscription first, or they end disabled again.
	IncludeDisabled bool
}

// RedriveDeliveries gives failed deliveries of merchantID a fresh set of
// attempts: each is reset to pending with no attempts (same X-Webhook-Id)
// and a job is enqueued for attempt 1 now. It returns the ids redriven. A
// delivery asked for by id that is unknown or of another merchant gives
// storeerr.ErrNotFound; one that is pending or delivered ErrNotRedrivable.
// Its job may still be in the dead-letter queue; redriving that later
// finds the delivery no longer failed and drops it.
func (a *Admin) RedriveDeliveries(ctx context.Context, merchantID string, opts RedriveOptions) ([]string, error) {
	var candidates []Delivery
	if opts.DeliveryID != "" {
		d, err := a.Deliveries.GetDelivery(ctx, opts.DeliveryID)
		if err == nil && d.MerchantID != merchantID {
			err = storeerr.ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("delivery %s of %s: %w", opts.DeliveryID, merchantID, err)
		}
		if !redrivable(d, opts.IncludeDisabled) {
			return nil, fmt.Errorf("delivery %s is %s: %w", d.ID, d.Status, ErrNotRedrivable)
		}
		candidates = []Delivery{d}
	} else {
		for _, st := range []Status{StatusFailed, StatusDisabled} {
			if st == StatusDisabled && !opts.IncludeDisabled {
				continue
			}
			ds, err := a.ListDeliveries(ctx, merchantID, st, 0)
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, ds...)
		}
	}
	var done []string
	for _, d := range candidates {
		ok, err := a.redrive(ctx, d.ID, opts.IncludeDisabled)
		if err != nil {
			return done, err
		}
		if ok {
			done = append(done, d.ID)
		}
	}
	return done, nil
}

// redrivable reports whether d may be given new attempts: failed (or
// disabled, when asked), or pending without a queued job.
func redrivable(d Delivery, includeDisabled bool) bool {
	return d.Status == StatusFailed || (includeDisabled && d.Status == StatusDisabled) ||
		(d.Status == StatusPending && !d.Enqueued)
}

// redrive resets one delivery and enqueues its first attempt.
func (a *Admin) redrive(ctx context.Context, id string, includeDisabled bool) (bool, error) {
	prev, ok, err := a.reset(ctx, id, includeDisabled)
	if err != nil || !ok {
		return false, err
	}
	if err := a.Queue.Enqueue(ctx, queue.Job{DeliveryID: id, Attempt: 1}, 0); err != nil {
		a.restore(ctx, id, prev)
		return false, fmt.Errorf("enqueue delivery %s: %w", id, err)
	}
	if _, err := MutateDelivery(ctx, a.Deliveries, id, markEnqueued); err != nil {
		return true, fmt.Errorf("mark delivery %s enqueued: %w", id, err)
	}
	return true, nil
}

// markEnqueued flags a pending delivery as having its job queued.
func markEnqueued(d *Delivery) error {
	if d.Enqueued || d.Status != StatusPending {
		return errSkip
	}
	d.Enqueued = true
	return nil
}

// reset moves a redrivable delivery back to pending with no attempts and
// returns its status before.
func (a *Admin) reset(ctx context.Context, id string, includeDisabled bool) (Status, bool, error) {
	now := a.Clock.Now()
	var prev Status
	ok := false
	_, err := MutateDelivery(ctx, a.Deliveries, id, func(d *Delivery) error {
		prev, ok = d.Status, false
		if !redrivable(*d, includeDisabled) {
			return errSkip
		}
		ok = true
		d.Status, d.Attempts, d.Enqueued = StatusPending, 0, false
		d.NextAttemptAt, d.UpdatedAt = &now, now
		d.Redrives++
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("reset delivery %s: %w", id, err)
	}
	return prev, ok, nil
}

// restore puts back the status of a delivery whose job could not be
// enqueued, so a later redrive finds it again (a pending delivery without a
// job is redrivable too; this is only for the operator's view).
func (a *Admin) restore(ctx context.Context, id string, prev Status) {
	if prev == StatusPending {
		return
	}
	_, _ = MutateDelivery(ctx, a.Deliveries, id, func(d *Delivery) error {
		if d.Status != StatusPending || d.Enqueued {
			return errSkip
		}
		d.Status = prev
		return nil
	})
}

// DLQRedrive is what RedriveDeadLetterQueue did.
type DLQRedrive struct {
	Redriven []string // deliveries given new attempts
	Dropped  int      // dead letters whose delivery needs nothing (already redriven, delivered, unknown)
	Kept     int      // dead letters left in place (unreadable body, or a failure)
}

// dlqBatch is how many dead letters are received at a time.
const dlqBatch = 10

// RedriveDeadLetterQueue empties the dead-letter queue: each dead letter
// whose delivery is still failed is redriven (reset to pending, job
// enqueued for attempt 1 now) and removed; dead letters whose delivery
// needs nothing more are removed; unreadable ones are kept. It stops at the
// first store or queue failure, returning what it did so far.
func (a *Admin) RedriveDeadLetterQueue(ctx context.Context) (DLQRedrive, error) {
	var out DLQRedrive
	seen := map[string]bool{}
	for {
		msgs, err := a.DeadLetters.ReceiveDeadLetters(ctx, dlqBatch)
		if err != nil {
			return out, fmt.Errorf("receive dead letters: %w", err)
		}
		fresh := 0
		for _, m := range msgs {
			if seen[m.ID] {
				continue
			}
			seen[m.ID] = true
			fresh++
			if err := a.redriveDeadLetter(ctx, m, &out); err != nil {
				return out, err
			}
		}
		if fresh == 0 {
			return out, nil
		}
	}
}

// redriveDeadLetter handles one dead letter.
func (a *Admin) redriveDeadLetter(ctx context.Context, m queue.DeadLetterMsg, out *DLQRedrive) error {
	if m.Err != nil {
		out.Kept++
		return nil
	}
	d, err := a.Deliveries.GetDelivery(ctx, m.Job.DeliveryID)
	switch {
	case err != nil && !errors.Is(err, storeerr.ErrNotFound):
		return fmt.Errorf("delivery %s: %w", m.Job.DeliveryID, err)
	case d.Status == StatusFailed || (d.Status == StatusPending && !d.Enqueued):
		ok, err := a.redrive(ctx, d.ID, false)
		if err != nil {
			return err
		}
		if ok {
			out.Redriven = append(out.Redriven, d.ID)
		}
	default:
		out.Dropped++
	}
	if err := a.DeadLetters.DeleteDeadLetter(ctx, m.Handle); err != nil {
		return fmt.Errorf("delete dead letter of %s: %w", m.Job.DeliveryID, err)
	}
	return nil
}
