package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/recordupdates"
	"github.com/yp/paysvc/shared/recordupdates/sqsupdates"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/testutil/storefault"
)

// consumer plays what applies deferred record updates: attempt makes one
// attempt at every update kept and reports how many were kept and how
// many of them landed.
type consumer interface {
	attempt(t *testing.T) (kept, applied int)
}

// localConsumer is the local server's loop over the embedded store
// (Local.RunDue, the fake clock moved past the backoff).
type localConsumer struct {
	e     *testenv.Env
	local *recordupdates.Local
}

func (c localConsumer) attempt(t *testing.T) (int, int) {
	t.Helper()
	c.e.Clock.Advance(time.Minute)
	done, left, err := c.local.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return done + left, done
}

// sqsConsumer is the record updates function under its SQS trigger on
// moto: the queue's messages as Lambda passes them, the function's
// handler, the messages it does not report deleted (as Lambda does), and
// a reported one made visible again at once (SQS does after the backoff).
type sqsConsumer struct {
	client *sqs.Client
	queue  *sqsqueue.Queue
	url    string
	apply  *sqsupdates.Queue
	store  payments.Store
	e      *testenv.Env
}

func (c sqsConsumer) attempt(t *testing.T) (int, int) {
	t.Helper()
	ctx := context.Background()
	ev, err := c.queue.ReceiveEvent(ctx, 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.apply.LambdaHandler(c.store, c.e.Deps.Log)(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	applied := 0
	for _, m := range ev.Records {
		if failed[m.MessageId] {
			if _, err := c.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(c.url), ReceiptHandle: aws.String(m.ReceiptHandle), VisibilityTimeout: 0,
			}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		applied++
		if err := c.queue.Delete(ctx, m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	return len(ev.Records), applied
}

// TestDeferredCaptureUpdateLandsAfterTheStoreRecovers: right after the
// upstream accepted a capture, the store refuses every record write for
// longer than the retry window. The merchant still gets its 200, the
// record update is deferred (not dropped), attempts while the store is
// down change nothing, and once it recovers the consumer applies the
// update: the record equals what the platform holds (captured amount, the
// capture's history entry, no reservation left) without any notification.
// On both stores: the embedded one with the local server's retry loop,
// DynamoDB with the record updates queue and function's handler (moto).
func TestDeferredCaptureUpdateLandsAfterTheStoreRecovers(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		name := "embedded"
		if dyn {
			name = "dynamo"
		}
		t.Run(name, func(t *testing.T) {
			fw := &storefault.Payments{}
			e := testenv.NewWith(t, testenv.Options{Dynamo: dyn, WrapPayments: func(s payments.Store) payments.Store {
				fw.Store = s
				return fw
			}})
			var c consumer
			var pending payments.PendingUpdates
			if dyn {
				client := moto.SQSClient(t, moto.Endpoint(t))
				url, dlq, err := sqsupdates.CreateQueues(context.Background(), client, moto.QueueName(t))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					for _, u := range []string{url, dlq} {
						_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
					}
				})
				q := sqsupdates.New(client, url, dlq)
				pending = q
				c = sqsConsumer{client: client, queue: sqsqueue.New(client, url, dlq), url: url, apply: q, store: fw, e: e}
			} else {
				local := recordupdates.NewLocal(e.Store.(recordupdates.Store), fw, e.Clock, e.Deps.Log)
				pending, c = local, localConsumer{e: e, local: local}
			}
			// A short retry window in the request: the fault outlasts it.
			e.Payments.RetryRecordWritesFor(30 * time.Millisecond).DeferUpdatesTo(pending)

			psp := authorise(t, e, 1000)
			// The store goes down as the upstream takes the capture: the
			// reservation is saved, nothing after the answer is.
			e.Upstream.Inject(func(path string) testenv.Fault {
				if strings.HasSuffix(path, "/captures") {
					fw.Down.Store(true)
				}
				return testenv.Fault{}
			})
			r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures", "A",
				`{"amount":{"value":300,"currency":"EUR"},"reference":"cap-1"}`, "Idempotency-Key", "deferred-capture-1")
			var answer struct{ PSPReference, Status string }
			if err := json.Unmarshal(r.Body, &answer); err != nil || r.Status != 200 || answer.Status != "received" || answer.PSPReference == "" {
				t.Fatalf("capture: %d %s, want 200 received", r.Status, r.Body)
			}
			logs := e.Logs.String()
			if !strings.Contains(logs, "payment record update deferred") || strings.Contains(logs, "record write after the upstream answered failed") {
				t.Fatalf("want the update deferred, not lost; logs:\n%s", logs)
			}
			sim, _ := e.Sim.Payment(psp)
			if sim.CapturedValue != 300 {
				t.Fatalf("the platform captured %d, want 300", sim.CapturedValue)
			}
			before := record(t, e, psp)
			if before.Totals.CapturesInFlight != 300 || hasAPIFact(e.Timeline(psp), "capture", answer.PSPReference) {
				t.Fatalf("before: totals %+v timeline %+v, want the capture still in flight", before.Totals, e.Timeline(psp))
			}

			// Attempts while the store is down change nothing and keep it.
			for range 2 {
				if kept, applied := c.attempt(t); kept != 1 || applied != 0 {
					t.Fatalf("while down: %d kept, %d applied; want 1 kept, 0 applied", kept, applied)
				}
			}
			// The store recovers: the update lands, once.
			fw.Down.Store(false)
			if kept, applied := c.attempt(t); kept != 1 || applied != 1 {
				t.Fatalf("after recovery: %d kept, %d applied; want 1 and 1", kept, applied)
			}
			if kept, _ := c.attempt(t); kept != 0 {
				t.Fatalf("%d updates still kept after it landed", kept)
			}

			p := record(t, e, psp)
			v, facts := p.View(), e.Timeline(psp)
			sim, _ = e.Sim.Payment(psp)
			if v.Captured != sim.CapturedValue || v.Authorised != sim.AuthorisedValue || inFlight(p) ||
				v.State != payments.StatePartiallyCaptured || !hasAPIFact(facts, "capture", answer.PSPReference) {
				t.Fatalf("record: captured %d of %d, totals %+v, state %s, timeline %+v; platform captured %d of %d",
					v.Captured, v.Authorised, p.Totals, v.State, facts, sim.CapturedValue, sim.AuthorisedValue)
			}
			for _, f := range facts {
				if f.Origin == payments.OriginNotification {
					t.Fatalf("a notification was applied: %+v (the update alone must repair the record)", f)
				}
			}
			// The merchant's view agrees.
			got := e.Do("GET", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp, "A", "")
			if got.Status != 200 || !strings.Contains(string(got.Body), fmt.Sprintf(`"capturedAmount":{"value":%d`, sim.CapturedValue)) {
				t.Fatalf("lookup: %d %s", got.Status, got.Body)
			}
		})
	}
}

// hasAPIFact reports whether a timeline holds the service's own fact of
// kind for the operation with pspReference op.
func hasAPIFact(facts []payments.Fact, kind, op string) bool {
	for _, f := range facts {
		if f.Origin == payments.OriginAPI && f.Kind == kind && f.PSPReference == op {
			return true
		}
	}
	return false
}
