package main

import (
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/yp/paysvc/shared/capacity"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// The capacity model's trace replays the adapter's calls recorded on moto
// (recordModel): its figures are tested here, where they are recorded.

var (
	smallOnce  sync.Once
	smallRes   *capacity.TraceResult
	smallErr   error
	recordOnce sync.Once
	modelRec   *capacity.Recordings
	recordErr  error
)

// modelRecordings are item 2's requests recorded once per test binary on
// the model's merchant.
func modelRecordings(t *testing.T) *capacity.Recordings {
	t.Helper()
	recordOnce.Do(func() { modelRec, recordErr = recordModel(&config{RTRequests: 3, progress: io.Discard}) })
	if recordErr != nil {
		t.Fatal(recordErr)
	}
	return modelRec
}

// smallTrace is capacity.SmallMix replayed once per test binary.
func smallTrace(t *testing.T) *capacity.TraceResult {
	t.Helper()
	rec := modelRecordings(t)
	smallOnce.Do(func() { smallRes, smallErr = capacity.Run(capacity.SmallMix(), rec) })
	if smallErr != nil {
		t.Fatal(smallErr)
	}
	return smallRes
}

// The shard counts of the write-sharded listings are the capacity model's:
// the least power of two that keeps the average shard of the busiest
// second at or under half a partition's write units.
func TestShardCountsSized(t *testing.T) {
	res := smallTrace(t)
	for _, tc := range []struct {
		name   string
		wcu    float64 // the family's busiest second
		shards int     // the adapter's constant
	}{
		{"deliveries (gsi2 MERCHANT)", res.FamilyLoad["gsi2 MERCHANT"].W, dynamo.DeliveryShards},
		{"event history (table EVENTLOG)", res.FamilyLoad["table EVENTLOG"].W, dynamo.EventLogShards},
		{"unroutable list", res.UnroutableWCU, dynamo.UnroutableShards},
	} {
		if tc.wcu < capacity.TargetShardWCU {
			t.Errorf("%s: %.0f WCU/s metered, not a load that needs shards", tc.name, tc.wcu)
		}
		if got := capacity.ShardsFor(tc.wcu); got != tc.shards {
			t.Errorf("%s: %.0f WCU/s needs %d shards (%.0f WCU/s each), the adapter has %d", tc.name, tc.wcu, got, tc.wcu/float64(got), tc.shards)
		}
	}
}

// The small trace at the full rate of one merchant (10,000 payments/s)
// keeps every partition key of the table and of gsi1 under DynamoDB's
// per-partition limits, and every item under 400 KB. (`make bench` runs
// the full 60 s trace into docs/scale.md.)
func TestSmallTraceWithinPartitionLimits(t *testing.T) {
	res := smallTrace(t)
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	fam := map[string]capacity.Peak{}
	for _, f := range res.Families {
		fam[f.Family] = f
	}
	// The keys that were hot before: each now spread, each still busy.
	for _, tc := range []struct {
		family  string
		minW    float64 // the load is really there…
		maxW    float64 // …and spread under the limit with headroom
		example string
	}{
		{"gsi2 MERCHANT", 150, 750, "MERCHANT#m_bigshop#DELIVERIES#"},
		{"table RATE", 200, 600, "RATE#rl#key_server_1#"},
		{"table IDEM", 1, 10, "IDEM#m_bigshop#"},
		{"table EVENTLOG", 150, 600, "EVENTLOG#m_bigshop#"},
	} {
		f, ok := fam[tc.family]
		if !ok {
			t.Errorf("no %s partition metered", tc.family)
			continue
		}
		if f.W < tc.minW || f.W > tc.maxW || !strings.HasPrefix(f.Part.PK, tc.example) {
			t.Errorf("%s: busiest %s at %.0f WCU/s, want %s… within [%.0f, %.0f]", tc.family, f.Part.PK, f.W, tc.example, tc.minW, tc.maxW)
		}
	}
	if _, ok := fam["gsi1 MERCHANT"]; ok {
		t.Errorf("deliveries still written to gsi1")
	}
	if r := fam["table MERCHANT"].R; r == 0 {
		t.Errorf("merchant partition: no cache refreshes metered")
	}
	// Failed attempts wait out their backoff as delayed SQS messages, not
	// in flight: ~31,600 deliveries/s × 5 % × (5 s + 5 min + 30 min) ≈ 3.3
	// million delayed; in flight only while a batch runs (~36,000
	// attempts/s × 0.2 s ≈ 7,000), far under the queue's ~120,000.
	if res.SQSDelayed < 2e6 || res.SQSDelayed > 5e6 {
		t.Errorf("SQS delayed: %.0f, want about 3.3 million", res.SQSDelayed)
	}
	batches := capacity.Measured{Functions: map[string]capacity.Function{capacity.ReqAttempts: {DurationMS: 200}, capacity.ReqHops: {DurationMS: 20}}}
	if got := res.InFlight(batches); got < 5_000 || got > 10_000 {
		t.Errorf("SQS in flight: %.0f, want about 7,000", got)
	}
	per := func(req string) float64 { return res.Requests[req] / res.Payments }
	// The 30 min wait before a failing receiver's 4th attempt takes two
	// messages (15 + 15 min): one hop per failing delivery, ~0.16 per
	// payment. Every attempt's message was sent once (the first by the
	// notification, each retry by the dispatcher), and every hop's.
	if h := per(capacity.ReqHops); h < 0.1 || h > 0.25 {
		t.Errorf("hops per payment: %.3f, want about 0.16", h)
	}
	if sends, want := per(capacity.ReqSQSSend), per(capacity.ReqAttempts)+per(capacity.ReqHops); math.Abs(sends-want) > 1e-9 {
		t.Errorf("SendMessage per payment %.4f, want attempts + hops = %.4f", sends, want)
	}
	if per(capacity.ReqPayments) != 1 || per(capacity.ReqNotifications) < 1.5 || per(capacity.ReqAttempts) < 2*per(capacity.ReqNotifications) {
		t.Errorf("requests per payment: %v", res.Requests)
	}
}

// The small trace's DynamoDB calls per request are those the adapter makes
// (and cmd/paysvc-bench counts on moto; tenant reads are cached).
func TestSmallTraceCallsPerRequest(t *testing.T) {
	res := smallTrace(t)
	for req, want := range map[string]float64{
		// a payment: the rate-limit hit, the claim, its pending record
		// before the upstream call, then the head, the pending record
		// marked bound and the completion (6); a replay: the hit and the
		// claim that finds the stored answer (2); a capture, refund or
		// reversal: the hit, the claim, its request, its answer and the
		// completion, reading nothing first (5)
		capacity.ReqPayments: 6, capacity.ReqReplay: 2, capacity.ReqCaptures: 5, capacity.ReqReversals: 5, capacity.ReqRefunds: 5,
		// a session: the claim, the rate-limit hit, the session, the
		// completion
		capacity.ReqSessions: 4,
		// details (the platform's answer names no pending record): the
		// rate-limit hit, the claim, the payment's create-only write, the
		// completion
		capacity.ReqDetails: 4,
		// a 3-D Secure payment answered with an action: the rate-limit
		// hit, the claim, the pending record, then its result code, the
		// action's alias and the completion
		capacity.ReqPaymentsAction: 6,
		// a notification: the event and the payment's head read, and for
		// an operation's notification its entry (2 or 3), the commit
		// (event, the ledger's write, the merchant's event: 3; a delivery
		// per subscription: 2), the payment's events listed for an
		// AUTHORISATION (1), the mark (1)
		"notification CAPTURE": 3 + 3 + 2 + 1, "notification AUTHORISATION": 2 + 3 + 2 + 1 + 1,
		// and of a payment recorded from bare details: its pending record
		// read beside the head, and marked bound after the commit
		capacity.ReqAuthorisationBinding: 3 + 3 + 2 + 1 + 1 + 1,
		// an attempt: the delivery read, the attempt counted, its result
		capacity.ReqAttempts: 3,
	} {
		if got := res.Calls[req]; got != want {
			t.Errorf("%s: %.2f DynamoDB calls per request in the model, want %.0f", req, got, want)
		}
	}
}

// The report and the cost table are generated from a trace's counts and
// the measured inputs, and spliced into docs/scale.md's generated part.
func TestReportAndCost(t *testing.T) {
	mix := capacity.SmallMix()
	mix.Rate = 500
	res, err := capacity.Run(mix, modelRecordings(t))
	if err != nil {
		t.Fatal(err)
	}
	fn := func(name string, ms, logs float64) capacity.Function {
		return capacity.Function{Name: name, MemoryMB: 128, DurationMS: ms, LogBytes: logs}
	}
	m := capacity.Measured{
		Functions: map[string]capacity.Function{
			capacity.ReqPayments: fn("PaymentsFunction", 320, 900), capacity.ReqReplay: fn("PaymentsFunction", 12, 700),
			capacity.ReqDetails: fn("PaymentsFunction", 320, 900), capacity.ReqCaptures: fn("ModificationsFunction", 330, 950),
			capacity.ReqReversals: fn("ModificationsFunction", 330, 950), capacity.ReqNotifications: fn("NotificationsFunction", 40, 1200),
			capacity.ReqRefunds: fn("ModificationsFunction", 330, 950), capacity.ReqAmountUpdates: fn("ModificationsFunction", 335, 950),
			capacity.ReqSessions: fn("SessionsFunction", 300, 800),
			capacity.ReqAttempts: fn("WebhookDispatcherFunction", 150, 4000), capacity.ReqHops: fn("WebhookDispatcherFunction", 15, 600),
		},
		AccessLogBytes: 700, Source: "test inputs",
	}
	c, err := capacity.CostOf(res, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Lines) != 8 || c.Total <= 0 {
		t.Fatalf("cost: %+v", c)
	}
	for _, l := range c.Lines {
		if l.USD <= 0 || l.Quantity <= 0 {
			t.Errorf("cost line %+v", l)
		}
	}
	md, err := res.Report(c, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### Busiest partition key of each key family", "| gsi2 MERCHANT |", "**total**",
		"API Gateway (REST) requests", "Payment records are bounded per item", "| POST payments | 1.000 | 6.0 |",
		"| webhook retry hop (dispatcher, not yet due) | 0.1", "within the standard queue's ~120000", "a delivery that fails all 10 attempts takes 207"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	doc, err := os.ReadFile("../../docs/scale.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := capacity.Splice(string(doc), md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, md) || !strings.HasPrefix(out, string(doc)[:strings.Index(string(doc), capacity.BeginGenerated)]) {
		t.Fatal("Splice did not keep the hand-written part and insert the generated one")
	}
	if _, err := capacity.CostOf(res, capacity.Measured{}); err == nil {
		t.Fatal("CostOf without measurements: no error")
	}
}
