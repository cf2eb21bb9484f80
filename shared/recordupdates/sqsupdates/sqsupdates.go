// Package sqsupdates is the AWS adapter of the payment domain's
// PendingUpdates port: a record update the request could not apply is sent
// to the record updates queue (RecordUpdatesQueue in template.yaml,
// PAYSVC_RECORD_UPDATES_QUEUE_URL), and the record updates function
// (functions/recordupdates, LambdaHandler) applies it with
// payments.ApplyRecordUpdate. A failed attempt is retried by SQS after a
// growing visibility timeout; after MaxReceiveCount receives the redrive
// policy moves the message to the dead-letter queue
// (RecordUpdatesDLQ, PAYSVC_RECORD_UPDATES_DLQ_URL), whose alarm asks an
// operator to redrive it (docs/runbook.md). An update that can never
// apply goes to the dead-letter queue at once.
package sqsupdates

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/recordupdates"
)

// Queue attributes as in template.yaml (RecordUpdatesQueue).
const (
	// MaxReceiveCount is the redrive policy's: with Backoff between
	// receives, about 2.5 hours of attempts before the dead-letter queue.
	MaxReceiveCount   = 15
	visibilityTimeout = 180    // 6 x the function's 30 s timeout
	retentionSeconds  = 345600 // 4 days
	firstBackoff      = 30 * time.Second
	maxBackoff        = 15 * time.Minute
)

// Backoff is the wait after the n-th failed receive (1-based): 30 s,
// doubling, at most 15 minutes.
func Backoff(n int) time.Duration {
	return min(firstBackoff<<min(max(n-1, 0), 10), maxBackoff)
}

// Queue sends record updates to the queue and dead letters to its DLQ. It
// is safe for concurrent use.
type Queue struct {
	client *sqs.Client
	url    string
	dlqURL string
}

var _ payments.PendingUpdates = (*Queue)(nil)

// New returns the adapter of the queue at url and its dead-letter queue
// at dlqURL ("" when this process never dead-letters: the API functions).
func New(client *sqs.Client, url, dlqURL string) *Queue {
	return &Queue{client: client, url: url, dlqURL: dlqURL}
}

// Defer sends u to the queue.
func (q *Queue) Defer(ctx context.Context, u payments.RecordUpdate) error {
	body, err := recordupdates.Encode(u)
	if err != nil {
		return err
	}
	if err := q.send(ctx, q.url, string(body)); err != nil {
		return fmt.Errorf("sqsupdates: defer %s update of %s: %w", u.Kind, u.PSPReference, err)
	}
	return nil
}

func (q *Queue) send(ctx context.Context, url, body string) error {
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	return err
}

// changeVisibility hides a received message for d before its next receive.
func (q *Queue) changeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle), VisibilityTimeout: int32(d / time.Second),
	})
	return err
}

// deadLetter sends a body that can never apply to the dead-letter queue.
func (q *Queue) deadLetter(ctx context.Context, body string) error {
	if q.dlqURL == "" {
		return errors.New("sqsupdates: no dead-letter queue configured (PAYSVC_RECORD_UPDATES_DLQ_URL)")
	}
	return q.send(ctx, q.dlqURL, body)
}

// LambdaHandler returns the record updates function's handler (SQS trigger
// with ReportBatchItemFailures): each message of the batch is applied to
// the records of st, concurrently, then
//
//   - applied (or already applied): not reported, so Lambda deletes it;
//   - failed: its visibility is set to Backoff(receives) and it is
//     reported, so SQS delivers it again then;
//   - can never apply (malformed, its payment unknown or of another
//     merchant): sent to the dead-letter queue and deleted (reported if
//     that send fails: the redrive policy moves it later).
func (q *Queue) LambdaHandler(st payments.Store, log *slog.Logger) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return sqsqueue.Batch(ctx, ev, func(ctx context.Context, rec events.SQSMessage) bool {
			return q.apply(ctx, st, log, rec)
		}), nil
	}
}

// apply applies one message and reports whether it may be deleted.
func (q *Queue) apply(ctx context.Context, st payments.Store, log *slog.Logger, rec events.SQSMessage) bool {
	receives, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || receives < 1 {
		receives = 1
	}
	u, err := recordupdates.Decode([]byte(rec.Body))
	if err == nil {
		err = payments.ApplyRecordUpdate(ctx, st, u)
	}
	attrs := []any{"messageId", rec.MessageId, "pspReference", u.PSPReference, "update", string(u.Kind), "receives", receives}
	switch {
	case err == nil:
		log.InfoContext(ctx, "deferred payment record update applied", attrs...)
		return true
	case recordupdates.Permanent(err):
		log.ErrorContext(ctx, "deferred payment record update can never apply; sent to the dead-letter queue",
			append(attrs, "err", err.Error())...)
		if derr := q.deadLetter(ctx, rec.Body); derr != nil {
			log.ErrorContext(ctx, "record updates: sending to the dead-letter queue failed; the redrive policy moves it",
				append(attrs, "err", derr.Error())...)
			return false
		}
		return true
	}
	wait := Backoff(receives)
	log.WarnContext(ctx, "deferred payment record update failed; SQS retries it", append(attrs, "retryIn", wait.String(), "err", err.Error())...)
	if verr := q.changeVisibility(ctx, rec.ReceiptHandle, wait); verr != nil {
		log.ErrorContext(ctx, "record updates: backoff not set; the queue's visibility timeout applies", append(attrs, "err", verr.Error())...)
	}
	return false
}

// CreateQueues creates the record updates queue name and its dead-letter
// queue name+"-dlq" with the template's attributes (tests and local runs
// against moto; in AWS the template owns them) and returns their URLs.
func CreateQueues(ctx context.Context, client *sqs.Client, name string) (url, dlqURL string, err error) {
	return sqsqueue.CreateQueuesWith(ctx, client, name, sqsqueue.Attributes{
		VisibilityTimeout: visibilityTimeout, Retention: retentionSeconds, MaxReceiveCount: MaxReceiveCount,
	})
}

// Poll receives from the queue until ctx ends and handles each batch as
// the Lambda trigger would (local runs against moto).
func (q *Queue) Poll(ctx context.Context, st payments.Store, log *slog.Logger) {
	sqsqueue.New(q.client, q.url, q.dlqURL).PollLambda(ctx, q.LambdaHandler(st, log), log)
}
