package sqsupdates_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/recordupdates"
	"github.com/yp/paysvc/shared/recordupdates/sqsupdates"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/testutil/storefault"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

const psp = "PSPRECORDUPDATE1"

// env is the record updates queue and its DLQ on moto, and payment records
// (the embedded store: the handler only needs the port) with one
// authorised payment whose capture of 400 is in flight.
type env struct {
	client   *sqs.Client
	url, dlq string
	q        *sqsupdates.Queue
	raw      *sqsqueue.Queue
	store    *storefault.Payments
	logs     *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	client := moto.SQSClient(t, moto.Endpoint(t))
	url, dlq, err := sqsupdates.CreateQueues(ctx, client, moto.QueueName(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, u := range []string{url, dlq} {
			_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	st, err := embedded.Open(filepath.Join(t.TempDir(), "paysvc.db"), embedded.WithClock(clock.NewFake(t0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	yes := true
	h := payments.Head{PSPReference: psp, MerchantID: "m_a", SiteID: "site_a", Source: payments.SourceAdvanced,
		Amount: money.Amount{Value: 1000, Currency: "EUR"}, Authorised: 1000, CaptureMode: tenant.CaptureManual,
		Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Version: 1, CreatedAt: t0, UpdatedAt: t0}
	op := payments.Entry{Ref: "op_1", Kind: payments.OpCapture, Version: 1,
		Requested: &payments.Request{Amount: money.Amount{Value: 400, Currency: "EUR"}, Reference: "cap-1", UpstreamKey: "k1", At: t0}}
	h.Totals = payments.Fold(h, []payments.Entry{op})
	if err := st.Write(ctx, payments.Write{PSP: psp, Put: &h, Entries: []payments.Entry{op}}); err != nil {
		t.Fatal(err)
	}
	return &env{client: client, url: url, dlq: dlq, q: sqsupdates.New(client, url, dlq), raw: sqsqueue.New(client, url, dlq),
		store: &storefault.Payments{Store: st}, logs: &bytes.Buffer{}}
}

// invoke receives the queue's messages as the trigger passes them and runs
// the function's handler on them; it returns the batch and the messages
// the handler reported as failed.
func (e *env) invoke(t *testing.T) (events.SQSEvent, map[string]bool) {
	t.Helper()
	ev, err := e.raw.ReceiveEvent(context.Background(), 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.q.LambdaHandler(e.store, slog.New(slog.NewJSONHandler(e.logs, nil)))(context.Background(), ev)
	if err != nil || resp.BatchItemFailures == nil {
		t.Fatalf("handler: %+v, %v (want a batch response, never an error)", resp, err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	return ev, failed
}

// payment is the payment's head and timeline.
func (e *env) payment(t *testing.T) (payments.Head, []payments.Fact) {
	t.Helper()
	h, err := e.store.GetPayment(context.Background(), psp)
	if err != nil {
		t.Fatal(err)
	}
	facts, _, err := e.store.Timeline(context.Background(), psp, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	return h, facts
}

// hasFact reports whether the timeline holds a fact of kind about pspReference ref.
func hasFact(facts []payments.Fact, kind, ref string) bool {
	for _, f := range facts {
		if f.Kind == kind && f.PSPReference == ref {
			return true
		}
	}
	return false
}

func captureUpdate() payments.RecordUpdate {
	return payments.RecordUpdate{Kind: payments.UpdateCapture, PSPReference: psp, Op: "op_1", Modification: "MOD1",
		Amount: money.Amount{Value: 400, Currency: "EUR"}, Status: "received", At: t0}
}

// TestHandlerRetriesWhileTheTableFails: a deferred capture update whose
// table write fails is reported (SQS retries it) and hidden for the
// backoff; once the table takes it, it is applied and not reported.
func TestHandlerRetriesWhileTheTableFails(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.q.Defer(ctx, captureUpdate()); err != nil {
		t.Fatal(err)
	}
	e.store.Down.Store(true)
	ev, failed := e.invoke(t)
	if len(ev.Records) != 1 || !failed[ev.Records[0].MessageId] {
		t.Fatalf("while the table fails: %d messages, failed %v; want the one reported", len(ev.Records), failed)
	}
	// Hidden for the backoff (30 s): not received again at once.
	if again, err := e.raw.ReceiveEvent(ctx, 10, 0); err != nil || len(again.Records) != 0 {
		t.Fatalf("received again before the backoff: %+v, %v", again.Records, err)
	}
	if !strings.Contains(e.logs.String(), `"retryIn":"30s"`) {
		t.Fatalf("logs: %s", e.logs.String())
	}
	// SQS redelivers it after the backoff; the table is back.
	if _, err := e.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(e.url), ReceiptHandle: aws.String(ev.Records[0].ReceiptHandle), VisibilityTimeout: 0,
	}); err != nil {
		t.Fatal(err)
	}
	e.store.Down.Store(false)
	ev, failed = e.invoke(t)
	if len(ev.Records) != 1 || len(failed) != 0 || ev.Records[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after recovery: %+v, failed %v", ev.Records, failed)
	}
	if h, facts := e.payment(t); h.View().Captured != 400 || h.Totals.CapturesInFlight != 0 || !hasFact(facts, "capture", "MOD1") {
		t.Fatalf("payment %+v, timeline %+v", h.View(), facts)
	}
}

// TestHandlerDeadLettersWhatCanNeverApply: a body that is not an update,
// and an update of an unknown payment, go to the DLQ at once (deleted from
// the queue, not reported); a good update in the same batch is applied.
func TestHandlerDeadLettersWhatCanNeverApply(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	unknown := captureUpdate()
	unknown.PSPReference = "PSPUNKNOWN000001"
	for _, u := range []payments.RecordUpdate{captureUpdate(), unknown} {
		if err := e.q.Defer(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.url), MessageBody: aws.String(`{"not":"an update"}`)}); err != nil {
		t.Fatal(err)
	}
	var got int
	for polls := 0; got < 3 && polls < 30; polls++ { // each receive long-polls a second: a failure bound only
		ev, failed := e.invoke(t)
		if len(failed) != 0 {
			t.Fatalf("reported %v: nothing here is worth retrying", failed)
		}
		got += len(ev.Records)
	}
	if got != 3 {
		t.Fatalf("%d messages handled, want 3", got)
	}
	dead, err := sqsqueue.New(e.client, e.dlq, "").ReceiveEvent(ctx, 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead.Records) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(dead.Records), dead.Records)
	}
	for _, m := range dead.Records {
		if _, err := recordupdates.Decode([]byte(m.Body)); err == nil && !strings.Contains(m.Body, unknown.PSPReference) {
			t.Errorf("dead letter %s", m.Body)
		}
	}
	if h, facts := e.payment(t); h.Totals.CapturesInFlight != 0 || !hasFact(facts, "capture", "MOD1") {
		t.Fatalf("the good update was not applied: %+v, timeline %+v", h.Totals, facts)
	}
}

// TestBackoff: 30 s doubling to 15 minutes; MaxReceiveCount of them last
// about 2.5 hours.
func TestBackoff(t *testing.T) {
	var total time.Duration
	for n := 1; n <= sqsupdates.MaxReceiveCount; n++ {
		total += sqsupdates.Backoff(n)
	}
	if sqsupdates.Backoff(1) != 30*time.Second || sqsupdates.Backoff(2) != time.Minute || sqsupdates.Backoff(40) != 15*time.Minute ||
		total < 2*time.Hour || total > 3*time.Hour {
		t.Fatalf("backoff 1: %s, 2: %s, 40: %s, total %s", sqsupdates.Backoff(1), sqsupdates.Backoff(2), sqsupdates.Backoff(40), total)
	}
}
