package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/storeerr"
)

// TestPaymentStore checks the payments.Store contract: sessions are
// overwritten by id and vanish once expired; a payment's head is created
// once and put only from the version read; a delta write moves the Totals
// only when the head meets its expectations, and its entries only from
// their versions, all of it or nothing; concurrent writers lose nothing and
// never cross a guard; the timeline keeps facts in the order written, each
// once, a page at a time; a payment vanishes after its retention.
func TestPaymentStore(t *testing.T, newStore Factory[payments.Store]) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s payments.Store, clk *clock.Fake)
	}{
		{"NotFound", testPaymentsNotFound},
		{"SessionPutGet", testSessionPutGet},
		{"SessionExpires", testSessionExpires},
		{"HeadCreateOnceRoundTrip", testHeadCreateOnce},
		{"HeadOptimisticVersion", testHeadVersion},
		{"DeltaOnlyWhenExpected", testDeltaExpect},
		{"WithoutLineItemsOnlyWhole", testLineItemsGuard},
		{"EntryOptimisticVersion", testEntryVersion},
		{"ConcurrentReservationsNeverCrossTheGuard", testConcurrentReservations},
		{"TimelineInOrderOncePaged", testTimeline},
		{"PaymentExpiresAfterRetention", testPaymentRetention},
		{"InFlightListsOperationsAwaitingTheirAnswer", testInFlight},
		{"ExpiringListsAuthorisationsSoonestFirst", testExpiring},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			tc.run(t, newStore(t, clk), clk)
		})
	}
}

func session(id string) payments.Session {
	return payments.Session{
		ID: id, MerchantID: "m_a", SiteID: "site_1", Reference: "order-" + id,
		Amount:           money.Amount{Value: 1999, Currency: "EUR"},
		ShopperReference: "shopper-1", StorePaymentMethod: true,
		CreatedAt: epoch(), ExpiresAt: epoch().Add(time.Hour),
	}
}

// head is an authorised payment of 1999 EUR (capturable in full).
func head(psp string) payments.Head {
	yes := true
	h := payments.Head{
		PSPReference: psp, MerchantID: "m_a", SiteID: "site_1", Reference: "order-1", Source: payments.SourceAdvanced,
		Amount: money.Amount{Value: 1999, Currency: "EUR"}, ShopperReference: "shopper-1", StoredMethodID: "SPM1",
		StorePaymentMethod: true, AuthorisationType: payments.AuthorisationPreAuth, CaptureMode: "manual", PaymentMethod: "visa",
		Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Authorised: 1999,
		AmountUpdates: []payments.AmountUpdate{{Ref: "ADJ1", Amount: 1999, From: 2500}},
		Seq:           2, CreatedAt: epoch(), UpdatedAt: epoch(), Version: 1,
	}
	h.Totals = payments.Fold(h, nil)
	return h
}

// capture is a capture's entry as its request writes it.
func capture(ref string, v int64) payments.Entry {
	return payments.Entry{Ref: ref, Kind: payments.OpCapture, Version: 1, Requested: &payments.Request{
		Amount: money.Amount{Value: v, Currency: "EUR"}, Reference: "cap-" + ref, UpstreamKey: "k-" + ref, At: epoch()}}
}

// reserve is the delta write of capture e's request on psp.
func reserve(psp string, e payments.Entry) payments.Write {
	v := e.Requested.Amount.Value
	return payments.Write{PSP: psp, Delta: e.Contribution(), At: e.Requested.At, Entries: []payments.Entry{e},
		Expect: payments.Expect{MerchantID: "m_a", SiteID: "site_1", Authorised: true, NoReversal: true, NoAmountUpdate: true,
			Currency: "EUR", Capturable: &v},
		Facts: []payments.Fact{{ID: e.Ref + "#requested", At: e.Requested.At, Kind: "capture-requested", Origin: payments.OriginAPI,
			PSPReference: e.Ref, Amount: &e.Requested.Amount}}}
}

// create writes new payment h and returns it.
func create(t *testing.T, s payments.Store, h payments.Head) payments.Head {
	t.Helper()
	noErr(t, s.Write(context.Background(), payments.Write{PSP: h.PSPReference, Put: &h}), "create "+h.PSPReference)
	return h
}

func testPaymentsNotFound(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	_, err := s.GetPayment(ctx, "PSP_MISSING")
	wantErr(t, err, storeerr.ErrNotFound, "GetPayment")
	es, err := s.GetEntries(ctx, "PSP_MISSING", "op_1")
	noErr(t, err, "GetEntries")
	same(t, len(es), 0, "entries of an unknown payment")
	_, err = s.GetSession(ctx, "CS_MISSING")
	wantErr(t, err, storeerr.ErrNotFound, "GetSession")
}

func testSessionPutGet(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	noErr(t, s.PutSession(ctx, session("CS1")), "PutSession")
	noErr(t, s.PutSession(ctx, session("CS2")), "PutSession")
	got, err := s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession")
	same(t, got, session("CS1"), "GetSession")

	updated := session("CS1")
	updated.Reference, updated.Amount.Value, updated.StorePaymentMethod = "order-changed", 2500, false
	noErr(t, s.PutSession(ctx, updated), "PutSession (overwrite)")
	got, err = s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession after overwrite")
	same(t, got, updated, "GetSession after overwrite")
	got, err = s.GetSession(ctx, "CS2")
	noErr(t, err, "GetSession CS2")
	same(t, got, session("CS2"), "GetSession CS2")
}

func testSessionExpires(t *testing.T, s payments.Store, clk *clock.Fake) {
	ctx := context.Background()
	noErr(t, s.PutSession(ctx, session("CS1")), "PutSession")
	clk.Set(epoch().Add(time.Hour - time.Nanosecond))
	_, err := s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession just before expiry")
	clk.Set(epoch().Add(time.Hour))
	_, err = s.GetSession(ctx, "CS1")
	wantErr(t, err, storeerr.ErrNotFound, "GetSession at expiry")
	// Overwriting an expired session with a new expiry revives the id.
	revived := session("CS1")
	revived.ExpiresAt = epoch().Add(2 * time.Hour)
	noErr(t, s.PutSession(ctx, revived), "PutSession (renew)")
	got, err := s.GetSession(ctx, "CS1")
	noErr(t, err, "GetSession after renew")
	same(t, got, revived, "GetSession after renew")
}

func testHeadCreateOnce(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	h := head("PSP1")
	h.CreatedAt, h.UpdatedAt = h.CreatedAt.In(elsewhere()), h.UpdatedAt.In(elsewhere())
	noErr(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &h}), "create")
	wantErr(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &h}), storeerr.ErrConflict, "create twice")
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	want := head("PSP1")
	sameTime(t, got.CreatedAt, want.CreatedAt, "CreatedAt")
	same(t, got, want, "head round trip")
	es, err := s.GetEntries(ctx, "PSP1", "op_none")
	noErr(t, err, "GetEntries")
	same(t, len(es), 0, "entries of a new payment")
}

func testHeadVersion(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	h := create(t, s, head("PSP1"))
	next := h
	next.Reference, next.Version = "order-2", 2
	noErr(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &next}), "put from version 1")
	stale := h
	stale.Reference, stale.Version = "order-stale", 2
	wantErr(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &stale}), storeerr.ErrConflict, "put from a stale version")
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	same(t, [2]any{got.Reference, got.Version}, [2]any{"order-2", int64(2)}, "head after a stale put")
}

func testDeltaExpect(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	create(t, s, head("PSP1"))
	noErr(t, s.Write(ctx, reserve("PSP1", capture("op_1", 1200))), "reserve 1200 of 1999")
	for name, w := range map[string]payments.Write{
		"over what can be captured": reserve("PSP1", capture("op_2", 800)),
		"another merchant": func() payments.Write {
			w := reserve("PSP1", capture("op_3", 1))
			w.Expect.MerchantID = "m_b"
			return w
		}(),
		"another currency": func() payments.Write {
			w := reserve("PSP1", capture("op_4", 1))
			w.Expect.Currency = "USD"
			return w
		}(),
		"a stale sequence": func() payments.Write {
			w := reserve("PSP1", capture("op_5", 1))
			stale := int64(1)
			w.Expect.Seq = &stale
			return w
		}(),
		"the same entry again": reserve("PSP1", capture("op_1", 1)),
		"an unknown payment":   reserve("PSP_NONE", capture("op_6", 1)),
	} {
		wantErr(t, s.Write(ctx, w), storeerr.ErrConflict, name)
	}
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	e, err := s.GetEntries(ctx, "PSP1", "op_1", "op_2", "op_3", "op_4", "op_5")
	noErr(t, err, "GetEntries")
	same(t, len(e), 1, "entries written")
	same(t, got.Totals, payments.Fold(got, e), "Totals against the fold of the entries")
	same(t, [3]int64{got.Totals.CapturesInFlight, got.Totals.Capturable, got.Version}, [3]int64{1200, 799, 2}, "in flight, capturable, version")
	// A write that moves the sequence.
	seq := got.Seq
	noErr(t, s.Write(ctx, payments.Write{PSP: "PSP1", SeqStep: 1, Expect: payments.Expect{Seq: &seq}, At: epoch()}), "seq step")
	got, err = s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	same(t, got.Seq, seq+1, "seq after a step")
}

func testEntryVersion(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	create(t, s, head("PSP1"))
	e := capture("op_1", 100)
	noErr(t, s.Write(ctx, reserve("PSP1", e)), "reserve")
	answered := e
	answered.Answered, answered.Version = &payments.Answer{Outcome: payments.Received, At: epoch()}, 2
	delta := answered.Contribution().Sub(e.Contribution())
	w := payments.Write{PSP: "PSP1", Delta: delta, At: epoch(), Entries: []payments.Entry{answered}}
	noErr(t, s.Write(ctx, w), "answer from version 1")
	wantErr(t, s.Write(ctx, w), storeerr.ErrConflict, "answer from version 1 again")
	got, err := s.GetEntries(ctx, "PSP1", "op_1")
	noErr(t, err, "GetEntries")
	want := answered
	same(t, got, []payments.Entry{want}, "entry round trip")
	hh, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	same(t, hh.Totals, payments.Fold(hh, got), "Totals against the fold of the entries")
}

// testConcurrentReservations: 20 writers reserve 150 each of 1999 at
// once: exactly 13 succeed (1950), the rest conflict, and the Totals are
// the fold of the entries written.
func testConcurrentReservations(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	create(t, s, head("PSP1"))
	const writers = 20
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			e := capture(fmt.Sprintf("op_%02d", i), 150)
			for {
				errs[i] = s.Write(ctx, reserve("PSP1", e))
				if !errors.Is(errs[i], storeerr.ErrConflict) {
					return
				}
				// A conflict is a lost race or the guard: which, the head tells.
				got, err := s.GetPayment(ctx, "PSP1")
				if err != nil || got.Totals.Capturable < 150 {
					return
				}
				if es, _ := s.GetEntries(ctx, "PSP1", e.Ref); len(es) > 0 {
					errs[i] = nil // landed
					return
				}
			}
		})
	}
	wg.Wait()
	ok := 0
	refs := make([]string, writers)
	for i, err := range errs {
		refs[i] = fmt.Sprintf("op_%02d", i)
		if err == nil {
			ok++
		} else if !errors.Is(err, storeerr.ErrConflict) {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	es, err := s.GetEntries(ctx, "PSP1", refs...)
	noErr(t, err, "GetEntries")
	same(t, [2]int{ok, len(es)}, [2]int{13, 13}, "reservations that succeeded, entries written")
	same(t, got.Totals, payments.Fold(got, es), "Totals against the fold of the entries")
}

func testTimeline(t *testing.T, s payments.Store, clk *clock.Fake) {
	ctx := context.Background()
	create(t, s, head("PSP1"))
	const n = 7
	for i := range n {
		clk.Advance(time.Second)
		f := payments.Fact{ID: fmt.Sprintf("f%d", i), At: clk.Now().In(elsewhere()), Kind: "capture", Origin: payments.OriginAPI, Detail: fmt.Sprint(i)}
		w := payments.Write{PSP: "PSP1", At: clk.Now(), Facts: []payments.Fact{f}}
		noErr(t, s.Write(ctx, w), "fact")
		if i == 3 {
			noErr(t, s.Write(ctx, w), "the same fact again")
		}
	}
	var all []payments.Fact
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := s.Timeline(ctx, "PSP1", cursor, 3)
		noErr(t, err, "Timeline")
		if len(page) > 3 || pages > n {
			t.Fatalf("page of %d facts (page %d)", len(page), pages)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	same(t, len(all), n, "facts in the timeline")
	for i, f := range all {
		same(t, f.Detail, fmt.Sprint(i), "fact order")
		same(t, f.At.Location(), time.UTC, "fact time in UTC")
	}
	page, next, err := s.Timeline(ctx, "PSP_NONE", "", 3)
	noErr(t, err, "Timeline of an unknown payment")
	same(t, [2]any{len(page), next}, [2]any{0, ""}, "timeline of an unknown payment")
}

func testPaymentRetention(t *testing.T, s payments.Store, clk *clock.Fake) {
	ctx := context.Background()
	create(t, s, head("PSP1"))
	clk.Set(epoch().Add(store.PaymentRetention - time.Second))
	_, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment just before the end of retention")
	clk.Set(epoch().Add(store.PaymentRetention))
	_, err = s.GetPayment(ctx, "PSP1")
	wantErr(t, err, storeerr.ErrNotFound, "GetPayment at the end of retention")
	again := head("PSP1")
	again.Reference, again.CreatedAt, again.UpdatedAt = "order-2", clk.Now(), clk.Now()
	noErr(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &again}), "create over an expired payment")
	got, err := s.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment of the new payment")
	same(t, got, again, "new payment")
}

// testInFlight: the operations awaiting their answer with a key to repeat
// the call with are listed oldest first, those requested before the bound
// only; an answer received or refused takes one out, an unknown answer
// leaves it in.
func testInFlight(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	idx, ok := s.(payments.InFlight)
	if !ok {
		t.Fatalf("%T does not list operations in flight (payments.InFlight)", s)
	}
	list := func(before time.Time, limit int) string {
		t.Helper()
		refs, err := idx.InFlight(ctx, before, limit)
		noErr(t, err, "InFlight")
		var out []string
		for _, r := range refs {
			out = append(out, r.PSP+"/"+r.Ref)
		}
		return strings.Join(out, ",")
	}
	h := create(t, s, head("PSP_IF1"))
	var ops []payments.Entry
	for i, ref := range []string{"op_b", "op_a", "op_c"} {
		e := capture(ref, 100)
		e.Requested.At = epoch().Add(time.Duration(i) * time.Minute)
		ops = append(ops, e)
		noErr(t, s.Write(ctx, reserve(h.PSPReference, e)), "reserve "+ref)
	}
	keyless := capture("op_nokey", 100)
	keyless.Requested.UpstreamKey = ""
	noErr(t, s.Write(ctx, reserve(h.PSPReference, keyless)), "reserve keyless")

	same(t, list(epoch().Add(90*time.Second), 10), "PSP_IF1/op_b,PSP_IF1/op_a", "requested before the bound, oldest first")
	same(t, list(epoch().Add(time.Hour), 1), "PSP_IF1/op_b", "limited")

	answer := func(e payments.Entry, o payments.Outcome) payments.Entry {
		a := e
		a.Answered, a.Version = &payments.Answer{Outcome: o, At: epoch().Add(time.Hour)}, e.Version+1
		noErr(t, s.Write(ctx, payments.Write{PSP: h.PSPReference, Delta: a.Contribution().Sub(e.Contribution()),
			Entries: []payments.Entry{a}, At: epoch().Add(time.Hour)}), "answer "+e.Ref)
		return a
	}
	answer(ops[0], payments.Refused)
	unknown := answer(ops[1], payments.Unknown)
	same(t, list(epoch().Add(time.Hour), 10), "PSP_IF1/op_a,PSP_IF1/op_c", "a refusal ends it; an unknown answer does not")
	answer(unknown, payments.Received)
	same(t, list(epoch().Add(time.Hour), 10), "PSP_IF1/op_c", "received")
}

// testExpiring: the heads whose uncaptured authorisation can expire
// (payments.Head.ExpiryDue) are listed by expiry time, soonest first,
// those expiring before the bound only; an auto-capture payment is never
// listed, and a head Put that no longer qualifies (notice done, captured)
// leaves the list.
func testExpiring(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	idx, ok := s.(interface {
		Expiring(ctx context.Context, before time.Time, limit int) ([]string, error)
	})
	if !ok {
		t.Fatalf("%T does not list expiring authorisations (Expiring)", s)
	}
	list := func(before time.Time, limit int) string {
		t.Helper()
		psps, err := idx.Expiring(ctx, before, limit)
		noErr(t, err, "Expiring")
		return strings.Join(psps, ",")
	}
	const day = 24 * time.Hour
	card, paypal, auto := head("PSP_EX1"), head("PSP_EX2"), head("PSP_EX3")
	card.AuthorisedAt = epoch()
	paypal.AuthorisedAt, paypal.PaymentMethod = epoch().Add(time.Hour), "paypal"
	auto.AuthorisedAt, auto.CaptureMode = epoch(), "auto"
	auto.Totals = payments.Fold(auto, nil)
	for _, h := range []payments.Head{card, paypal, auto} {
		create(t, s, h)
	}
	same(t, list(epoch().Add(29*day), 10), "PSP_EX2,PSP_EX1", "soonest first, auto capture not listed")
	same(t, list(epoch().Add(4*day), 10), "PSP_EX2", "before the bound only")
	same(t, list(epoch().Add(29*day), 1), "PSP_EX2", "limited")

	done := paypal
	done.ExpiryNoticeDone, done.Version = true, 2
	noErr(t, s.Write(ctx, payments.Write{PSP: done.PSPReference, Put: &done}), "notice done")
	captured := card
	captured.Totals.Captured, captured.Totals.Capturable, captured.Totals.Refundable, captured.Version = 1999, 0, 1999, 2
	noErr(t, s.Write(ctx, payments.Write{PSP: captured.PSPReference, Put: &captured}), "captured")
	same(t, list(epoch().Add(29*day), 10), "", "a Put that no longer qualifies leaves the index")
}

// testLineItemsGuard: without lineItems (Expect.NoLineItems), a payment of
// a method that needs them takes a capture or refund only whole; a card
// payment takes a part.
func testLineItemsGuard(t *testing.T, s payments.Store, _ *clock.Fake) {
	ctx := context.Background()
	partial := func(psp string, kind payments.OpKind, v int64) payments.Write {
		w := reserve(psp, capture("op_"+string(kind), v))
		w.Expect.NoLineItems = kind
		if kind == payments.OpRefund {
			w.Expect.Capturable, w.Expect.Refundable = nil, &v
			w.Delta = payments.Totals{RefundsInFlight: v, Refundable: -v}
		}
		return w
	}
	klarna, card, captured := head("PSPK"), head("PSPC"), head("PSPR")
	klarna.PaymentMethod, captured.PaymentMethod = "klarna", "klarna"
	captured.Totals = payments.Totals{Captured: 1999, Refundable: 1999}
	for _, h := range []payments.Head{klarna, card, captured} {
		create(t, s, h)
	}
	wantErr(t, s.Write(ctx, partial("PSPK", payments.OpCapture, 1000)), storeerr.ErrConflict, "partial capture of klarna")
	noErr(t, s.Write(ctx, partial("PSPC", payments.OpCapture, 1000)), "partial capture of a card")
	noErr(t, s.Write(ctx, partial("PSPK", payments.OpCapture, 1999)), "whole capture of klarna")
	wantErr(t, s.Write(ctx, partial("PSPR", payments.OpRefund, 500)), storeerr.ErrConflict, "partial refund of klarna")
	noErr(t, s.Write(ctx, partial("PSPR", payments.OpRefund, 1999)), "whole refund of klarna")
}
