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
		failed := make([]bool, len(ev.Records))
		var wg sync.WaitGroup
		for i, rec := range ev.Records {
			wg.Add(1)
			go func() {
				defer wg.Done()
				failed[i] = !handleRecord(ctx, q, h, log, rec)
			}()
		}
		wg.Wait()
		resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		for i, f := range failed {
			if f {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
			}
		}
		return resp, nil
	}
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
