package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// storeRetryDelay is the wait before a job whose records could not be read
// is tried again (no attempt was made).
const storeRetryDelay = 30 * time.Second

// Poster makes one delivery attempt (Sender in production).
type Poster interface {
	Send(ctx context.Context, req Request) Result
}

// Metrics counts delivery attempts (CloudWatch EMF in Lambda).
type Metrics interface {
	// WebhookDelivery records one attempt (observe.Metrics in Lambda).
	WebhookDelivery(Attempt)
}

// Attempt is one attempt to deliver a webhook to a merchant endpoint,
// as reported by the dispatcher. None of its fields may hold a secret or the
// endpoint URL (which can embed credentials).
type Attempt struct {
	MerchantID     string // property, not a dimension (unbounded)
	SubscriptionID string // property
	DeliveryID     string // property
	EventCode      string // property, e.g. AUTHORISATION
	// Attempt is the 1-based number of this attempt (1 = first delivery).
	Attempt int
	// StatusCode is the receiver's HTTP status; 0 when no response came.
	StatusCode int
	// Success is a 2xx answer within the delivery timeout (15 s).
	Success bool
	// Exhausted is a failed attempt after which no further attempt is
	// scheduled (the last of the schedule: the message goes to the DLQ).
	Exhausted bool
	// Latency is from sending the request to the answer (or the failure).
	Latency time.Duration
}

// Dispatcher makes delivery attempts: Process is the queue.Handler run by
// the SQS Lambda handler and by the local queue's worker. It is safe for
// concurrent use; deliveries of one batch are processed concurrently by the
// queue adapters.
type Dispatcher struct {
	Deliveries DeliveryStore
	Tenants    tenant.Store
	Sender     Poster
	Clock      clock.Clock
	// Rand returns values in [0, 1) for the retry jitter.
	Rand    func() float64
	Log     *slog.Logger
	Metrics Metrics // optional
}

var _ queue.Handler = (*Dispatcher)(nil).Process

// Process makes attempt number attempt of the job's delivery and returns
// what the queue should do next: Done once delivered (or when there is
// nothing left to do), Retry after the scheduled wait, DeadLetter after the
// last attempt failed (the delivery is then marked failed). A 410 Gone
// disables the subscription and ends the delivery as disabled.
func (d *Dispatcher) Process(ctx context.Context, job queue.Job, attempt int) queue.Outcome {
	log := d.Log.With("deliveryId", job.DeliveryID, "queuedAttempt", attempt)
	// A job naming the subscription has it read alongside the delivery.
	var (
		sub     tenant.Subscription
		subErr  error
		subRead sync.WaitGroup
	)
	named := job.MerchantID != "" && job.SubscriptionID != ""
	if named {
		subRead.Go(func() { sub, subErr = d.Tenants.GetSubscription(ctx, job.MerchantID, job.SubscriptionID) })
	}
	dl, err := d.Deliveries.GetDelivery(ctx, job.DeliveryID)
	subRead.Wait()
	if errors.Is(err, storeerr.ErrNotFound) {
		log.WarnContext(ctx, "webhook job for an unknown delivery dropped")
		return queue.Outcome{Kind: queue.Done}
	}
	if err != nil {
		log.ErrorContext(ctx, "reading delivery failed; job retried", "err", err.Error())
		return queue.Outcome{Kind: queue.Retry, After: storeRetryDelay}
	}
	log = log.With("merchant", dl.MerchantID, "subscriptionId", dl.SubscriptionID,
		"eventCode", dl.EventCode, "pspReference", dl.PSPReference)
	if dl.Status != StatusPending {
		log.InfoContext(ctx, "webhook job for an ended delivery dropped", "status", string(dl.Status))
		return queue.Outcome{Kind: queue.Done}
	}
	if superseded(job, dl) {
		log.InfoContext(ctx, "webhook job superseded by a later attempt dropped",
			"notBefore", job.NotBefore, "nextAttemptAt", *dl.NextAttemptAt)
		return queue.Outcome{Kind: queue.Done}
	}
	if !named || job.MerchantID != dl.MerchantID || job.SubscriptionID != dl.SubscriptionID {
		sub, subErr = d.Tenants.GetSubscription(ctx, dl.MerchantID, dl.SubscriptionID)
	}
	if err = subErr; errors.Is(err, storeerr.ErrNotFound) {
		d.end(ctx, log, dl, "subscription deleted")
		return queue.Outcome{Kind: queue.Done}
	}
	if err != nil {
		log.ErrorContext(ctx, "reading subscription failed; job retried", "err", err.Error())
		return queue.Outcome{Kind: queue.Retry, After: storeRetryDelay}
	}
	if !sub.Enabled {
		d.end(ctx, log, dl, "subscription disabled: "+sub.DisabledReason)
		return queue.Outcome{Kind: queue.Done}
	}

	now := d.Clock.Now()
	dl, err = d.begin(ctx, dl, attempt, now)
	if err != nil {
		log.ErrorContext(ctx, "recording the webhook attempt failed; job retried", "err", err.Error())
		return queue.Outcome{Kind: queue.Retry, After: storeRetryDelay}
	}
	if dl.Status != StatusPending {
		return queue.Outcome{Kind: queue.Done} // ended meanwhile (a concurrent copy of the job)
	}
	attempt = dl.Attempts
	log = log.With("attempt", attempt)
	res, sig := d.attempt(ctx, sub, dl, attempt, now)
	out := d.decide(res, attempt)
	if d.Metrics != nil {
		d.Metrics.WebhookDelivery(Attempt{
			MerchantID: dl.MerchantID, SubscriptionID: dl.SubscriptionID, DeliveryID: dl.ID, EventCode: dl.EventCode,
			Attempt: attempt, StatusCode: res.StatusCode, Success: res.Delivered(),
			Exhausted: out.Kind == queue.DeadLetter, Latency: res.Duration,
		})
	}
	d.record(ctx, log, dl, recordOf(attempt, now, sig, res), res, out, now)
	if res.Gone() {
		d.disableSubscription(ctx, log, sub, now)
	}
	attrs := []any{"status", res.StatusCode, "latencyMs", float64(res.Duration.Microseconds()) / 1000, "outcome", out.Kind.String()}
	switch {
	case res.Delivered():
		log.InfoContext(ctx, "webhook delivered", attrs...)
	case out.Kind == queue.DeadLetter:
		log.ErrorContext(ctx, "webhook delivery failed after the last attempt", append(attrs, "err", res.Describe())...)
	default:
		log.WarnContext(ctx, "webhook attempt failed", append(attrs, "err", res.Describe(), "retryInMs", out.After.Milliseconds())...)
	}
	return out
}

// supersededSlack absorbs the clocks and the stored times' precision when
// a job's due time is compared with its delivery's next attempt.
const supersededSlack = time.Second

// superseded reports whether job is a stale copy: a job the queue sent
// again for a retry (it carries its due time, NotBefore, and no handler has
// seen this copy before) whose delivery has meanwhile been scheduled
// later than that due time. Only an attempt made after the one that
// scheduled this copy moves NextAttemptAt past it — another copy of the
// job made it (a batch re-received after its invocation failed while its
// retries were already sent) and carries the delivery on, so this copy
// would only attempt twice. The record of the attempt that scheduled the
// copy sets NextAttemptAt to at most the copy's due time (the copy is
// sent after the attempt, delayed by the same wait).
func superseded(job queue.Job, dl Delivery) bool {
	return !job.NotBefore.IsZero() && dl.NextAttemptAt != nil && dl.NextAttemptAt.After(job.NotBefore.Add(supersededSlack))
}

// begin counts the attempt on the delivery before anything is sent, so the
// count includes every attempt that may have reached the receiver: after a
// crash between sending and recording, the queue offers the job again with
// its old number, and the attempt sent is the one after those counted. It
// starts from dl as read and returns the delivery as saved: its Attempts
// is the attempt's number (the X-Webhook-Delivery-Attempt header); a
// status other than pending means it ended meanwhile.
func (d *Dispatcher) begin(ctx context.Context, dl Delivery, queued int, now time.Time) (Delivery, error) {
	return mutateFrom(ctx, d.Deliveries, dl, func(dl *Delivery) error {
		if dl.Status != StatusPending {
			return errSkip
		}
		dl.Attempts = max(queued, dl.Attempts+1)
		dl.LastAttemptAt, dl.UpdatedAt = &now, now
		return nil
	})
}

// attempt signs and sends one attempt, re-signed with the attempt's time,
// and returns its result and signature.
func (d *Dispatcher) attempt(ctx context.Context, sub tenant.Subscription, dl Delivery, attempt int, now time.Time) (Result, string) {
	sig, err := signFor(sub, dl.ID, now, dl.Payload)
	if err != nil {
		return Result{Err: fmt.Errorf("cannot sign: %w", err)}, ""
	}
	return d.Sender.Send(ctx, Request{URL: sub.URL, ID: dl.ID, Attempt: attempt, Timestamp: now, Signature: sig, Body: dl.Payload}), sig
}

// decide maps an attempt's result to the queue outcome.
func (d *Dispatcher) decide(res Result, attempt int) queue.Outcome {
	switch {
	case res.Delivered(), res.Gone():
		return queue.Outcome{Kind: queue.Done}
	case res.Refused:
		// The target breaks the SSRF rules (checked again at every attempt
		// and when dialling): no later attempt would pass, so the delivery
		// fails now with the reason, instead of ten attempts over two days.
		// Once the subscription is fixed, `delivery redrive` sends it again.
		return queue.Outcome{Kind: queue.Done}
	case attempt >= MaxAttempts:
		return queue.Outcome{Kind: queue.DeadLetter}
	}
	rnd := d.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	return queue.Outcome{Kind: queue.Retry, After: RetryDelay(attempt+1, rnd), Next: attempt + 1}
}

// record writes the attempt's result to the delivery, its history
// included (the same write). A delivered record is never moved back (a
// concurrent duplicate attempt may have failed).
func (d *Dispatcher) record(ctx context.Context, log *slog.Logger, dl Delivery, rec AttemptRecord, res Result, out queue.Outcome, now time.Time) {
	_, err := mutateFrom(ctx, d.Deliveries, dl, func(dl *Delivery) error {
		dl.History = appendHistory(dl.History, rec)
		dl.LastAttemptAt = &now // counted by begin
		dl.LastStatusCode = res.StatusCode
		dl.LastError = res.Describe()
		dl.UpdatedAt = now
		dl.NextAttemptAt = nil
		if dl.Status == StatusDelivered {
			return nil
		}
		switch {
		case res.Delivered():
			dl.Status, dl.DeliveredAt = StatusDelivered, &now
		case res.Gone():
			dl.Status = StatusDisabled
			dl.LastError = "HTTP 410 Gone: subscription disabled"
		case out.Kind == queue.DeadLetter, res.Refused:
			dl.Status = StatusFailed
		default:
			next := now.Add(out.After)
			dl.NextAttemptAt = &next
		}
		return nil
	})
	if err != nil {
		log.ErrorContext(ctx, "recording webhook attempt failed", "err", err.Error())
	}
}

// end marks a pending delivery disabled with reason, making no attempt.
func (d *Dispatcher) end(ctx context.Context, log *slog.Logger, dl Delivery, reason string) {
	now := d.Clock.Now()
	_, err := mutateFrom(ctx, d.Deliveries, dl, func(dl *Delivery) error {
		if dl.Status != StatusPending {
			return errSkip
		}
		dl.Status, dl.LastError, dl.UpdatedAt, dl.NextAttemptAt = StatusDisabled, reason, now, nil
		return nil
	})
	if err != nil {
		log.ErrorContext(ctx, "marking delivery disabled failed", "err", err.Error())
		return
	}
	log.WarnContext(ctx, "webhook not delivered", "reason", reason)
}

// disableSubscription turns off a subscription whose receiver answered 410.
func (d *Dispatcher) disableSubscription(ctx context.Context, log *slog.Logger, sub tenant.Subscription, now time.Time) {
	reason := "receiver answered 410 Gone at " + now.UTC().Format(time.RFC3339)
	cur, err := d.Tenants.GetSubscription(ctx, sub.MerchantID, sub.ID)
	if err == nil {
		cur.SetEnabled(false, reason, d.Clock.Now())
		err = d.Tenants.PutSubscription(ctx, cur)
	}
	if err != nil {
		log.ErrorContext(ctx, "disabling subscription after 410 Gone failed", "err", err.Error())
		return
	}
	log.WarnContext(ctx, "subscription disabled: receiver answered 410 Gone")
}
