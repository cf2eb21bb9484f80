package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
)

// fixture is a payment store and the idempotency store beside it, at a
// fake clock.
type fixture struct {
	pay  payments.Store
	idem idempotency.Store
	clk  *clock.Fake
}

// TestClaimOnWrite checks a payment write that takes an Idempotency-Key
// claim with it (payments.Write.Claim): on a free key, or one whose lease
// ended, both are made; on a held key (a live lease, a completed record)
// the write returns *idempotency.Taken with the record holding it and
// makes nothing, whatever else failed; a write whose own condition fails
// takes no claim.
func TestClaimOnWrite(t *testing.T, newStores Factory[Stores]) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) fixture {
		clk := newClock()
		st := newStores(t, clk)
		h := head("PSP1")
		noErr(t, st.Payments.Write(ctx, payments.Write{PSP: "PSP1", Put: &h}), "create")
		return fixture{st.Payments, st.Idempotency, clk}
	}
	claim := func(f fixture, key, token string) *idempotency.Record {
		now := f.clk.Now()
		return &idempotency.Record{Scope: "m_a", Key: key, Fingerprint: "fp-" + key, Status: idempotency.StatusInProgress,
			LeaseToken: token, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(31 * 24 * time.Hour)}
	}
	reserveClaiming := func(e payments.Entry, c *idempotency.Record) payments.Write {
		w := reserve("PSP1", e)
		w.Claim = c
		return w
	}
	// written reports whether op ref's entry exists and the Totals are
	// the fold of the entries.
	written := func(t *testing.T, f fixture, ref string) bool {
		t.Helper()
		es, err := f.pay.GetEntries(ctx, "PSP1", ref)
		noErr(t, err, "GetEntries")
		h, err := f.pay.GetPayment(ctx, "PSP1")
		noErr(t, err, "GetPayment")
		all, err := f.pay.GetEntries(ctx, "PSP1", "op_1", "op_2", "op_3")
		noErr(t, err, "GetEntries")
		same(t, h.Totals, payments.Fold(h, all), "Totals against the fold of the entries")
		return len(es) == 1
	}
	taken := func(t *testing.T, err error, holder string) idempotency.Record {
		t.Helper()
		var tk *idempotency.Taken
		if !errors.As(err, &tk) {
			t.Fatalf("write on a held key: got %v, want *idempotency.Taken", err)
		}
		wantErr(t, err, storeerr.ErrConflict, "Taken matches ErrConflict")
		same(t, tk.Existing.LeaseToken, holder, "the holder's lease token")
		return tk.Existing
	}

	t.Run("FreeKeyTakenWithTheWrite", func(t *testing.T) {
		f := setup(t)
		noErr(t, f.pay.Write(ctx, reserveClaiming(capture("op_1", 100), claim(f, "k1", "tok-1"))), "reserve claiming k1")
		same(t, written(t, f, "op_1"), true, "entry written")
		existing, err := f.idem.Claim(ctx, *claim(f, "k1", "tok-other"), f.clk.Now())
		wantErr(t, err, storeerr.ErrConflict, "claiming k1 again")
		same(t, [2]any{existing.LeaseToken, existing.Status}, [2]any{"tok-1", idempotency.StatusInProgress}, "k1's record")
	})
	t.Run("LiveLeaseHoldsTheKey", func(t *testing.T) {
		f := setup(t)
		_, err := f.idem.Claim(ctx, *claim(f, "k1", "tok-holder"), f.clk.Now())
		noErr(t, err, "claim k1")
		taken(t, f.pay.Write(ctx, reserveClaiming(capture("op_1", 100), claim(f, "k1", "tok-1"))), "tok-holder")
		same(t, written(t, f, "op_1"), false, "entry written")
		// Its guard failing too: the held key still decides.
		taken(t, f.pay.Write(ctx, reserveClaiming(capture("op_2", 5000), claim(f, "k1", "tok-2"))), "tok-holder")
		same(t, written(t, f, "op_2"), false, "entry written")
	})
	t.Run("CompletedRecordHoldsTheKey", func(t *testing.T) {
		f := setup(t)
		_, err := f.idem.Claim(ctx, *claim(f, "k1", "tok-holder"), f.clk.Now())
		noErr(t, err, "claim k1")
		resp := idempotency.Response{Status: 201, Body: []byte(`{"status":"received"}`), Header: map[string]string{"Content-Type": "application/json"}}
		noErr(t, f.idem.Complete(ctx, "m_a", "k1", "tok-holder", resp, f.clk.Now().Add(24*time.Hour)), "complete k1")
		existing := taken(t, f.pay.Write(ctx, reserveClaiming(capture("op_1", 100), claim(f, "k1", "tok-1"))), "")
		if existing.Status != idempotency.StatusCompleted || existing.Response == nil || existing.Response.Status != 201 {
			t.Fatalf("k1's record: %+v, want the completed response", existing)
		}
		same(t, written(t, f, "op_1"), false, "entry written")
	})
	t.Run("EndedLeaseIsTakenOver", func(t *testing.T) {
		f := setup(t)
		_, err := f.idem.Claim(ctx, *claim(f, "k1", "tok-crashed"), f.clk.Now())
		noErr(t, err, "claim k1")
		f.clk.Advance(2 * time.Minute)
		noErr(t, f.pay.Write(ctx, reserveClaiming(capture("op_1", 100), claim(f, "k1", "tok-1"))), "reserve claiming k1 after its lease")
		same(t, written(t, f, "op_1"), true, "entry written")
		noErr(t, f.idem.Complete(ctx, "m_a", "k1", "tok-1", idempotency.Response{Status: 201}, f.clk.Now().Add(time.Hour)), "complete with the new lease")
	})
	t.Run("FailedConditionTakesNoClaim", func(t *testing.T) {
		f := setup(t)
		err := f.pay.Write(ctx, reserveClaiming(capture("op_1", 5000), claim(f, "k1", "tok-1")))
		wantErr(t, err, storeerr.ErrConflict, "reserve over what can be captured")
		if tk := (*idempotency.Taken)(nil); errors.As(err, &tk) {
			t.Fatalf("a failed guard on a free key: got Taken %+v", tk.Existing)
		}
		same(t, written(t, f, "op_1"), false, "entry written")
		_, err = f.idem.Claim(ctx, *claim(f, "k1", "tok-2"), f.clk.Now())
		noErr(t, err, "k1 is free after the failed write")
	})
}

// TestResultOnWrite checks a payment write that stores the merchant's
// answer with it (payments.Write.Result): both are written when the
// write's conditions hold and the answer's lease is held; neither when
// the write's condition fails (a create-only write of a head that exists)
// or the lease is not held, and the lease then stays as it was.
func TestResultOnWrite(t *testing.T, newStores Factory[Stores]) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) fixture {
		clk := newClock()
		st := newStores(t, clk)
		now := clk.Now()
		_, err := st.Idempotency.Claim(ctx, idempotency.Record{Scope: "m_a", Key: "k1", Fingerprint: "fp-k1", Status: idempotency.StatusInProgress,
			LeaseToken: "tok-1", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(31 * 24 * time.Hour)}, now)
		noErr(t, err, "claim k1")
		return fixture{st.Payments, st.Idempotency, clk}
	}
	answer := func(f fixture, token string) *idempotency.Completion {
		return &idempotency.Completion{Scope: "m_a", Key: "k1", LeaseToken: token, ExpiresAt: f.clk.Now().Add(24 * time.Hour),
			Response: idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"resultCode":"Authorised"}`)}}
	}
	create := func(c *idempotency.Completion) payments.Write {
		h := head("PSP1")
		return payments.Write{PSP: "PSP1", Put: &h, Result: c}
	}
	// k1 is k1's record as a claim by another lease finds it.
	k1 := func(t *testing.T, f fixture) idempotency.Record {
		t.Helper()
		existing, err := f.idem.Claim(ctx, idempotency.Record{Scope: "m_a", Key: "k1", Fingerprint: "fp-k1", Status: idempotency.StatusInProgress,
			LeaseToken: "tok-probe", LeaseUntil: f.clk.Now().Add(time.Minute), ExpiresAt: f.clk.Now().Add(time.Hour)}, f.clk.Now())
		wantErr(t, err, storeerr.ErrConflict, "claiming k1 again")
		return existing
	}

	t.Run("WrittenTogether", func(t *testing.T) {
		f := setup(t)
		noErr(t, f.pay.Write(ctx, create(answer(f, "tok-1"))), "create with the answer")
		_, err := f.pay.GetPayment(ctx, "PSP1")
		noErr(t, err, "GetPayment")
		rec := k1(t, f)
		if rec.Status != idempotency.StatusCompleted || rec.Response == nil || rec.Response.Status != 200 ||
			string(rec.Response.Body) != `{"resultCode":"Authorised"}` || rec.Response.Header["Content-Type"] != "application/json" {
			t.Fatalf("k1's record %+v (response %+v), want completed with the answer", rec, rec.Response)
		}
		wantErr(t, f.idem.Complete(ctx, "m_a", "k1", "tok-1", idempotency.Response{Status: 500}, f.clk.Now().Add(time.Hour)),
			storeerr.ErrConflict, "completing k1 again: the lease ended with the write")
	})
	t.Run("FailedConditionStoresNoAnswer", func(t *testing.T) {
		f := setup(t)
		noErr(t, f.pay.Write(ctx, create(nil)), "create")
		wantErr(t, f.pay.Write(ctx, create(answer(f, "tok-1"))), storeerr.ErrConflict, "create-only write of a head that exists")
		rec := k1(t, f)
		same(t, [2]any{rec.Status, rec.LeaseToken}, [2]any{idempotency.StatusInProgress, "tok-1"}, "k1's record after the failed write")
		noErr(t, f.idem.Complete(ctx, "m_a", "k1", "tok-1", idempotency.Response{Status: 200}, f.clk.Now().Add(time.Hour)), "complete k1: the lease is held still")
	})
	t.Run("LeaseNotHeldWritesNothing", func(t *testing.T) {
		f := setup(t)
		wantErr(t, f.pay.Write(ctx, create(answer(f, "tok-other"))), storeerr.ErrConflict, "write with another lease's answer")
		_, err := f.pay.GetPayment(ctx, "PSP1")
		wantErr(t, err, storeerr.ErrNotFound, "GetPayment after the refused write")
		same(t, k1(t, f).LeaseToken, "tok-1", "k1's lease")
	})
}
