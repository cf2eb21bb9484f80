package sqsqueue

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
)

// Backoff is what the Lambda handler needs of the queue (Queue in
// production): sending a job again delayed (Enqueue), hiding a received
// message when that fails, and the dead-letter queue.
type Backoff interface {
	queue.Queue
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
	DeadLetter(ctx context.Context, job queue.Job) error
}

var _ Backoff = (*Queue)(nil)

// attrReceiveCount is the SQS event attribute counting receives.
const attrReceiveCount = "ApproximateReceiveCount"

// dueSlack is how early a message may be received and still count as due:
// SQS makes a delayed message visible no earlier than its whole seconds of
// DelaySeconds, but the sender's and the receiver's clocks may differ a
// little, and a hop of a second for that would cost a message.
const dueSlack = time.Second

// HopDelay is the DelaySeconds of a message due at due, sent at now: the
// time left, at most MaxDelay (0 when due).
func HopDelay(now, due time.Time) time.Duration {
	return min(max(due.Sub(now), 0), MaxDelay)
}

// isDue reports whether a message due at due runs when received at now.
func isDue(now, due time.Time) bool { return due.Sub(now) <= dueSlack }

// Messages is how many messages carry a wait of d between two attempts:
// the one sent after the failed attempt and a hop for every further
// MaxDelay (1 up to 15 min, 8 for 2 h, 48 for 12 h).
func Messages(d time.Duration) int {
	var start time.Time
	due := start.Add(d)
	now, n := start.Add(HopDelay(start, due)), 1
	for !isDue(now, due) {
		now, n = now.Add(HopDelay(now, due)), n+1
	}
	return n
}

// LambdaHandler returns the handler of an SQS-triggered function with
// ReportBatchItemFailures: every message of the batch is processed
// concurrently (one slow receiver does not hold the others back):
//
//   - a message whose job is not due yet (Job.NotBefore after clk's now)
//     is a hop of a wait longer than SQS delays a message: the job is sent
//     again unchanged, delayed by the time left (at most MaxDelay), and
//     the message is not reported, so Lambda deletes it; no attempt, no
//     store access;
//   - otherwise h makes attempt Job.Attempt + receives - 1, and
//   - Done: the message is not reported, so Lambda deletes it;
//   - Retry: the job is sent again as a new message for the next attempt
//     (Outcome.Next, else the same number when no attempt was made),
//     due after Outcome.After and delayed by as much of it as SQS allows;
//     the received message is not reported, so Lambda deletes it. Only if
//     that send fails is the message kept instead: its visibility is set to
//     the wait and it is reported as a batch item failure, so SQS delivers
//     it again then (its next receive makes the next attempt);
//   - DeadLetter: the job is sent to the dead-letter queue and the message
//     deleted (reported only if that send fails; the redrive policy then
//     moves it on its next receive).
//
// Nothing waits in flight: a message is received (in flight) only while
// its batch is processed. A body that is not a job is reported as failed
// until the redrive policy moves it to the dead-letter queue.
func LambdaHandler(q Backoff, h queue.Handler, clk clock.Clock, log *slog.Logger) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return Batch(ctx, ev, func(ctx context.Context, rec events.SQSMessage) bool {
			return handleRecord(ctx, q, h, clk, log, rec)
		}), nil
	}
}

// Batch runs done on every message of an SQS batch concurrently (one slow
// message does not hold the others back) and returns the partial batch
// response of ReportBatchItemFailures: the messages done reported false
// for, which SQS delivers again; the others Lambda deletes.
func Batch(ctx context.Context, ev events.SQSEvent, done func(context.Context, events.SQSMessage) bool) events.SQSEventResponse {
	failed := make([]bool, len(ev.Records))
	var wg sync.WaitGroup
	for i, rec := range ev.Records {
		wg.Go(func() { failed[i] = !done(ctx, rec) })
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	return resp
}

// handleRecord processes one message and reports whether it may be deleted.
func handleRecord(ctx context.Context, q Backoff, h queue.Handler, clk clock.Clock, log *slog.Logger, rec events.SQSMessage) bool {
	job, err := queue.Decode(rec.Body)
	if err != nil {
		log.ErrorContext(ctx, "deliveries queue: message is not a job", "messageId", rec.MessageId, "err", err.Error())
		return false
	}
	if now := clk.Now(); !job.NotBefore.IsZero() && !isDue(now, job.NotBefore) {
		return hop(ctx, q, log, rec, job, now)
	}
	receives, err := strconv.Atoi(rec.Attributes[attrReceiveCount])
	if err != nil || receives < 1 {
		receives = 1
	}
	attempt := job.Attempt + receives - 1
	handed := job
	if receives > 1 {
		handed.NotBefore = time.Time{} // not a first receive (see queue.Job.NotBefore)
	}
	out := h(ctx, handed, attempt)
	switch out.Kind {
	case queue.Retry:
		return retry(ctx, q, clk, log, rec, job, attempt, out)
	case queue.DeadLetter:
		if err := q.DeadLetter(ctx, job); err != nil {
			log.ErrorContext(ctx, "deliveries queue: sending to the dead-letter queue failed; the redrive policy moves it",
				"deliveryId", job.DeliveryID, "messageId", rec.MessageId, "err", err.Error())
			return false
		}
		return true
	}
	return true
}

// retry sends the job again for its next attempt, due out.After from now,
// and reports whether the received message may be deleted: not when the
// send failed, in which case the message itself waits out the backoff
// hidden (the next receive of it makes attempt+1).
func retry(ctx context.Context, q Backoff, clk clock.Clock, log *slog.Logger, rec events.SQSMessage, job queue.Job, attempt int, out queue.Outcome) bool {
	now := clk.Now()
	next := job
	next.Attempt, next.NotBefore = attempt, now.Add(max(out.After, 0))
	if out.Next > 0 {
		next.Attempt = out.Next
	}
	err := q.Enqueue(ctx, next, HopDelay(now, next.NotBefore))
	if err == nil {
		return true
	}
	log.ErrorContext(ctx, "deliveries queue: sending the retry failed; the message waits out the backoff hidden",
		"deliveryId", job.DeliveryID, "messageId", rec.MessageId, "err", err.Error())
	hide(ctx, q, log, rec, job, out.After)
	return false
}

// hop sends a job that is not due yet again, unchanged, delayed by the
// time left (at most MaxDelay), and reports whether the received message
// may be deleted (not when the send failed: the message is then hidden
// for the time left).
func hop(ctx context.Context, q Backoff, log *slog.Logger, rec events.SQSMessage, job queue.Job, now time.Time) bool {
	err := q.Enqueue(ctx, job, HopDelay(now, job.NotBefore))
	if err == nil {
		return true
	}
	log.ErrorContext(ctx, "deliveries queue: sending a waiting job again failed; the message waits hidden",
		"deliveryId", job.DeliveryID, "messageId", rec.MessageId, "err", err.Error())
	hide(ctx, q, log, rec, job, job.NotBefore.Sub(now))
	return false
}

// hide sets a received message's visibility to d (the fallback when its
// job could not be sent again); if that fails too, the queue's visibility
// timeout applies.
func hide(ctx context.Context, q Backoff, log *slog.Logger, rec events.SQSMessage, job queue.Job, d time.Duration) {
	if err := q.ChangeVisibility(ctx, rec.ReceiptHandle, d); err != nil {
		log.ErrorContext(ctx, "deliveries queue: backoff not set; the queue's visibility timeout applies",
			"deliveryId", job.DeliveryID, "messageId", rec.MessageId, "err", err.Error())
	}
}

// Poll receives from the deliveries queue until ctx ends and handles each
// batch as the Lambda event source mapping would (same handler, same
// retries), deleting the messages the handler does not report.
// It serves local runs against an SQS-compatible endpoint (moto), where no
// Lambda trigger exists.
func (q *Queue) Poll(ctx context.Context, h queue.Handler, clk clock.Clock, log *slog.Logger) {
	handle := LambdaHandler(q, h, clk, log)
	for ctx.Err() == nil {
		if _, err := q.RunBatch(ctx, handle, 10*time.Second, log); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "queue: receive failed", "queue", q.url, "err", err.Error())
			sleep(ctx, time.Second)
		}
	}
}

// RunBatch is one turn of Poll: it receives up to 10 visible
// messages (waiting at most wait for the first), hands them to handle as
// the Lambda event source mapping would, and deletes those handle does not
// report as failed. It returns how many messages it received; only the
// receive's failure is returned (a failed delete is logged: the message
// comes back after its visibility timeout).
func (q *Queue) RunBatch(ctx context.Context, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error),
	wait time.Duration, log *slog.Logger) (int, error) {
	ev, err := q.ReceiveEvent(ctx, 10, wait)
	if err != nil || len(ev.Records) == 0 {
		return 0, err
	}
	resp, _ := handle(context.WithoutCancel(ctx), ev)
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, m := range ev.Records {
		if failed[m.MessageId] {
			continue
		}
		if err := q.Delete(context.WithoutCancel(ctx), m.ReceiptHandle); err != nil {
			log.ErrorContext(ctx, "queue: delete failed", "queue", q.url, "messageId", m.MessageId, "err", err.Error())
		}
	}
	return len(ev.Records), nil
}

// ReceiveEvent receives up to limit messages of the queue, whatever their
// body, as the Lambda event source passes them to a function (RunBatch,
// and tests that play the event source).
func (q *Queue) ReceiveEvent(ctx context.Context, limit int, wait time.Duration) (events.SQSEvent, error) {
	msgs, err := q.Receive(ctx, limit, wait)
	if err != nil {
		return events.SQSEvent{}, err
	}
	out := make([]events.SQSMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, events.SQSMessage{
			MessageId: m.ID, ReceiptHandle: m.ReceiptHandle, Body: m.Body,
			Attributes: map[string]string{attrReceiveCount: strconv.Itoa(m.ReceiveCount)},
		})
	}
	return events.SQSEvent{Records: out}, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
