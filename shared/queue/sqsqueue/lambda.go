package sqsqueue

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/queue"
)

// Backoff is what the Lambda handler needs of the queue (Queue in
// production).
type Backoff interface {
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
	DeadLetter(ctx context.Context, job queue.Job) error
}

var _ Backoff = (*Queue)(nil)

// attrReceiveCount is the SQS event attribute counting receives.
const attrReceiveCount = "ApproximateReceiveCount"

// LambdaHandler returns the handler of an SQS-triggered function with
// ReportBatchItemFailures: every message of the batch is processed
// concurrently by h (one slow receiver does not hold the others back) with
// attempt = Job.Attempt + receives - 1, then
//
//   - Done: the message is not reported, so Lambda deletes it;
//   - Retry: its visibility is set to the wait before the next attempt and
//     it is reported as a batch item failure, so SQS delivers it again then;
//   - DeadLetter: the job is sent to the dead-letter queue and the message
//     deleted (reported only if that send fails; the redrive policy then
//     moves it on its next receive).
//
// A body that is not a job is reported as failed until the redrive policy
// moves it to the dead-letter queue.
func LambdaHandler(q Backoff, h queue.Handler, log *slog.Logger) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return Batch(ctx, ev, func(ctx context.Context, rec events.SQSMessage) bool {
			return handleRecord(ctx, q, h, log, rec)
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
func handleRecord(ctx context.Context, q Backoff, h queue.Handler, log *slog.Logger, rec events.SQSMessage) bool {
	job, err := queue.Decode(rec.Body)
	if err != nil {
		log.ErrorContext(ctx, "deliveries queue: message is not a job", "messageId", rec.MessageId, "err", err.Error())
		return false
	}
	receives, err := strconv.Atoi(rec.Attributes[attrReceiveCount])
	if err != nil || receives < 1 {
		receives = 1
	}
	attempt := job.Attempt + receives - 1
	out := h(ctx, job, attempt)
	switch out.Kind {
	case queue.Retry:
		if err := q.ChangeVisibility(ctx, rec.ReceiptHandle, out.After); err != nil {
			log.ErrorContext(ctx, "deliveries queue: backoff not set; the queue's visibility timeout applies",
				"deliveryId", job.DeliveryID, "messageId", rec.MessageId, "err", err.Error())
		}
		return false
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

// Poll receives from the deliveries queue until ctx ends and handles each
// batch as the Lambda event source mapping would (same handler, same
// visibility backoff), deleting the messages the handler does not report.
// It serves local runs against an SQS-compatible endpoint (moto), where no
// Lambda trigger exists.
func (q *Queue) Poll(ctx context.Context, h queue.Handler, log *slog.Logger) {
	q.PollLambda(ctx, LambdaHandler(q, h, log), log)
}

// PollLambda is Poll for any SQS-triggered handler with partial batch
// failures (another queue's consumer, such as the record updates').
func (q *Queue) PollLambda(ctx context.Context, handle func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), log *slog.Logger) {
	for ctx.Err() == nil {
		if _, err := q.RunBatch(ctx, handle, 10*time.Second, log); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "queue: receive failed", "queue", q.url, "err", err.Error())
			sleep(ctx, time.Second)
		}
	}
}

// RunBatch is one turn of PollLambda: it receives up to 10 visible
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
