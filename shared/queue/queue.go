// Package queue is the port through which webhook delivery jobs travel from
// the notifications function to the dispatcher (docs/architecture.md, docs/webhooks.md).
//
// Two adapters implement it: package sqsqueue (SQS standard queue and its
// dead-letter queue, production) and package localqueue (an in-process
// delayed queue persisted in the embedded store, local runs). The contract
// both must honour is checked by package queuetest.
//
// Delivery is at least once: a job may be received more than once, so the
// consumer (webhooks.Dispatcher) re-reads the delivery record and skips jobs
// whose delivery has already ended.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Job asks the dispatcher to attempt one webhook delivery.
type Job struct {
	// DeliveryID is the delivery's id, also its stable X-Webhook-Id.
	DeliveryID string `json:"deliveryId"`
	// Attempt is the number of the first delivery attempt this job makes
	// (1 for a new or redriven delivery). Where a message is retried in
	// place (SQS visibility backoff), the n-th receive of it makes attempt
	// Attempt+n-1.
	Attempt int `json:"attempt"`
	// NotBefore is when the job falls due; zero: as soon as it is
	// received. The SQS adapter sets it on the jobs it sends again for a
	// retry, whose wait may be longer than SQS can delay a message: a
	// message received before it is sent again, without an attempt, until
	// it is due (sqsqueue.LambdaHandler). A handler receives it only with
	// the first receive of such a message, so that it marks a copy of the
	// job that no handler has seen before (webhooks.Dispatcher drops one
	// whose delivery was meanwhile scheduled past it by another copy).
	NotBefore time.Time `json:"notBefore,omitzero"`
	// MerchantID and SubscriptionID, when set, name the delivery's
	// subscription, so that a consumer reads it alongside the delivery; a
	// job without them (or naming another) has it read after the delivery.
	MerchantID     string `json:"merchantId,omitempty"`
	SubscriptionID string `json:"subscriptionId,omitempty"`
}

// Validate reports a job that no consumer can act on.
func (j Job) Validate() error {
	if j.DeliveryID == "" {
		return errors.New("queue: job without deliveryId")
	}
	if j.Attempt < 1 {
		return fmt.Errorf("queue: job %s: attempt %d must be at least 1", j.DeliveryID, j.Attempt)
	}
	return nil
}

// Encode renders the job as a message body.
func (j Job) Encode() (string, error) {
	if err := j.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return "", fmt.Errorf("queue: encode job: %w", err)
	}
	return string(b), nil
}

// Decode parses a message body made by Encode.
func Decode(body string) (Job, error) {
	var j Job
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		return Job{}, fmt.Errorf("queue: decode job: %w", err)
	}
	return j, j.Validate()
}

// Queue sends delivery jobs.
type Queue interface {
	// Enqueue sends job, to be received once delay has passed (0: now).
	// When it returns nil the job is durable.
	Enqueue(ctx context.Context, job Job, delay time.Duration) error
}

// DeadLetters is the dead-letter side of a queue: jobs whose delivery used
// up its attempts, kept for inspection and redrive.
type DeadLetters interface {
	// DeadLetter stores job in the dead-letter queue.
	DeadLetter(ctx context.Context, job Job) error
	// ReceiveDeadLetters returns up to limit dead letters (none when the
	// dead-letter queue is empty). A dead letter stays in the queue until
	// DeleteDeadLetter; it may be returned again by a later call (SQS hides
	// it for a while first), so callers recognise repeats by ID.
	ReceiveDeadLetters(ctx context.Context, limit int) ([]DeadLetterMsg, error)
	// DeleteDeadLetter removes a dead letter by its Handle.
	DeleteDeadLetter(ctx context.Context, handle string) error
}

// DeadLetterMsg is one received dead letter.
type DeadLetterMsg struct {
	ID     string // stable identity of the dead letter
	Handle string // for DeleteDeadLetter (may change between receives)
	Job    Job
	// Err is set when the body is not a job (Job is then zero).
	Err error
}

// Kind says what a consumer should do with a job it has processed.
type Kind int

// Outcome kinds.
const (
	// Done: the job is finished (delivered, or nothing left to do); delete it.
	Done Kind = iota
	// Retry: try again after Outcome.After (the next attempt).
	Retry
	// DeadLetter: the last attempt failed; move the job to the dead-letter queue.
	DeadLetter
)

// String names the kind for logs.
func (k Kind) String() string {
	switch k {
	case Done:
		return "done"
	case Retry:
		return "retry"
	case DeadLetter:
		return "dead-letter"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Outcome is the result of processing one job.
type Outcome struct {
	Kind  Kind
	After time.Duration // Retry: the delay before the next attempt
	// Next is, for Retry, the number of the next attempt when the handler
	// made one (its number + 1); 0 when it made none (a store read
	// failed), so the job keeps its number. Queues that count attempts
	// themselves may ignore it.
	Next int
}

// Handler processes one job making the given attempt; queue adapters call
// it and carry out its Outcome.
type Handler func(ctx context.Context, job Job, attempt int) Outcome
