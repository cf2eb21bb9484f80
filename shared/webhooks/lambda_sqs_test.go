package webhooks_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/webhooks"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// awsEnv is the production wiring on moto: DynamoDB store, SQS queue and
// DLQ, the dispatcher and its Lambda handler, and a receiver whose answer
// depends on the X-Webhook-Id.
type awsEnv struct {
	ctx     context.Context
	st      *dynamo.Store
	q       *sqsqueue.Queue
	sqs     *sqs.Client
	dlqURL  string
	d       *webhooks.Dispatcher
	mu      sync.Mutex
	seen    map[string][]string // delivery id → attempt headers
	okSeen  chan struct{}
	okOnce  sync.Once
	failFor map[string]bool
}

func newAWSEnv(t *testing.T) *awsEnv {
	t.Helper()
	ctx := context.Background()
	endpoint := moto.Endpoint(t)
	dc := moto.DynamoClient(t, endpoint)
	table := moto.TableName(t)
	if err := dynamo.CreateTable(ctx, dc, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = dc.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })
	sc := sqs.New(sqs.Options{
		Region: moto.Region, Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	})
	name := table
	if len(name) > 70 {
		name = name[len(name)-70:]
	}
	url, dlq, err := sqsqueue.CreateQueues(ctx, sc, strings.ReplaceAll(name, ".", "_"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = sc.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		_, _ = sc.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)})
	})
	e := &awsEnv{ctx: ctx, st: dynamo.New(dc, table, clock.System{}), q: sqsqueue.New(sc, url, dlq), sqs: sc, dlqURL: dlq,
		seen: map[string][]string{}, okSeen: make(chan struct{}), failFor: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-Webhook-Id")
		e.mu.Lock()
		e.seen[id] = append(e.seen[id], r.Header.Get("X-Webhook-Delivery-Attempt"))
		fail := e.failFor[id]
		e.mu.Unlock()
		switch {
		case id == "msg_slow":
			select { // answers only once the fast delivery of the same batch is done
			case <-e.okSeen:
			case <-time.After(5 * time.Second):
			}
		case id == "msg_ok":
			e.okOnce.Do(func() { close(e.okSeen) })
		case fail:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	if err := e.st.PutMerchant(ctx, tenant.Merchant{ID: "m_a", Name: "A", Country: "NL", Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.PutSubscription(ctx, tenant.Subscription{ID: "sub_1", MerchantID: "m_a", URL: srv.URL + "/hooks",
		Enabled: true, Secrets: []tenant.Secret{{Value: secretNew}}}); err != nil {
		t.Fatal(err)
	}
	e.d = &webhooks.Dispatcher{Deliveries: e.st, Tenants: e.st, Clock: clock.System{}, Rand: func() float64 { return 0.5 },
		Log:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Sender: webhooks.NewSender(webhooks.SenderConfig{Timeout: 10 * time.Second, AllowLocal: true})}
	return e
}

func (e *awsEnv) delivery(t *testing.T, id string, fail bool) {
	t.Helper()
	e.mu.Lock()
	e.failFor[id] = fail
	e.mu.Unlock()
	_, _, err := webhooks.CreateDelivery(e.ctx, e.st, webhooks.Delivery{ID: id, MerchantID: "m_a", SubscriptionID: "sub_1",
		EventID: "evt_" + id, EventCode: "CAPTURE", PSPReference: "PSP1", Payload: []byte(`{"live":false,"notificationItems":[]}`),
		Status: webhooks.StatusPending, Enqueued: true, CreatedAt: time.Now(), UpdatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.q.Enqueue(e.ctx, queue.Job{DeliveryID: id, Attempt: 1}, 0); err != nil {
		t.Fatal(err)
	}
}

// receive takes the visible messages as the event source mapping would
// hand them to the function.
func (e *awsEnv) receive(t *testing.T, want int) events.SQSEvent {
	t.Helper()
	var ev events.SQSEvent
	for range 20 {
		msgs, err := e.q.Receive(e.ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			ev.Records = append(ev.Records, events.SQSMessage{MessageId: m.ID, ReceiptHandle: m.ReceiptHandle, Body: m.Body,
				Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.ReceiveCount)}, EventSource: "aws:sqs"})
		}
		if len(ev.Records) >= want {
			return ev
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("received %d messages, want %d", len(ev.Records), want)
	return ev
}

// recordingBackoff records the backoffs asked for and makes the message
// visible again at once, so a test can walk the whole schedule.
type recordingBackoff struct {
	q      *sqsqueue.Queue
	mu     sync.Mutex
	delays []time.Duration
}

func (r *recordingBackoff) ChangeVisibility(ctx context.Context, handle string, d time.Duration) error {
	r.mu.Lock()
	r.delays = append(r.delays, d)
	r.mu.Unlock()
	return r.q.ChangeVisibility(ctx, handle, 0)
}

func (r *recordingBackoff) DeadLetter(ctx context.Context, job queue.Job) error {
	return r.q.DeadLetter(ctx, job)
}

// TestDispatcherLambdaBatch: one batch with a slow, a fast and a failing
// delivery: processed concurrently, only the failing one reported, its
// visibility set to the 5 s backoff (it is not receivable right away).
func TestDispatcherLambdaBatch(t *testing.T) {
	e := newAWSEnv(t)
	e.delivery(t, "msg_slow", false)
	e.delivery(t, "msg_ok", false)
	e.delivery(t, "msg_fail", true)
	ev := e.receive(t, 3)
	handler := sqsqueue.LambdaHandler(e.q, e.d.Process, e.d.Log)
	start := time.Now()
	resp, err := handler(e.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("batch took %s: the slow delivery held the others back", took)
	}
	var failedID string
	for _, r := range ev.Records {
		if strings.Contains(r.Body, "msg_fail") {
			failedID = r.MessageId
		}
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != failedID {
		t.Fatalf("batch item failures %+v, want only %s", resp.BatchItemFailures, failedID)
	}
	for id, want := range map[string]webhooks.Status{"msg_slow": webhooks.StatusDelivered, "msg_ok": webhooks.StatusDelivered, "msg_fail": webhooks.StatusPending} {
		d, err := e.st.GetDelivery(e.ctx, id)
		if err != nil || d.Status != want || d.Attempts != 1 {
			t.Fatalf("%s: %+v, %v; want %s after 1 attempt", id, d, err, want)
		}
	}
	// The failed message is hidden for its 5 s backoff.
	if msgs, err := e.q.Receive(e.ctx, 10, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("visible right after the backoff was set: %d messages, %v", len(msgs), err)
	}
}

// TestDispatcherLambdaWholeSchedule walks one failing message through its
// ten receives: the backoff asked after receive n is the schedule's wait
// before attempt n+1; after the tenth the job is in the DLQ, the message
// deleted and the delivery failed.
func TestDispatcherLambdaWholeSchedule(t *testing.T) {
	e := newAWSEnv(t)
	e.delivery(t, "msg_dead", true)
	rb := &recordingBackoff{q: e.q}
	handler := sqsqueue.LambdaHandler(rb, e.d.Process, e.d.Log)
	for receive := 1; receive <= webhooks.MaxAttempts; receive++ {
		ev := e.receive(t, 1)
		if got := ev.Records[0].Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(receive) {
			t.Fatalf("receive %d: ApproximateReceiveCount %s", receive, got)
		}
		resp, err := handler(e.ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		last := receive == webhooks.MaxAttempts
		if reported := len(resp.BatchItemFailures) == 1; reported == last {
			t.Fatalf("receive %d: batch item failures %+v", receive, resp.BatchItemFailures)
		}
		if !last {
			// Lambda would now leave the message to its visibility timeout.
			continue
		}
		// Lambda deletes messages not reported as failed.
		if err := e.q.Delete(e.ctx, ev.Records[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{}
	for attempt := 2; attempt <= webhooks.MaxAttempts; attempt++ {
		want = append(want, min(webhooks.NominalDelay(attempt), webhooks.MaxHop))
	}
	if len(rb.delays) != len(want) {
		t.Fatalf("backoffs %v, want %v", rb.delays, want)
	}
	for i := range want {
		if rb.delays[i] != want[i] {
			t.Fatalf("backoff after attempt %d: %s, want %s", i+1, rb.delays[i], want[i])
		}
	}
	e.mu.Lock()
	attempts := e.seen["msg_dead"]
	e.mu.Unlock()
	if strings.Join(attempts, ",") != "1,2,3,4,5,6,7,8,9,10" {
		t.Fatalf("attempt headers %v", attempts)
	}
	d, err := e.st.GetDelivery(e.ctx, "msg_dead")
	if err != nil || d.Status != webhooks.StatusFailed || d.Attempts != webhooks.MaxAttempts {
		t.Fatalf("delivery after the last attempt: %+v, %v", d, err)
	}
	if n := e.dlqDepth(t); n != 1 {
		t.Fatalf("DLQ holds %d messages, want 1", n)
	}
	if msgs, _ := e.q.Receive(e.ctx, 10, 0); len(msgs) != 0 {
		t.Fatalf("the deliveries queue still holds %d messages", len(msgs))
	}

	// Redrive from the DLQ (admin): back to pending, delivered this time.
	e.mu.Lock()
	e.failFor["msg_dead"] = false
	e.mu.Unlock()
	admin := &webhooks.Admin{Deliveries: e.st, Queue: e.q, DeadLetters: e.q, Clock: clock.System{}}
	res, err := admin.RedriveDeadLetterQueue(e.ctx)
	if err != nil || len(res.Redriven) != 1 {
		t.Fatalf("DLQ redrive: %+v, %v", res, err)
	}
	ev := e.receive(t, 1)
	if resp, _ := sqsqueue.LambdaHandler(e.q, e.d.Process, e.d.Log)(e.ctx, ev); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redriven delivery failed: %+v", resp)
	}
	if d, _ := e.st.GetDelivery(e.ctx, "msg_dead"); d.Status != webhooks.StatusDelivered || d.Redrives != 1 {
		t.Fatalf("after redrive: %+v", d)
	}
}

// dlqDepth is the number of messages in the DLQ.
func (e *awsEnv) dlqDepth(t *testing.T) int {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.dlqURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	return n
}
