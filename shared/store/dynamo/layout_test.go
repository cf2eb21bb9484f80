package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 123456789, time.UTC)

func rawGet(t *testing.T, client *dynamodb.Client, table, pk, sk string) dynamo.Item {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: dynamo.Item{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
	})
	if err != nil {
		t.Fatalf("GetItem %s/%s: %v", pk, sk, err)
	}
	return out.Item
}

// rawGetOf reads the stored item with the key of it.
func rawGetOf(t *testing.T, client *dynamodb.Client, table string, it dynamo.Item) dynamo.Item {
	t.Helper()
	pk, sk := dynamo.Keys(it)
	return rawGet(t, client, table, pk, sk)
}

func rawPut(t *testing.T, client *dynamodb.Client, table string, it dynamo.Item) {
	t.Helper()
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

// withWriteToken checks that stored names the call that wrote it (a
// random token, for which built, the builder's item, has a placeholder of
// the same length: in "wt", or for a versioned item in its version's slot
// "wv<version mod 8>" as "<version>:<token>"), copies the token into built
// and returns stored.
func withWriteToken(t *testing.T, what string, stored, built dynamo.Item) dynamo.Item {
	t.Helper()
	name, prefix := "wt", ""
	for n, v := range built {
		if strings.HasPrefix(n, "wv") {
			name = n
			prefix, _, _ = strings.Cut(v.(*types.AttributeValueMemberS).Value, ":")
			prefix += ":"
		}
	}
	wt, _ := stored[name].(*types.AttributeValueMemberS)
	if wt == nil || !strings.HasPrefix(wt.Value, prefix) || len(wt.Value) != len(prefix)+24 ||
		strings.TrimPrefix(wt.Value, prefix) == "000000000000000000000000" {
		t.Errorf("%s write token %s %v, want %s and 24 random hex digits", what, name, stored[name], prefix)
	} else {
		built[name] = wt
	}
	return stored
}

func sameItem(t *testing.T, what string, got, want dynamo.Item) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: stored item differs from its builder's\n got  %v\n want %v", what, dump(got), dump(want))
	}
	if dynamo.ItemSize(got) != dynamo.ItemSize(want) {
		t.Errorf("%s: stored %d bytes, builder %d", what, dynamo.ItemSize(got), dynamo.ItemSize(want))
	}
}

func dump(it dynamo.Item) string {
	var b strings.Builder
	for k, v := range it {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			fmt.Fprintf(&b, "%s=S(%.40s) ", k, v.Value)
		case *types.AttributeValueMemberN:
			fmt.Fprintf(&b, "%s=N(%s) ", k, v.Value)
		default:
			fmt.Fprintf(&b, "%s=%T ", k, v)
		}
	}
	return b.String()
}

// What the adapter's updates leave stored is what the exported builders
// return, so the capacity model (shared/capacity) sizes the real items.
func TestItemBuildersMatchStoredItems(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(t0)
	s := dynamo.New(client, table, clk, dynamo.WithDeliveryShards(8), dynamo.WithEventLogShards(4))

	rec := idempotency.Record{
		Scope: "m_1", Key: "key-1", Fingerprint: "fp", Status: idempotency.StatusInProgress, LeaseToken: "tok",
		LeaseUntil: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour),
	}
	if _, err := s.Claim(ctx, rec, t0); err != nil {
		t.Fatal(err)
	}
	claimed, _ := dynamo.IdempotencyItem(rec)
	pk, sk := dynamo.Keys(claimed)
	if pk != "IDEM#m_1#key-1" || sk != "KEY" {
		t.Fatalf("idempotency key %s / %s, want its own partition IDEM#m_1#key-1 / KEY", pk, sk)
	}
	sameItem(t, "claimed record", rawGet(t, client, table, pk, sk), claimed)
	resp := idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"ok":true}`)}
	if err := s.Complete(ctx, rec.Scope, rec.Key, rec.LeaseToken, resp, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	done := rec
	done.Status, done.LeaseToken, done.Response, done.ExpiresAt = idempotency.StatusCompleted, "", &resp, t0.Add(2*time.Hour)
	completed, _ := dynamo.IdempotencyItem(done)
	sameItem(t, "completed record", rawGet(t, client, table, pk, sk), completed)

	exp := t0.Add(time.Minute)
	for range 3 {
		if ok, err := s.Hit(ctx, "rl#k#1", 10, exp); !ok || err != nil {
			t.Fatalf("Hit: %v %v", ok, err)
		}
	}
	window := dynamo.RateWindowItem("rl#k#1", 3, exp)
	pk, sk = dynamo.Keys(window)
	sameItem(t, "rate-limit window", withWriteToken(t, "rate-limit window", rawGet(t, client, table, pk, sk), window), window)

	d := webhooks.Delivery{ID: "msg_1", MerchantID: "m_1", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "AUTHORISATION",
		Payload: json.RawMessage(`{"live":"false"}`), Status: webhooks.StatusPending, CreatedAt: t0, UpdatedAt: t0, Version: 1}
	if err := s.SaveDelivery(ctx, d, 0); err != nil {
		t.Fatal(err)
	}
	delivery, _ := dynamo.DeliveryItem(d, 8)
	pk, sk = dynamo.Keys(delivery)
	sameItem(t, "delivery", withWriteToken(t, "delivery", rawGet(t, client, table, pk, sk), delivery), delivery)
	if ipk, isk, _ := dynamo.IndexKey(delivery, "gsi2"); !strings.HasPrefix(ipk, "MERCHANT#m_1#DELIVERIES#") ||
		isk != "2026-03-02T10:00:00.123456789Z#msg_1" {
		t.Errorf("delivery gsi2 key %q / %q, want a shard of MERCHANT#m_1#DELIVERIES# / <createdAt>#msg_1", ipk, isk)
	}
	if _, _, in := dynamo.IndexKey(delivery, "gsi1"); in {
		t.Errorf("delivery in gsi1, want only gsi2")
	}

	// A payment's ledger: its HEAD as a put leaves it, then as a delta
	// write leaves it, an entry and facts, each as its builder returns it
	// (TestPaymentLedgerLayout checks the attributes themselves).
	h := authorised("PSP_1", t0)
	create := created(h)
	if err := s.Write(ctx, create); err != nil {
		t.Fatal(err)
	}
	head, err := dynamo.HeadItem(h)
	if err != nil {
		t.Fatal(err)
	}
	pk, sk = dynamo.Keys(head)
	if pk != "PAYMENT#PSP_1" || sk != "HEAD" {
		t.Fatalf("payment head key %s / %s", pk, sk)
	}
	sameItem(t, "payment HEAD put", withWriteToken(t, "payment HEAD", rawGet(t, client, table, pk, sk), head), head)
	fact, err := dynamo.FactItem("PSP_1", create.Facts[0], head["ttl"])
	if err != nil {
		t.Fatal(err)
	}
	if _, fsk := dynamo.Keys(fact); fsk != "F#2026-03-02T10:00:00.123456789Z#0#payment" {
		t.Fatalf("fact key %s", fsk)
	}
	sameItem(t, "payment fact", rawGetOf(t, client, table, fact), fact)

	e := capture("op_1", 600, t0)
	w := request("PSP_1", e)
	if err := s.Write(ctx, w); err != nil {
		t.Fatal(err)
	}
	// The delta moves the attributes, not data: that holds the head as
	// last put (what GetPayment reads under the attributes).
	moved, err := dynamo.HeadItem(w.Apply(h))
	if err != nil {
		t.Fatal(err)
	}
	stored := withWriteToken(t, "payment HEAD", rawGet(t, client, table, pk, sk), moved)
	if !reflect.DeepEqual(stored["data"], head["data"]) {
		t.Errorf("a delta write changed the HEAD's data")
	}
	moved["data"] = head["data"]
	sameItem(t, "payment HEAD after a delta write", stored, moved)
	entry, err := dynamo.EntryItem("PSP_1", e, head["ttl"])
	if err != nil {
		t.Fatal(err)
	}
	if epk, esk := dynamo.Keys(entry); epk != pk || esk != "E#op_1" {
		t.Fatalf("entry key %s / %s", epk, esk)
	}
	storedEntry := withWriteToken(t, "payment entry", rawGetOf(t, client, table, entry), entry)
	sameItem(t, "payment entry", storedEntry, entry)
	if storedEntry["wt"].(*types.AttributeValueMemberS).Value != stored["wt"].(*types.AttributeValueMemberS).Value {
		t.Errorf("the entry and the HEAD of one write carry different tokens")
	}
	fact, _ = dynamo.FactItem("PSP_1", w.Facts[0], head["ttl"])
	sameItem(t, "payment fact of a delta write", rawGetOf(t, client, table, fact), fact)

	// A merchant event: in its shard of the merchant's event history.
	me := notifications.MerchantEvent{ID: "evt_1", MerchantID: "m_1", EventCode: "CAPTURE", PSPReference: "CAP_1", PaymentPSP: "PSP_1",
		Payload: json.RawMessage(`{"live":"false"}`), CreatedAt: t0}
	if err := s.PutMerchantEvent(ctx, me); err != nil {
		t.Fatal(err)
	}
	logged, err := dynamo.MerchantEventItem(me, 4)
	if err != nil {
		t.Fatal(err)
	}
	pk, sk = dynamo.Keys(logged)
	if pk != dynamo.EventLogPartition("m_1", "evt_1", 4) || !strings.HasPrefix(pk, "EVENTLOG#m_1#") {
		t.Fatalf("merchant event partition %s", pk)
	}
	sameItem(t, "merchant event", rawGet(t, client, table, pk, sk), logged)
}

// TestPaymentLedgerLayout: a payment is its HEAD, one E#<ref> item per
// operation and one F#<at>#<id> item per fact in its partition, read raw:
// the HEAD carries the Totals, version, seq, owner, authorisation state,
// currency, pre-authorisation flag, update time and writer's token as
// plain attributes (the conditions and deltas use them) beside the head's
// JSON; every item carries its ttl; and every item of a typical payment —
// its request, authorisation and amount updates, captured in two parts and
// partly refunded with line items, each operation answered and notified —
// fits in one 4 KB read unit, well under DynamoDB's per-item costs that
// matter (a write unit is 1 KB: the HEAD, written most, stays near it).
func TestPaymentLedgerLayout(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(t0)
	s := dynamo.New(client, table, clk)
	const psp = "PSP_TYPICAL"
	h := authorised(psp, t0)
	h.SessionID, h.StoredMethodID, h.StorePaymentMethod, h.AuthorisationType = "CS_0123456789ABCDEF", "SPM_0123456789", true, payments.AuthorisationPreAuth
	h.Amount.Value, h.Authorised = 2500, 2500
	h.AmountUpdates = []payments.AmountUpdate{{Ref: "ADJ_0123456789ABCDEF", Amount: 2500, From: 1999}}
	h.Totals = payments.Fold(h, nil)
	if err := s.Write(ctx, created(h)); err != nil {
		t.Fatal(err)
	}
	var refs []string
	for i, v := range []int64{1500, 1000} { // two captures, requested, answered, notified
		clk.Advance(time.Second)
		e := capture(fmt.Sprintf("op_capture_%d_0123456789abcdef", i), v, clk.Now())
		write(t, s, request(psp, e))
		clk.Advance(time.Second)
		w, answered := answer(psp, e, payments.Received, clk.Now())
		write(t, s, w)
		notified := answered
		notified.Notices = []payments.Notice{{Code: upstream.EventCapture, Success: true, Amount: e.Requested.Amount, Seq: int64(2 + i), At: clk.Now()}}
		notified.Version++
		write(t, s, payments.Write{PSP: psp, Delta: notified.Contribution().Sub(answered.Contribution()), SeqStep: 1, At: clk.Now(),
			Entries: []payments.Entry{notified}, Facts: []payments.Fact{{ID: e.Ref + "#CAPTURE", At: clk.Now(), Kind: upstream.EventCapture,
				Origin: payments.OriginNotification, PSPReference: e.Ref, Amount: &e.Requested.Amount}}})
		refs = append(refs, e.Ref)
	}
	clk.Advance(time.Second)
	refund := payments.Entry{Ref: "op_refund_0123456789abcdef", Kind: payments.OpRefund, Version: 1, Requested: &payments.Request{
		Amount: money.Amount{Value: 700, Currency: "EUR"}, Reference: "refund-order-1", UpstreamKey: "idem-refund-0123456789abcdef", At: clk.Now()}}
	for i := range 3 {
		tax := int64(21)
		refund.Requested.LineItems = append(refund.Requested.LineItems, payments.LineItem{ID: fmt.Sprintf("item-%d", i),
			Description: "A product with a fairly long description, size M", Quantity: 1, AmountIncludingTax: &tax, TaxPercentage: &tax,
			ProductURL: "https://shop.example/products/0123456789", ImageURL: "https://shop.example/images/0123456789.jpg", SKU: "SKU-0123456789"})
	}
	rw := request(psp, refund)
	v := int64(700)
	rw.Expect.Capturable, rw.Expect.Refundable = nil, &v
	write(t, s, rw)
	refs = append(refs, refund.Ref)

	got, _ := ledger(t, s, psp, refs...)
	if got.Totals.Captured != 2500 || got.Totals.RefundsInFlight != 700 || got.Totals.Refundable != 1800 || got.Totals.Capturable != 0 {
		t.Fatalf("Totals %+v", got.Totals)
	}
	all := items(t, client, table, "PAYMENT#"+psp)
	var heads, entries, facts int
	for sk, it := range all {
		switch {
		case sk == "HEAD":
			heads++
		case strings.HasPrefix(sk, "E#"):
			entries++
			if _, ok := it["version"].(*types.AttributeValueMemberN); !ok || it["wt"] == nil || it["data"] == nil {
				t.Errorf("entry %s: %s, want data, version and wt", sk, dump(it))
			}
		case strings.HasPrefix(sk, "F#"):
			facts++
			if _, err := time.Parse("2006-01-02T15:04:05.000000000Z", strings.SplitN(sk[2:], "#", 2)[0]); err != nil || it["data"] == nil {
				t.Errorf("fact %s: %s (%v)", sk, dump(it), err)
			}
		default:
			t.Errorf("item %s of a ledger", sk)
		}
		if ttlOf(t, it) < t0.Add(store.PaymentRetention).Unix() {
			t.Errorf("%s: ttl %d before the payment's retention ends", sk, ttlOf(t, it))
		}
		if n := dynamo.ItemSize(it); n > 4096 {
			t.Errorf("%s: %d bytes, over one 4 KB read unit", sk, n)
		} else {
			t.Logf("%s: %d bytes", sk, n)
		}
	}
	if heads != 1 || entries != 3 || facts != 8 {
		t.Fatalf("%d heads, %d entries, %d facts (%s); want 1, 3, 8", heads, entries, facts, keys(all))
	}
	if n := dynamo.ItemSize(all["HEAD"]); n > 1536 {
		t.Errorf("HEAD: %d bytes, want at most 1.5 KB (two write units)", n)
	}

	// The HEAD's plain attributes are the head's, as the writes moved them.
	hd := all["HEAD"]
	for name, want := range map[string]int64{"cap": 2500, "capf": 0, "ref": 0, "reff": 700, "capb": 0, "refb": 1800, "rev": 0,
		"revf": 0, "auf": 0, "seq": 3, "version": got.Version} {
		if n, ok := hd[name].(*types.AttributeValueMemberN); !ok || n.Value != strconv.FormatInt(want, 10) {
			t.Errorf("HEAD %s = %v, want %d", name, hd[name], want)
		}
	}
	for name, want := range map[string]string{"mid": "m_a", "sid": "site_1", "auth": "Authorised", "cur": "EUR",
		"ua": clk.Now().Format(time.RFC3339Nano)} {
		if v, ok := hd[name].(*types.AttributeValueMemberS); !ok || v.Value != want {
			t.Errorf("HEAD %s = %v, want %q", name, hd[name], want)
		}
	}
	if pre, ok := hd["pre"].(*types.AttributeValueMemberBOOL); !ok || !pre.Value {
		t.Errorf("HEAD pre = %v, want true", hd["pre"])
	}
	if wt, ok := hd["wt"].(*types.AttributeValueMemberS); !ok || len(wt.Value) != 24 {
		t.Errorf("HEAD wt = %v, want a write token", hd["wt"])
	}
	if ttlOf(t, hd) != t0.Add(store.PaymentRetention).Unix()+1 { // rounded up: t0 has a fraction
		t.Errorf("HEAD ttl %d, want %d", ttlOf(t, hd), t0.Add(store.PaymentRetention).Unix()+1)
	}
}

// write makes w on s, failing t if it fails.
func write(t *testing.T, s payments.Store, w payments.Write) {
	t.Helper()
	if err := s.Write(context.Background(), w); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// An item over DynamoDB's 400 KB — a head, an entry, a fact — is refused
// with an error that says so, and nothing of its write is written.
func TestPaymentWriteRefusesOversizeItem(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	s := dynamo.New(client, table, clock.NewFake(t0))
	huge := strings.Repeat("x", dynamo.MaxItemBytes)
	const tooBig = "exceeds DynamoDB's 409600-byte limit"

	h := authorised("PSP_BIG", t0)
	h.RefusalReason = huge
	if err := s.Write(ctx, created(h)); err == nil || !strings.Contains(err.Error(), tooBig) {
		t.Fatalf("an oversize head: %v", err)
	}
	if _, err := s.GetPayment(ctx, "PSP_BIG"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("oversize head written: %v", err)
	}

	write(t, s, created(authorised("PSP_BIG", t0)))
	e := capture("op_big", 100, t0)
	e.Requested.Reference = huge
	if err := s.Write(ctx, request("PSP_BIG", e)); err == nil || !strings.Contains(err.Error(), tooBig) {
		t.Fatalf("an oversize entry: %v", err)
	}
	w := request("PSP_BIG", capture("op_1", 100, t0))
	w.Facts[0].Detail = huge
	if err := s.Write(ctx, w); err == nil || !strings.Contains(err.Error(), tooBig) {
		t.Fatalf("an oversize fact: %v", err)
	}
	got, es := ledger(t, s, "PSP_BIG", "op_big", "op_1")
	if got.Version != 1 || len(es) != 0 {
		t.Fatalf("after the refused writes: version %d, %d entries", got.Version, len(es))
	}
}

// eventIDs are the ids of es, in order.
func eventIDs(es []notifications.MerchantEvent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}
