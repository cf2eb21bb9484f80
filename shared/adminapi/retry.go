package adminapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// Retried is a delivery given an attempt now.
type Retried struct {
	DeliveryID  string `json:"deliveryId"`
	Status      string `json:"status"` // what it was: pending, failed or disabled
	NextAttempt int    `json:"nextAttempt"`
	// How says what was done: the API's retry (failed, disabled) or the
	// scheduled attempt moved to now (pending).
	How string `json:"how"`
}

// ErrNotRetryable is a delivery that was delivered already.
var ErrNotRetryable = errors.New("the delivery was delivered already")

// farFuture is later than any job's due time.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// RetryNow makes the next attempt of merchantID's delivery id now. A failed
// or disabled one is retried as POST /v1/ecom/webhook-deliveries/{id}/retry
// does (one more attempt, the schedule continues); a pending one — waiting
// for its next scheduled attempt, which the API refuses to retry — has that
// attempt moved to now on the local queue (same X-Webhook-Id, the next
// attempt number; no second chain of attempts).
func (l *Local) RetryNow(ctx context.Context, merchantID, id string) (Retried, error) {
	d, err := l.delivery(ctx, merchantID, id)
	if err != nil {
		return Retried{}, err
	}
	switch d.Status {
	case webhooks.StatusDelivered:
		return Retried{}, fmt.Errorf("delivery %s: %w", id, ErrNotRetryable)
	case webhooks.StatusFailed, webhooks.StatusDisabled:
		c, err := l.client(ctx, merchantID)
		if err != nil {
			return Retried{}, err
		}
		out, err := c.RetryWebhookDelivery(ctx, id)
		if err != nil {
			return Retried{}, err
		}
		return Retried{DeliveryID: id, Status: string(d.Status), NextAttempt: out.NextAttempt, How: "retried (POST /v1/ecom/webhook-deliveries/{id}/retry)"}, nil
	}
	if l.Jobs == nil || l.Queue == nil {
		return Retried{}, fmt.Errorf("delivery %s is pending: its next attempt is on SQS's schedule, which the local server cannot move; retry it once it has failed", id)
	}
	return l.moveNextAttempt(ctx, id)
}

// delivery returns merchantID's delivery id as stored.
func (l *Local) delivery(ctx context.Context, merchantID, id string) (webhooks.Delivery, error) {
	d, err := l.DeliveryStore.GetDelivery(ctx, id)
	if err == nil && d.MerchantID != merchantID {
		err = storeerr.ErrNotFound
	}
	if errors.Is(err, storeerr.ErrNotFound) {
		return d, &APIError{Status: http.StatusNotFound, Code: "yp_3007", Message: fmt.Sprintf("merchant %s has no webhook delivery %s", merchantID, id)}
	}
	if err != nil {
		return d, fmt.Errorf("read delivery %s: %w", id, err)
	}
	return d, nil
}

// DeliveryDetail is one of merchantID's deliveries as stored, with its
// subscription's URL, its kept attempts newest first, each with the headers
// it was sent with, and the headers of its next attempt when it has none
// (signature headers as names only: they are made at sending).
type DeliveryDetail struct {
	Delivery webhooks.Delivery
	URL      string
	Attempts []AttemptDetail
	Headers  http.Header
}

// AttemptDetail is one kept attempt and the headers it was sent with.
type AttemptDetail struct {
	webhooks.AttemptRecord
	Headers http.Header
}

// DeliveryDetail returns merchantID's delivery id.
func (l *Local) DeliveryDetail(ctx context.Context, merchantID, id string) (DeliveryDetail, error) {
	d, err := l.delivery(ctx, merchantID, id)
	if err != nil {
		return DeliveryDetail{}, err
	}
	out := DeliveryDetail{Delivery: d}
	if sub, err := l.Tenants.GetSubscription(ctx, merchantID, d.SubscriptionID); err == nil {
		out.URL = sub.URL
	}
	for _, a := range slices.Backward(d.History) {
		h := sender.Headers(webhooks.Request{ID: d.ID, Attempt: a.Number, Timestamp: a.At, Signature: a.Signature})
		out.Attempts = append(out.Attempts, AttemptDetail{AttemptRecord: a, Headers: h})
	}
	if len(out.Attempts) == 0 {
		at := d.CreatedAt
		if d.LastAttemptAt != nil {
			at = *d.LastAttemptAt
		}
		out.Headers = sender.Headers(webhooks.Request{ID: d.ID, Attempt: max(d.Attempts, 1), Timestamp: at, Signature: "(made at sending: v1,… with the subscription's secret)"})
	}
	return out, nil
}

// settleWait bounds how long moveNextAttempt waits for an attempt under
// way to be recorded (the worker reschedules its job once the attempt's
// outcome is written); settlePoll is how often it looks.
const (
	settleWait = 3 * time.Second
	settlePoll = 10 * time.Millisecond
)

// moveNextAttempt makes the queued next attempt of pending delivery id due
// now. While an attempt is under way (its job not yet rescheduled) it waits
// for the worker to reschedule it, so the move is not overwritten.
func (l *Local) moveNextAttempt(ctx context.Context, id string) (Retried, error) {
	deadline := time.Now().Add(settleWait)
	for {
		d, err := l.DeliveryStore.GetDelivery(ctx, id)
		if err != nil {
			return Retried{}, fmt.Errorf("read delivery %s: %w", id, err)
		}
		if d.Status != webhooks.StatusPending {
			return Retried{}, fmt.Errorf("delivery %s is %s now: %w", id, d.Status, ErrNotRetryable)
		}
		job, found, err := l.jobOf(ctx, id)
		if err != nil {
			return Retried{}, err
		}
		now := l.Clock.Now()
		switch {
		case found && job.Job.Attempt > d.Attempts: // waiting for its next attempt
			job.Due = now
			if err := l.Jobs.PutJob(ctx, job); err != nil {
				return Retried{}, fmt.Errorf("move the next attempt of %s: %w", id, err)
			}
			l.Queue.Wake()
			return Retried{DeliveryID: id, Status: string(d.Status), NextAttempt: job.Job.Attempt, How: "its scheduled attempt moved to now"}, nil
		case !found && d.LastAttemptAt == nil || !found && time.Now().After(deadline):
			// Pending without a queued job (an interrupted enqueue): queue one.
			next := d.Attempts + 1
			j, err := localqueue.NewJob(queue.Job{DeliveryID: id, Attempt: next}, now, now)
			if err == nil {
				err = l.Jobs.PutJob(ctx, j)
			}
			if err != nil {
				return Retried{}, fmt.Errorf("queue an attempt of %s: %w", id, err)
			}
			l.Queue.Wake()
			return Retried{DeliveryID: id, Status: string(d.Status), NextAttempt: next, How: "an attempt queued now"}, nil
		case time.Now().After(deadline):
			return Retried{}, fmt.Errorf("delivery %s: attempt %d is under way; its outcome decides the next (look again in a moment)", id, d.Attempts)
		}
		select { // an attempt under way: its job is rescheduled once its outcome is recorded
		case <-ctx.Done():
			return Retried{}, ctx.Err()
		case <-time.After(settlePoll):
		}
	}
}

// jobOf returns the live job of delivery id in the local queue.
func (l *Local) jobOf(ctx context.Context, id string) (localqueue.StoredJob, bool, error) {
	jobs, err := l.Jobs.DueJobs(ctx, farFuture, 0)
	if err != nil {
		return localqueue.StoredJob{}, false, fmt.Errorf("read the local queue: %w", err)
	}
	for _, j := range jobs {
		if j.Job.DeliveryID == id {
			return j, true, nil
		}
	}
	return localqueue.StoredJob{}, false, nil
}
