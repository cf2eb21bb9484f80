package capacity

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// The shard counts of the write-sharded listings are the capacity model's:
// the least power of two that keeps the average shard of the busiest
// second at or under half a partition's write units.
func TestShardCountsSized(t *testing.T) {
	res, err := Run(SmallMix())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		wcu    float64 // the family's busiest second
		shards int     // the adapter's constant
	}{
		{"deliveries (gsi2 MERCHANT)", res.FamilyLoad["gsi2 MERCHANT"].W, dynamo.DeliveryShards},
		{"event history (table EVENTLOG)", res.FamilyLoad["table EVENTLOG"].W, dynamo.EventLogShards},
		{"unroutable list", res.UnroutableWCU, dynamo.UnroutableShards},
	} {
		if tc.wcu < TargetShardWCU {
			t.Errorf("%s: %.0f WCU/s metered, not a load that needs shards", tc.name, tc.wcu)
		}
		if got := ShardsFor(tc.wcu); got != tc.shards {
			t.Errorf("%s: %.0f WCU/s needs %d shards (%.0f WCU/s each), the adapter has %d", tc.name, tc.wcu, got, tc.wcu/float64(got), tc.shards)
		}
	}
}

func TestShardsFor(t *testing.T) {
	for _, tc := range []struct {
		wcu  float64
		want int
	}{{0, 1}, {500, 1}, {501, 2}, {15_758, 32}, {16_001, 64}, {61_444, 128}} {
		if got := ShardsFor(tc.wcu); got != tc.want {
			t.Errorf("ShardsFor(%.0f) = %d, want %d", tc.wcu, got, tc.want)
		}
	}
}

// The small trace at the full rate of one merchant (10,000 payments/s)
// keeps every partition key of the table and of gsi1 under DynamoDB's
// per-partition limits, and every item under 400 KB. (`make bench` runs
// the full 60 s trace into docs/scale.md.)
func TestSmallTraceWithinPartitionLimits(t *testing.T) {
	res, err := Run(SmallMix())
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	fam := map[string]Peak{}
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
	batches := Measured{Functions: map[string]Function{ReqAttempts: {DurationMS: 200}, ReqHops: {DurationMS: 20}}}
	if got := res.InFlight(batches); got < 5_000 || got > 10_000 {
		t.Errorf("SQS in flight: %.0f, want about 7,000", got)
	}
	per := func(req string) float64 { return res.Requests[req] / res.Payments }
	// The 30 min wait before a failing receiver's 4th attempt takes two
	// messages (15 + 15 min): one hop per failing delivery, ~0.16 per
	// payment. Every attempt's message was sent once (the first by the
	// notification, each retry by the dispatcher), and every hop's.
	if h := per(ReqHops); h < 0.1 || h > 0.25 {
		t.Errorf("hops per payment: %.3f, want about 0.16", h)
	}
	if sends, want := per(ReqSQSSend), per(ReqAttempts)+per(ReqHops); math.Abs(sends-want) > 1e-9 {
		t.Errorf("SendMessage per payment %.4f, want attempts + hops = %.4f", sends, want)
	}
	if per(ReqPayments) != 1 || per(ReqNotifications) < 1.5 || per(ReqAttempts) < 2*per(ReqNotifications) {
		t.Errorf("requests per payment: %v", res.Requests)
	}
	// DynamoDB calls per request, as the adapter makes them (and as
	// cmd/paysvc-bench counts them on moto; tenant reads are cached).
	for req, want := range map[string]float64{
		// a capture or reversal writes its request (which takes the key's
		// claim in its transaction) and its answer, reading nothing first
		// (2, besides the rate-limit hit and the claim's completion)
		ReqPayments: 4, ReqReplay: 2, ReqCaptures: 4, ReqReversals: 4, ReqRefunds: 4,
		// a session: the claim, the rate-limit hit, the session, the
		// completion
		ReqSessions: 4,
		// details (the platform's answer names no pending record): the
		// rate-limit hit, the claim, the payment's create-only write with
		// the claim's completion in its transaction
		ReqDetails: 3,
		// a 3-D Secure payment answered with an action: the rate-limit
		// hit, the claim, the pending record and the action's alias, the
		// completion
		ReqPaymentsAction: 5,
		// a notification: the event and the payment's head read, and for
		// an operation's notification its entry (2 or 3), the commit
		// (event, the ledger's write, the merchant's event: 3; a delivery
		// per subscription: 2), the payment's events listed for an
		// AUTHORISATION (1), the mark (1)
		"notification CAPTURE": 3 + 3 + 2 + 1, "notification AUTHORISATION": 2 + 3 + 2 + 1 + 1,
		// and of a payment recorded from bare details: its pending record
		// read beside the head, and marked bound after the commit
		ReqAuthorisationBinding: 3 + 3 + 2 + 1 + 1 + 1,
		// an attempt: the delivery read, the attempt counted, its result
		ReqAttempts: 3,
	} {
		if got := res.Calls[req]; got != want {
			t.Errorf("%s: %.2f DynamoDB calls per request in the model, want %.0f", req, got, want)
		}
	}
}

// The meter finds a hot key: the old layout put every idempotency record
// of a merchant in one partition.
func TestMeterFindsHotKey(t *testing.T) {
	m := NewMeter()
	m.At(0)
	for i := range 1200 {
		m.Put(nil, dynamo.Item{
			"pk": &types.AttributeValueMemberS{Value: "IDEM#m_big"},
			"sk": &types.AttributeValueMemberS{Value: "KEY#" + strings.Repeat("k", i%30)},
		})
	}
	m.Close()
	err := m.Result().Check()
	if err == nil || !strings.Contains(err.Error(), "table IDEM#m_big: 1200 WCU/s in second 0") {
		t.Fatalf("Check: %v", err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// DynamoDB's rounding: writes per KB of the larger image, a GSI key move
// costs a delete and an insert, reads per 4 KB (half when eventually
// consistent), at least one unit.
func TestMeterRounding(t *testing.T) {
	item := func(gsi1sk string, pad int) dynamo.Item {
		it := dynamo.Item{"pk": s("DELIVERY#d1"), "sk": s("META"), "gsi1pk": s("MERCHANT#m#DELIVERIES#3"), "gsi1sk": s(gsi1sk)}
		it["data"] = s(strings.Repeat("x", pad-dynamo.ItemSize(it)-len("data")))
		return it
	}
	m := NewMeter()
	m.At(0)
	m.Put(nil, item("DELIVERY#pending#1", 1024))                              // 1 + gsi 1
	m.Put(item("DELIVERY#pending#1", 1024), item("DELIVERY#pending#1", 1025)) // 2 + gsi in place 2
	m.Put(item("DELIVERY#pending#1", 1025), item("DELIVERY#delivered#1", 3000))
	// table 3, gsi delete 2 + insert 3
	m.Get(item("x", 4097))                            // 2
	m.Query("gsi1", "MERCHANT#m#DELIVERIES#3", false) // 0.5
	m.Close()
	r := m.Result()
	if got := r.ByIndex[Table]; got.W != 6 || got.R != 2 {
		t.Errorf("table: %+v, want 6 WCU, 2 RCU", got)
	}
	if got := r.ByIndex["gsi1"]; got.W != 8 || got.R != 0.5 {
		t.Errorf("gsi1: %+v, want 8 WCU, 0.5 RCU", got)
	}
}

func TestItemSize(t *testing.T) {
	for _, tc := range []struct {
		item dynamo.Item
		want int
	}{
		{dynamo.Item{"pk": s("ab")}, 4},
		{dynamo.Item{"n": n("123.4500")}, 1 + 3 + 1},     // 5 significant digits
		{dynamo.Item{"n": n("1772445600.5")}, 1 + 6 + 1}, // 11 digits
		{dynamo.Item{"n": n("-0.000100")}, 1 + 1 + 1},    // 1 digit
		{dynamo.Item{"m": &types.AttributeValueMemberBOOL{}}, 2},
	} {
		if got := dynamo.ItemSize(tc.item); got != tc.want {
			t.Errorf("ItemSize(%v) = %d, want %d", tc.item, got, tc.want)
		}
	}
}

// A payment write is metered as payments.Store's Write makes it: one
// TransactWriteItems of the HEAD item, the entries the step changes and the
// timeline fact it adds, each at 2 write units per KB of the larger of its
// old and new image; a read as GetPayment makes it: one BatchGetItem of
// HEAD and META (absent: a payment stored before ledgers has one), each
// item its own read units. No item grows with the ledger: every operation
// and every fact is its own item.
func TestPaymentLedgerTransactionsAndReads(t *testing.T) {
	r := &replay{mix: FullMix(), meter: NewMeter()}
	r.meter.At(0)
	i := 0
	for !r.life(i).captured || r.life(i).tds { // a captured payment without 3DS: 5 steps
		i++
	}
	stages := r.stages(i)
	if len(stages) != 5 {
		t.Fatalf("stages %v", stages)
	}
	prev := r.ledgerAt(i, 0, base)
	var wantW float64
	items := 0
	heads, entries := map[int]bool{}, map[int]bool{}
	for v := 1; v <= len(stages); v++ {
		next := r.ledgerAt(i, v, base)
		if next.head.Version != int64(v) {
			t.Fatalf("step %d: head version %d", v, next.head.Version)
		}
		head, err := dynamo.HeadItem(next.head)
		if err != nil {
			t.Fatal(err)
		}
		if _, sk := dynamo.Keys(head); sk != "HEAD" {
			t.Fatalf("head item: sort key %s", sk)
		}
		old := 0
		if v > 1 {
			o, _ := dynamo.HeadItem(prev.head)
			old = dynamo.ItemSize(o)
		}
		wantW += 2 * writeUnits(max(old, dynamo.ItemSize(head)))
		items++
		heads[dynamo.ItemSize(head)/256] = true
		for ref, e := range next.entries {
			before, existed := prev.entries[ref]
			if existed && before.Version == e.Version {
				continue
			}
			it, err := dynamo.EntryItem(next.head.PSPReference, e, head["ttl"])
			if err != nil {
				t.Fatal(err)
			}
			if _, sk := dynamo.Keys(it); sk != "E#"+ref {
				t.Fatalf("entry %s: sort key %s", ref, sk)
			}
			old := 0
			if existed {
				o, _ := dynamo.EntryItem(next.head.PSPReference, before, head["ttl"])
				old = dynamo.ItemSize(o)
			}
			wantW += 2 * writeUnits(max(old, dynamo.ItemSize(it)))
			items++
			entries[dynamo.ItemSize(it)/256] = true
		}
		if len(next.facts) != len(prev.facts)+1 {
			t.Fatalf("step %d adds %d facts, want 1", v, len(next.facts)-len(prev.facts))
		}
		fact, err := dynamo.FactItem(next.head.PSPReference, next.facts[len(next.facts)-1], head["ttl"])
		if err != nil {
			t.Fatal(err)
		}
		if _, sk := dynamo.Keys(fact); !strings.HasPrefix(sk, "F#") {
			t.Fatalf("fact item: sort key %s", sk)
		}
		wantW += 2 * writeUnits(dynamo.ItemSize(fact))
		items++
		ops := r.meter.ops
		if err := r.write(prev, next); err != nil {
			t.Fatal(err)
		}
		if r.meter.ops != ops+1 {
			t.Fatalf("step %d: %d DynamoDB calls, want one transaction", v, r.meter.ops-ops)
		}
		prev = next
	}
	// The ledger the model writes ends where the domain's fold does.
	if v := prev.head.View(); v.State != payments.StateCaptured || v.Captured != 4999 || v.CapturesInFlight != 0 {
		t.Fatalf("ledger after the capture's notification: %+v", v)
	}
	es := make([]payments.Entry, 0, len(prev.entries))
	for _, e := range prev.entries {
		es = append(es, e)
	}
	if got := payments.Fold(prev.head, es); got != prev.head.Totals {
		t.Fatalf("Totals %+v, fold of the entries %+v", prev.head.Totals, got)
	}
	ops := r.meter.ops
	if err := r.getPayment(prev); err != nil {
		t.Fatal(err)
	}
	if r.meter.ops != ops+1 {
		t.Fatalf("GetPayment: %d DynamoDB calls, want one BatchGetItem", r.meter.ops-ops)
	}
	r.meter.Close()
	res := r.meter.Result()
	head, _ := dynamo.HeadItem(prev.head)
	wantR := readUnits(dynamo.ItemSize(head), true) + readUnits(dynamo.ItemSize(keyOnly("PAYMENT#"+prev.head.PSPReference, "META")), true)
	if got := res.ByIndex[Table]; got.W != wantW || got.R != wantR {
		t.Fatalf("table units %+v, want %.0f WCU and %.0f RCU", got, wantW, wantR)
	}
	if wantW < 2*float64(items) {
		t.Fatalf("%.0f WCU for %d items written in transactions: not 2 per KB", wantW, items)
	}
	// The ledger's items stay the same size class as it grows.
	if len(heads) > 2 || len(entries) > 2 || r.paymentMeta > 1024 || r.paymentEntry > 512 {
		t.Fatalf("payment items grow with the ledger: HEAD %d bytes, entry %d bytes (%v, %v)", r.paymentMeta, r.paymentEntry, heads, entries)
	}
}

// The report and the cost table are generated from a trace's counts and
// the measured inputs, and spliced into docs/scale.md's generated part.
func TestReportAndCost(t *testing.T) {
	mix := SmallMix()
	mix.Rate = 500
	res, err := Run(mix)
	if err != nil {
		t.Fatal(err)
	}
	fn := func(name string, ms, logs float64) Function {
		return Function{Name: name, MemoryMB: 128, DurationMS: ms, LogBytes: logs}
	}
	m := Measured{
		Functions: map[string]Function{
			ReqPayments: fn("PaymentsFunction", 320, 900), ReqReplay: fn("PaymentsFunction", 12, 700),
			ReqDetails: fn("PaymentsFunction", 320, 900), ReqCaptures: fn("ModificationsFunction", 330, 950),
			ReqReversals: fn("ModificationsFunction", 330, 950), ReqNotifications: fn("NotificationsFunction", 40, 1200),
			ReqRefunds: fn("ModificationsFunction", 330, 950), ReqAmountUpdates: fn("ModificationsFunction", 335, 950),
			ReqSessions: fn("SessionsFunction", 300, 800),
			ReqAttempts: fn("WebhookDispatcherFunction", 150, 4000), ReqHops: fn("WebhookDispatcherFunction", 15, 600),
		},
		AccessLogBytes: 700, Source: "test inputs",
	}
	c, err := CostOf(res, m)
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
		"API Gateway (REST) requests", "Payment records are bounded per item", "| POST payments | 1.000 | 4.0 |",
		"| webhook retry hop (dispatcher, not yet due) | 0.1", "within the standard queue's ~120000", "a delivery that fails all 10 attempts takes 207"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	doc, err := os.ReadFile("../../docs/scale.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Splice(string(doc), md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, md) || !strings.HasPrefix(out, string(doc)[:strings.Index(string(doc), BeginGenerated)]) {
		t.Fatal("Splice did not keep the hand-written part and insert the generated one")
	}
	if _, err := CostOf(res, Measured{}); err == nil {
		t.Fatal("CostOf without measurements: no error")
	}
}
