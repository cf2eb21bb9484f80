// Package sqsqueue is the production adapter of the delivery queue: an SQS
// standard queue (DeliveriesQueue in template.yaml, PAYSVC_QUEUE_URL) and
// its dead-letter queue (DeliveriesDLQ, PAYSVC_DLQ_URL; redrive policy
// maxReceiveCount 10).
//
// A retry is a new message: the dispatcher's Lambda handler sends the job
// again for its next attempt, delayed by the wait (SQS delays a message
// by at most MaxDelay, 15 minutes), and lets Lambda delete the received
// one. A longer wait is carried in hops: the message says when it is due
// (Job.NotBefore), and one received before that is sent again, delayed by
// the time left (at most MaxDelay), without an attempt. So no message
// waits in flight — received, not deleted — beyond the batch that handles
// it: SQS allows about 120,000 in-flight messages per standard queue,
// while delayed messages are not in flight and the backlog is unlimited.
// Only when the send fails does the handler fall back to hiding the
// received message for the wait (ChangeMessageVisibility) and reporting it
// as a batch item failure; the n-th receive of a message then makes
// attempt Job.Attempt+n-1. After the last attempt the handler sends the
// job to the dead-letter queue itself and lets Lambda delete the message;
// the redrive policy (10 receives) is the backstop for messages whose
// handler crashed or timed out.
package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/yp/paysvc/shared/queue"
)

// Limits of SQS.
const (
	// MaxDelay is the longest DelaySeconds of SendMessage.
	MaxDelay = 15 * time.Minute
	// MaxVisibility is the longest visibility timeout set here (the
	// fallback when a retry cannot be sent): SQS allows 12 hours counted
	// from the receive, and a message is changed up to a minute (the
	// dispatcher's timeout) after it was received.
	MaxVisibility = 12*time.Hour - 2*time.Minute
	// dlqVisibility hides received dead letters while a redrive handles them.
	dlqVisibility = 60
)

// Queue is the SQS adapter. It is safe for concurrent use.
type Queue struct {
	client *sqs.Client
	url    string
	dlqURL string
}

var (
	_ queue.Queue       = (*Queue)(nil)
	_ queue.DeadLetters = (*Queue)(nil)
)

// New returns the adapter for the queue at queueURL and its dead-letter
// queue at dlqURL ("" when this process never touches the dead letters).
func New(client *sqs.Client, queueURL, dlqURL string) *Queue {
	return &Queue{client: client, url: queueURL, dlqURL: dlqURL}
}

// Enqueue sends job, delayed by delay (at most MaxDelay; SQS counts whole
// seconds, so the delay is rounded up).
func (q *Queue) Enqueue(ctx context.Context, job queue.Job, delay time.Duration) error {
	if delay > MaxDelay {
		return fmt.Errorf("sqsqueue: delay %s longer than SQS allows (%s)", delay, MaxDelay)
	}
	body, err := job.Encode()
	if err != nil {
		return err
	}
	_, err = q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.url), MessageBody: aws.String(body), DelaySeconds: seconds(delay),
	})
	if err != nil {
		return fmt.Errorf("sqsqueue: enqueue %s: %w", job.DeliveryID, err)
	}
	return nil
}

// ChangeVisibility hides a received message for d (clamped to
// [0, MaxVisibility]): the backoff before its next receive, when the job
// could not be sent again.
func (q *Queue) ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle),
		VisibilityTimeout: seconds(min(d, MaxVisibility)),
	})
	if err != nil {
		return fmt.Errorf("sqsqueue: change visibility: %w", err)
	}
	return nil
}

// DeadLetter sends job to the dead-letter queue.
func (q *Queue) DeadLetter(ctx context.Context, job queue.Job) error {
	if q.dlqURL == "" {
		return errors.New("sqsqueue: no dead-letter queue configured (PAYSVC_DLQ_URL)")
	}
	body, err := job.Encode()
	if err != nil {
		return err
	}
	if _, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.dlqURL), MessageBody: aws.String(body)}); err != nil {
		return fmt.Errorf("sqsqueue: dead-letter %s: %w", job.DeliveryID, err)
	}
	return nil
}

// ReceiveDeadLetters receives up to limit (at most 10) dead letters, hidden
// for a minute from other receives.
func (q *Queue) ReceiveDeadLetters(ctx context.Context, limit int) ([]queue.DeadLetterMsg, error) {
	if q.dlqURL == "" {
		return nil, errors.New("sqsqueue: no dead-letter queue configured (PAYSVC_DLQ_URL)")
	}
	msgs, err := q.receive(ctx, q.dlqURL, limit, 0, dlqVisibility)
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: receive dead letters: %w", err)
	}
	out := make([]queue.DeadLetterMsg, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, queue.DeadLetterMsg{ID: m.ID, Handle: m.ReceiptHandle, Job: m.Job, Err: m.Err})
	}
	return out, nil
}

// DeleteDeadLetter deletes a received dead letter.
func (q *Queue) DeleteDeadLetter(ctx context.Context, handle string) error {
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.dlqURL), ReceiptHandle: aws.String(handle)}); err != nil {
		return fmt.Errorf("sqsqueue: delete dead letter: %w", err)
	}
	return nil
}

// Message is one received job.
type Message struct {
	ID            string
	ReceiptHandle string
	ReceiveCount  int
	Body          string
	Job           queue.Job
	Err           error // the body is not a job
}

// Receive receives up to limit (at most 10) jobs from the deliveries queue,
// waiting at most wait for one. The Lambda event source mapping does this
// in production; Receive serves tests and tools.
func (q *Queue) Receive(ctx context.Context, limit int, wait time.Duration) ([]Message, error) {
	msgs, err := q.receive(ctx, q.url, limit, wait, -1)
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: receive: %w", err)
	}
	return msgs, nil
}

// Delete deletes a message received by Receive.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle)}); err != nil {
		return fmt.Errorf("sqsqueue: delete: %w", err)
	}
	return nil
}

// receive receives from url; visibility < 0 keeps the queue's default.
func (q *Queue) receive(ctx context.Context, url string, limit int, wait time.Duration, visibility int32) ([]Message, error) {
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         int32(min(max(limit, 1), 10)),
		WaitTimeSeconds:             seconds(min(wait, 20*time.Second)),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	}
	if visibility >= 0 {
		in.VisibilityTimeout = visibility
	}
	out, err := q.client.ReceiveMessage(ctx, in)
	if err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		job, err := queue.Decode(aws.ToString(m.Body))
		n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		msgs = append(msgs, Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			ReceiveCount: n, Body: aws.ToString(m.Body), Job: job, Err: err})
	}
	return msgs, nil
}

// seconds rounds d up to whole seconds, at least 0.
func seconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32((d + time.Second - 1) / time.Second)
}
