package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
)

// readAsPrevious reads payment psp as the release before ledgers did: its
// META item's data and hn history items, in the types whose JSON is that
// release's (legacy_test.go); unknown attributes and fields are ignored,
// as that release's decoder ignored them.
func readAsPrevious(t *testing.T, client *dynamodb.Client, table, psp string) oldPayment {
	t.Helper()
	all := items(t, client, table, "PAYMENT#"+psp)
	meta := all["META"]
	if meta == nil {
		t.Fatalf("%s: no META item (items %s): the release before ledgers finds no payment", psp, keys(all))
	}
	var p oldPayment
	if err := json.Unmarshal([]byte(meta["data"].(*types.AttributeValueMemberS).Value), &p); err != nil {
		t.Fatalf("%s: META data: %v", psp, err)
	}
	if v := numAttr(t, meta, "version"); v != p.Version {
		t.Fatalf("%s: META version %d, data's %d", psp, v, p.Version)
	}
	n := int(numAttr(t, meta, "hn"))
	for i := range n {
		h := all[historyKey(i)]
		if h == nil {
			t.Fatalf("%s: history item %d of %d missing", psp, i, n)
		}
		var ev oldEvent
		if err := json.Unmarshal([]byte(h["data"].(*types.AttributeValueMemberS).Value), &ev); err != nil {
			t.Fatalf("%s: history item %d: %v", psp, i, err)
		}
		p.History = append(p.History, ev)
	}
	return p
}

func historyKey(i int) string { return fmt.Sprintf("H#%010d", i) }

func numAttr(t *testing.T, it map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %s: %v, want a number", name, it[name])
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		t.Fatalf("attribute %s: %v", name, err)
	}
	return n
}

// claimOf is a claim of key as idempotency.Service.Prepare makes it.
func claimOf(key, lease string, now time.Time) idempotency.Record {
	return idempotency.Record{Scope: "m_a", Key: key, Fingerprint: strings.Repeat("f", 64), Status: idempotency.StatusInProgress,
		LeaseToken: lease, LeaseUntil: now.Add(idempotency.DefaultLease), ExpiresAt: now.Add(idempotency.DefaultRetention)}
}

// isTaken reports an *idempotency.Taken.
func isTaken(err error) bool {
	var taken *idempotency.Taken
	return errors.As(err, &taken)
}

// The ledger format ships in two releases (docs/payments.md,
// "Compatibility"): first a bridge release (WithLegacyPaymentWrites),
// then the ledger's. Each runs beside the one before it during a canary
// and may be rolled back to it; all three share the table. Proved here:
//
//   - what the bridge writes, the release before ledgers reads (its META
//     and history items, in its own types): counters, state and
//     reservations equal what the ledger shows; an operation in flight
//     is listed for recovery all the same;
//   - what the release before ledgers writes over it, the bridge reads
//     and writes on, with the money guard of both (the ledger the bridge
//     kept inside is dropped by that write, and the record converts from
//     its legacy fields);
//   - the ledger's release reads the bridge's records as the ledgers they
//     hold (ids and upstream keys kept) and moves them on its first write;
//   - rolled back to the bridge, a payment the ledger's release wrote
//     stays a ledger and the bridge writes it as one.
func TestBridgeReleaseBetweenThePreviousAndTheLedger(t *testing.T) {
	ctx := context.Background()
	const psp = "PSP_BRIDGE"
	// The bridge: a payment authorised for 1999 EUR, 500 captured
	// (answered), 300 being captured (sent, no answer yet).
	bridge, clk, client, table := bridgeFixture(t, psp)
	next := dynamo.New(client, table, clk)
	clk.Advance(time.Second)
	a := capture("op_a", 500, clk.Now())
	write(t, bridge, request(psp, a))
	clk.Advance(time.Second)
	w, _ := answer(psp, a, payments.Received, clk.Now())
	w.Facts[0].Amount = &a.Requested.Amount // as the domain's answered fact has it
	write(t, bridge, w)
	clk.Advance(time.Second)
	write(t, bridge, request(psp, capture("op_b", 300, clk.Now())))

	all := items(t, client, table, "PAYMENT#"+psp)
	if all["HEAD"] != nil || all["L#op_b"] == nil || all["L#op_a"] != nil {
		t.Fatalf("bridge wrote %s; want META, its history and op_b's in-flight mark, no HEAD", keys(all))
	}
	prev := readAsPrevious(t, client, table, psp)
	if prev.Version != 4 || prev.AuthorisedValue != 1999 || prev.CapturedValue != 500 || prev.RefundedValue != 0 ||
		prev.State != "PartiallyCaptured" || !equalMap(prev.Reservations, map[string]int64{"op_b": 300}) ||
		len(prev.RefundReservations) != 0 || prev.Amount != (oldAmount{Value: 1999, Currency: "EUR"}) ||
		prev.MerchantID != "m_a" || prev.SiteID != "site_1" || len(prev.History) != 4 {
		t.Fatalf("the release before ledgers reads %+v", prev)
	}
	if kinds := historyKinds(prev); !slices.Equal(kinds, []string{"payment", "capture-requested", "capture", "capture-requested"}) {
		t.Fatalf("history read by the release before ledgers: %v", kinds)
	}
	h, _ := ledger(t, bridge, psp, "op_a", "op_b")
	if v := h.View(); v.Captured != 500 || v.CapturesInFlight != 300 || v.Capturable != 1199 || v.State != payments.StatePartiallyCaptured {
		t.Fatalf("bridge reads %+v", v)
	}
	if ops, err := bridge.InFlight(ctx, clk.Now().Add(time.Hour), 10); err != nil ||
		!slices.Equal(ops, []payments.OpRef{{PSP: psp, Ref: "op_b"}}) {
		t.Fatalf("InFlight: %v, %v; want op_b", ops, err)
	}
	// The ledger's release reads the ledger the bridge kept: the
	// operation's id and upstream key, the facts' ids.
	_, es := ledger(t, next, psp, "op_a", "op_b")
	if b := byRef(es)["op_b"]; b.Requested == nil || b.Requested.UpstreamKey != "k-op_b" || b.Version != 1 {
		t.Fatalf("the ledger's release reads op_b as %+v", b)
	}
	if got := ids(timeline(t, next, psp, 10)); !slices.Equal(got, []string{"payment", "op_a#requested", "op_a#answered", "op_b#requested"}) {
		t.Fatalf("the ledger's release reads the timeline %v", got)
	}

	// The release before ledgers, beside it in a canary, reserves 100 for
	// a capture of its own: its write drops the kept ledger.
	clk.Advance(time.Second)
	prev.Reservations["op_c"] = 100
	prev.Version++
	prev.UpdatedAt = clk.Now()
	putLegacy(t, client, table, prev, false)

	// The bridge reads that (converted from the legacy fields) and writes
	// on: 1099 are left to capture.
	clk.Advance(time.Second)

	if err := bridge.Write(ctx, request(psp, capture("op_big", 1100, clk.Now()))); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("a capture over what is left after the previous release's: %v, want a conflict", err)
	}
	write(t, bridge, request(psp, capture("op_d", 1000, clk.Now())))
	h, _ = ledger(t, bridge, psp, "op_a", "op_b", "op_c", "op_d")
	if v := h.View(); v.Captured != 500 || v.CapturesInFlight != 1400 || v.Capturable != 99 || h.Version != 6 {
		t.Fatalf("bridge after the previous release's write: version %d, %+v", h.Version, v)
	}
	prev = readAsPrevious(t, client, table, psp)
	if prev.Version != 6 || prev.CapturedValue != 500 ||
		!equalMap(prev.Reservations, map[string]int64{"op_b": 300, "op_c": 100, "op_d": 1000}) || len(prev.History) != 5 {
		t.Fatalf("the release before ledgers reads %+v", prev)
	}

	// The ledger's release: reads the same, and its first write moves the
	// payment to the ledger (HEAD, entries, facts; META, history and
	// in-flight marks gone).
	clk.Advance(time.Second)
	_, es = ledger(t, next, psp, "op_a", "op_b", "op_c", "op_d")
	w, _ = answer(psp, byRef(es)["op_d"], payments.Received, clk.Now())
	write(t, next, w)
	all = items(t, client, table, "PAYMENT#"+psp)
	for sk := range all {
		if sk == "META" || strings.HasPrefix(sk, "H#") || strings.HasPrefix(sk, "L#") {
			t.Fatalf("after the ledger's release wrote it: %s left (items %s)", sk, keys(all))
		}
	}
	h, _ = ledger(t, next, psp, "op_a", "op_b", "op_c", "op_d")
	if v := h.View(); v.Captured != 1500 || v.CapturesInFlight != 400 || v.Capturable != 99 || h.Version != 7 {
		t.Fatalf("moved: version %d, %+v", h.Version, v)
	}

	// Rolled back to the bridge: the payment is a ledger and stays one.
	clk.Advance(time.Second)
	write(t, bridge, request(psp, capture("op_e", 99, clk.Now())))
	if all = items(t, client, table, "PAYMENT#"+psp); all["META"] != nil || all["E#op_e"] == nil {
		t.Fatalf("the bridge's write of a ledger: items %s", keys(all))
	}
	h, _ = ledger(t, next, psp, "op_a", "op_b", "op_c", "op_d", "op_e")
	if v := h.View(); v.Capturable != 0 || v.CapturesInFlight != 499 {
		t.Fatalf("after the bridge's write of the ledger: %+v", v)
	}
}

// The bridge keeps the store's contract for the claim that rides on a
// write (ClaimOnWrite) when the write's own condition fails before its
// transaction: a key held elsewhere answers Taken, a free one a conflict,
// and nothing is written either way.
func TestBridgeRefusedWriteReportsAHeldClaim(t *testing.T) {
	ctx := context.Background()
	const psp = "PSP_BRIDGE_CLAIM"
	bridge, clk, client, table := bridgeFixture(t, psp)
	before := items(t, client, table, "PAYMENT#"+psp)

	held := claimOf("key-held", "lease-1", clk.Now())
	w := request(psp, capture("op_1", 100, clk.Now()))
	w.Claim = &held
	write(t, bridge, w) // takes the key

	over := request(psp, capture("op_2", 5000, clk.Now())) // more than is left
	again := claimOf("key-held", "lease-2", clk.Now())
	over.Claim = &again
	if err := bridge.Write(ctx, over); !isTaken(err) {
		t.Fatalf("a refused write with a held key: %v, want Taken", err)
	}
	free := claimOf("key-free", "lease-3", clk.Now())
	over.Claim = &free
	if err := bridge.Write(ctx, over); !errors.Is(err, storeerr.ErrConflict) || isTaken(err) {
		t.Fatalf("a refused write with a free key: %v, want a conflict", err)
	}
	if after := items(t, client, table, "PAYMENT#"+psp); len(after) != len(before)+2 { // op_1's request: its fact and mark
		t.Fatalf("items %s, before %s", keys(after), keys(before))
	}
}

// bridgeFixture is a bridge release's store on a new table, its clock at
// 2026-03-02 10:00, and payment psp authorised on it.
func bridgeFixture(t *testing.T, psp string) (*dynamo.Store, *clock.Fake, *dynamodb.Client, string) {
	t.Helper()
	client, table := newTable(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	bridge := dynamo.New(client, table, clk, dynamo.WithLegacyPaymentWrites())
	write(t, bridge, created(authorised(psp, t0)))
	return bridge, clk, client, table
}

func historyKinds(p oldPayment) []string {
	var out []string
	for _, ev := range p.History {
		out = append(out, ev.Kind)
	}
	return out
}

func equalMap(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A record written before history items (its history inline in META's
// data) is written by the bridge as the release before ledgers rewrote
// such a record: every history line to its item, META with its count.
func TestBridgeWritesAnInlineRecordWithHistoryItems(t *testing.T) {
	client, table := newTable(t)
	clk := clock.NewFake(tLegacy.Add(time.Hour))
	bridge := dynamo.New(client, table, clk, dynamo.WithLegacyPaymentWrites())
	const psp = "PSP_BRIDGE_INLINE"
	old := legacyPayment(psp)
	putLegacy(t, client, table, old, true)

	write(t, bridge, request(psp, capture("op_new", 150, clk.Now())))
	prev := readAsPrevious(t, client, table, psp)
	if prev.Version != old.Version+1 || len(prev.History) != len(old.History)+1 || prev.CapturedValue != 600 ||
		!equalMap(prev.Reservations, map[string]int64{"op_x": 200, "op_new": 150}) {
		t.Fatalf("the release before ledgers reads %+v", prev)
	}
	for i, ev := range old.History {
		if got := prev.History[i]; got.Kind != ev.Kind || got.PSPReference != ev.PSPReference || !got.At.Equal(ev.At) {
			t.Fatalf("history line %d: %+v, was %+v", i, got, ev)
		}
	}
	h, _ := ledger(t, bridge, psp, "CAP1", "REF1", "op_x", "op_new")
	if v := h.View(); v.Captured != 600 || v.CapturesInFlight != 350 || v.Capturable != 50 {
		t.Fatalf("bridge reads %+v", v)
	}
}

// An operation the release before ledgers settles (it took the answer of
// a capture the bridge had marked in flight) loses its in-flight mark with
// the bridge's next write: the marks written are those the record read
// needs, the others deleted, so recovery never lists a settled operation
// for good.
func TestBridgeDropsTheMarksOfOperationsSettledElsewhere(t *testing.T) {
	ctx := context.Background()
	const psp = "PSP_BRIDGE_MARKS"
	bridge, clk, client, table := bridgeFixture(t, psp)
	clk.Advance(time.Second)
	write(t, bridge, request(psp, capture("op_b", 300, clk.Now())))
	if all := items(t, client, table, "PAYMENT#"+psp); all["L#op_b"] == nil {
		t.Fatalf("no mark for op_b: items %s", keys(all))
	}

	// The release before ledgers takes op_b's answer: the reservation
	// goes, the capture is a history line under its pspReference.
	clk.Advance(time.Second)
	prev := readAsPrevious(t, client, table, psp)
	delete(prev.Reservations, "op_b")
	prev.CapturedValue += 300
	prev.History = append(prev.History, oldEvent{At: clk.Now(), Kind: "capture", Origin: "api", PSPReference: "CAP_B",
		Amount: &oldAmount{Value: 300, Currency: "EUR"}, Detail: "received"})
	prev.Version++
	putLegacy(t, client, table, prev, false)

	clk.Advance(time.Second)
	write(t, bridge, request(psp, capture("op_e", 100, clk.Now())))
	all := items(t, client, table, "PAYMENT#"+psp)
	if all["L#op_b"] != nil || all["L#op_e"] == nil {
		t.Fatalf("marks after the bridge's write: items %s; want op_e's only", keys(all))
	}
	if ops, err := bridge.InFlight(ctx, clk.Now().Add(time.Hour), 10); err != nil ||
		!slices.Equal(ops, []payments.OpRef{{PSP: psp, Ref: "op_e"}}) {
		t.Fatalf("InFlight: %v, %v; want op_e", ops, err)
	}
	h, _ := ledger(t, bridge, psp, "CAP_B", "op_e")
	if v := h.View(); v.Captured != 300 || v.CapturesInFlight != 100 {
		t.Fatalf("bridge reads %+v", v)
	}
}
