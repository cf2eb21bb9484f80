package tests

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/testutil/moto"
)

// The webhook end-to-end environment (newWHEnv) on either store: the
// embedded store with the local queue, as the local server runs, or
// DynamoDB with SQS and its dead-letter queue on moto_server, configured
// as the Lambda functions are (PAYSVC_STORE=dynamo, PAYSVC_QUEUE_URL,
// PAYSVC_DLQ_URL) and dispatched by the dispatcher function's SQS handler
// (sqsqueue.LambdaHandler) one received batch at a time
// (sqsqueue.Queue.RunBatch, the turn of the local poller).

// whStore names a variant of the environment.
type whStore string

const (
	whEmbedded whStore = "embedded" // embedded store, local queue
	whDynamo   whStore = "dynamo"   // DynamoDB and SQS on moto
)

// onBothStores runs test as the subtests "embedded" and "dynamo", each on a
// new environment built with o.
func onBothStores(t *testing.T, o whOptions, test func(t *testing.T, e *whEnv)) {
	t.Helper()
	for _, store := range []whStore{whEmbedded, whDynamo} {
		t.Run(string(store), func(t *testing.T) {
			o := o
			o.store = store
			e := newWHEnv(t, o)
			if (store == whDynamo) != (e.a.Config.Store == config.StoreDynamo && e.aws != nil) {
				t.Fatalf("variant %s runs on store %s (SQS: %v)", store, e.a.Config.Store, e.aws != nil)
			}
			test(t, e)
		})
	}
}

// e2eDeliveryShards is the DynamoDB variant's delivery shard count: a
// delivery listing queries every shard, which takes seconds on moto at the
// production count.
const e2eDeliveryShards = 8

// awsWH is the DynamoDB variant's part of a whEnv.
type awsWH struct {
	sqs     *sqs.Client
	dlqURL  string
	backoff *fakeClockBackoff
	// handle is the dispatcher function's SQS handler over the test's
	// dispatcher.
	handle func(context.Context, lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error)
}

// dynamoSetup creates a table and the deliveries queue and its DLQ on moto,
// points the AWS SDK of this process at moto for t (t.Setenv: such tests
// cannot run in parallel), and returns the service's variables for them.
func dynamoSetup(t *testing.T) map[string]string {
	t.Helper()
	endpoint := moto.Endpoint(t)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": moto.Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
	} {
		t.Setenv(k, v)
	}
	table := moto.TableName(t)
	motoTable(t, moto.DynamoClient(t, endpoint), table)
	// Queue names are at most 80 characters: the table's random suffix.
	url, dlq := motoQueues(t, moto.SQSClient(t, endpoint), "wh-e2e-"+table[len(table)-12:])
	return map[string]string{"PAYSVC_STORE": "dynamo", "PAYSVC_TABLE": table, "PAYSVC_QUEUE_URL": url, "PAYSVC_DLQ_URL": dlq,
		"AWS_ENDPOINT_URL": endpoint}
}

// newAWSWH wires the DynamoDB variant's dispatch: the production SQS
// handler over disp, on the fake clock, its queue side bridged to the
// fake clock.
func newAWSWH(t *testing.T, ctx context.Context, queues *app.Queues, disp queue.Handler, clk *clock.Fake, a *app.App) *awsWH {
	t.Helper()
	ac, err := app.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeClockBackoff{q: queues.SQS, clk: clk}
	return &awsWH{sqs: sqs.NewFromConfig(ac), dlqURL: a.Config.DLQURL, backoff: b, handle: sqsqueue.LambdaHandler(b, disp, clk, a.Log)}
}

// runDue sends the messages whose delay has passed on the fake clock (and
// shows hidden ones due), then runs batches until a receive finds no
// visible message and nothing more is due, and returns how many messages
// were handled (as localqueue's RunDue counts jobs; a hop of a job not due
// yet counts as one).
func (w *awsWH) runDue(t *testing.T, ctx context.Context, q *sqsqueue.Queue, a *app.App) int {
	t.Helper()
	n := 0
	for {
		released, err := w.backoff.release(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.RunBatch(ctx, w.handle, 0, a.Log)
		if err == nil {
			err = w.backoff.failure()
		}
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 && released == 0 {
			return n
		}
		n += got
	}
}

// showDeadLetters makes received dead letters visible again at once: SQS
// hides what ReceiveDeadLetters returns for a minute, which the local queue
// does not do; an operator's redrive after that minute sees them again.
func (w *awsWH) showDeadLetters(t *testing.T, ctx context.Context, dead []queue.DeadLetterMsg) {
	t.Helper()
	for _, d := range dead {
		if _, err := w.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(w.dlqURL), ReceiptHandle: aws.String(d.Handle), VisibilityTimeout: 0,
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeClockBackoff is the SQS handler's queue side (sqsqueue.Backoff) with
// delays counted on the test's fake clock instead of SQS's real one. SQS
// delays a message by real seconds and cannot show a delayed message
// early, so a job the handler sends again (a retry, or a hop of one not
// due yet) is held here, as SQS holds a delayed message, until the fake
// clock reaches the end of its delay; release then sends it to the real
// queue without delay, where the production handler receives it and, on
// the same fake clock, attempts it if due or sends it on. The handler's
// due times (Job.NotBefore) are its own, on the fake clock. A message the
// handler hides instead (its fallback when a send fails) is hidden for
// fakeClockHold of real time and shown when due. Dead letters go to the
// real DLQ.
type fakeClockBackoff struct {
	q   *sqsqueue.Queue
	clk *clock.Fake

	mu      sync.Mutex
	delayed []delayedJob         // sent, not visible yet on the fake clock
	hidden  map[string]time.Time // receipt handle → due on the fake clock
	err     error                // the first failure of a send or a visibility change
}

// delayedJob is a job sent with a delay, visible at visible (fake clock).
type delayedJob struct {
	job     queue.Job
	visible time.Time
}

// fakeClockHold is how long a hidden message stays hidden in real time
// unless release shows it first.
const fakeClockHold = 15 * time.Minute

var _ sqsqueue.Backoff = (*fakeClockBackoff)(nil)

// Enqueue holds job until delay has passed on the fake clock, refusing
// what SQS refuses (a delay over 15 minutes, an invalid job).
func (b *fakeClockBackoff) Enqueue(_ context.Context, job queue.Job, delay time.Duration) error {
	err := job.Validate()
	if err == nil && delay > sqsqueue.MaxDelay {
		err = errors.New("delay over SQS's 15 minutes")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.err = errors.Join(b.err, err)
		return err
	}
	b.delayed = append(b.delayed, delayedJob{job: job, visible: b.clk.Now().Add(max(delay, 0))})
	return nil
}

func (b *fakeClockBackoff) ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	err := b.q.ChangeVisibility(ctx, receiptHandle, fakeClockHold)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.err = errors.Join(b.err, err)
		return err
	}
	if b.hidden == nil {
		b.hidden = map[string]time.Time{}
	}
	b.hidden[receiptHandle] = b.clk.Now().Add(d)
	return nil
}

func (b *fakeClockBackoff) DeadLetter(ctx context.Context, job queue.Job) error {
	return b.q.DeadLetter(ctx, job)
}

// release sends the held jobs whose delay has passed on the fake clock and
// shows the hidden messages due; it returns how many it sent or showed.
func (b *fakeClockBackoff) release(ctx context.Context) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clk.Now()
	n := 0
	var held []delayedJob
	for i, d := range b.delayed {
		if d.visible.After(now) {
			held = append(held, d)
			continue
		}
		if err := b.q.Enqueue(ctx, d.job, 0); err != nil {
			b.delayed = append(held, b.delayed[i:]...)
			return n, err
		}
		n++
	}
	b.delayed = held
	for h, due := range b.hidden {
		if due.After(now) {
			continue
		}
		if err := b.q.ChangeVisibility(ctx, h, 0); err != nil {
			return n, err
		}
		delete(b.hidden, h)
		n++
	}
	return n, nil
}

// failure returns the failures of sends and visibility changes so far (the
// handler only logs them).
func (b *fakeClockBackoff) failure() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
