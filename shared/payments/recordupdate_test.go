package payments_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// deferred is a PendingUpdates that keeps what it is given (err: refuses).
type deferred struct {
	mu      sync.Mutex
	err     error
	updates []payments.RecordUpdate
}

func (d *deferred) Defer(_ context.Context, u payments.RecordUpdate) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return d.err
	}
	d.updates = append(d.updates, u)
	return nil
}

// counts is a RecordMetrics counting by outcome and kind.
type counts struct {
	mu             sync.Mutex
	deferred, lost map[string]int
}

func (c *counts) RecordUpdateDeferred(kind string) { c.add(&c.deferred, kind) }
func (c *counts) RecordUpdateLost(kind string)     { c.add(&c.lost, kind) }
func (c *counts) add(m *map[string]int, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[kind]++
}

// deferring makes every record write after the upstream's answer fail
// (the store refuses them during the call, the retry window is 0), so the
// service defers its update to d; it returns d.
func (f *fixture) deferring() *deferred {
	d := &deferred{}
	f.svc.RetryRecordWritesFor(0).DeferUpdatesTo(d)
	f.up.during = func(string) {
		f.st.mu.Lock()
		f.st.failSaves = 1 << 30
		f.st.mu.Unlock()
	}
	return d
}

// recovered lets the store take writes again and the upstream answer
// without failing them.
func (f *fixture) recovered() {
	f.st.mu.Lock()
	f.st.failSaves = 0
	f.st.mu.Unlock()
	f.up.during = nil
}

// only returns the one update d holds.
func (d *deferred) only(t *testing.T) payments.RecordUpdate {
	t.Helper()
	if len(d.updates) != 1 {
		t.Fatalf("%d updates deferred, want 1: %+v", len(d.updates), d.updates)
	}
	return d.updates[0]
}

// applyUpdate applies u as the consumer of the deferred updates does.
func (f *fixture) applyUpdate(u payments.RecordUpdate) {
	f.t.Helper()
	if err := payments.ApplyRecordUpdate(f.ctx, f.st, u); err != nil {
		f.t.Fatalf("ApplyRecordUpdate %s: %v", u.Kind, err)
	}
}

// apiEntries counts the service's own history entries of kind.
func apiEntries(p payments.Payment, kind string) int {
	n := 0
	for _, e := range p.History {
		if e.Origin == payments.OriginAPI && e.Kind == kind {
			n++
		}
	}
	return n
}

// afterGrace applies a notification item whose first arrival is past the
// grace period (it does not wait for the service's record any more).
func (f *fixture) afterGrace(it payments.Notification) {
	f.t.Helper()
	if _, err := payments.ApplyNotification(f.ctx, f.st, it, payments.NotificationOptions{
		Now: f.clk.Now(), FirstSeen: f.clk.Now().Add(-time.Hour), CaptureMode: tenant.CaptureManual,
	}); err != nil {
		f.t.Fatalf("apply %s: %v", it.EventCode, err)
	}
}

// TestDeferredCaptureUpdate: a capture the upstream accepted while the store
// refused the record's update is deferred, and applying it lands the
// capture once — applied twice, before or after its CAPTURE notification —
// and does not undo a CAPTURE_FAILED that came first or after.
func TestDeferredCaptureUpdate(t *testing.T) {
	const mod = "MOD0000000000001"
	capture := item(payments.EventCapture, mod, psp, "true", 400, nil)
	failed := item(payments.EventCaptureFailed, mod, psp, "true", 400, nil)
	for _, tc := range []struct {
		name  string
		steps []string // "update" or a notification: "capture", "failed"
		want  want
	}{
		{"applied twice", []string{"update", "update"}, want{payments.StatePartiallyCaptured, 1000, 400, 0, 0}},
		{"notification first", []string{"capture", "update", "update"}, want{payments.StatePartiallyCaptured, 1000, 400, 0, 1}},
		{"notification after", []string{"update", "capture", "update"}, want{payments.StatePartiallyCaptured, 1000, 400, 0, 1}},
		{"failure notified first", []string{"failed", "update", "update"}, want{payments.StateAuthorised, 1000, 0, 0, 1}},
		{"failure notified after", []string{"update", "failed", "update"}, want{payments.StateAuthorised, 1000, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.advancedPayment("Authorised")
			d := f.deferring()
			res, err := f.capture(400)
			if err != nil || res.Status != "received" || res.PSPReference != mod {
				t.Fatalf("capture: %+v, %v (the upstream accepted it: the answer stands)", res, err)
			}
			u := d.only(t)
			if u.Kind != payments.UpdateCapture || u.Modification != mod || u.Amount.Value != 400 || !strings.HasPrefix(u.Op, "op_") {
				t.Fatalf("deferred %+v", u)
			}
			f.recovered()
			if p := f.payment(); len(p.Reservations) != 1 || p.CapturedValue != 400 || apiEntries(p, "capture") != 0 {
				t.Fatalf("before: the capture must still be in flight: %+v", p)
			}
			for _, s := range tc.steps {
				switch s {
				case "update":
					f.applyUpdate(u)
				case "capture":
					f.mustApply(capture)
				case "failed":
					f.afterGrace(failed)
				}
			}
			f.check(tc.want)
			if p := f.payment(); len(p.Reservations) != 0 || apiEntries(p, "capture") != 1 {
				t.Fatalf("reservations %v, %d API capture entries; want none and 1", p.Reservations, apiEntries(p, "capture"))
			}
		})
	}
}

// TestDeferredCaptureAfterAReversal: a reversal recorded first; the capture
// the upstream accepted before it is then added to the refund, once.
func TestDeferredCaptureAfterAReversal(t *testing.T) {
	f := newFixture(t)
	f.advancedPayment("Authorised")
	d := f.deferring()
	if _, err := f.capture(400); err != nil {
		t.Fatal(err)
	}
	u := d.only(t)
	f.recovered()
	if _, err := f.reverse(); err != nil {
		t.Fatal(err)
	}
	f.applyUpdate(u)
	f.applyUpdate(u)
	f.check(want{payments.StateRefunded, 1000, 400, 400, 0})
}

// TestDeferredReleaseAppliesOnce: the capture call failed and the release
// of its reservation was deferred: applied twice, released once.
func TestDeferredReleaseAppliesOnce(t *testing.T) {
	f := newFixture(t)
	f.advancedPayment("Authorised")
	d := f.deferring()
	st := f.st
	svc := payments.NewService(st, failingCaptures{f.up}, f.clk, slog.New(slog.NewTextHandler(io.Discard, nil))).RetryRecordWritesFor(0).DeferUpdatesTo(d)
	c := f.call()
	if _, err := svc.Capture(f.ctx, c, psp, payments.CaptureInput{Amount: money.Amount{Value: 300, Currency: "EUR"}}); err == nil {
		t.Fatal("capture succeeded")
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	u := d.only(t)
	f.recovered()
	if u.Kind != payments.UpdateCaptureRelease {
		t.Fatalf("deferred %+v", u)
	}
	f.applyUpdate(u)
	f.applyUpdate(u)
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 0})
	if p := f.payment(); len(p.Reservations) != 0 || apiEntries(p, "capture-released") != 1 {
		t.Fatalf("record %+v", p)
	}
}

// failingCaptures refuses captures after reserving (the store fails as it
// answers).
type failingCaptures struct{ *fakeUpstream }

func (u failingCaptures) Modify(ctx context.Context, r payments.ModificationRequest) (payments.ModificationAnswer, error) {
	if r.Kind != payments.ModifyCapture {
		return u.fakeUpstream.Modify(ctx, r)
	}
	if u.during != nil {
		u.during("")
	}
	return payments.ModificationAnswer{}, errUnavailable
}

// TestDeferredRefundUpdate: a refund the upstream accepted, its record
// update deferred: it moves the reservation to the refund's pspReference
// once, and a REFUND or REFUND_FAILED notified first decides.
func TestDeferredRefundUpdate(t *testing.T) {
	const mod = "MOD0000000000002" // the capture is MOD…1
	for _, tc := range []struct {
		name               string
		first              string // notification before the update: "", "refund", "failed"
		refunded, inFlight int64
		state              payments.State
	}{
		{"applied twice", "", 0, 250, payments.StatePartiallyCaptured},
		{"REFUND first", "refund", 250, 0, payments.StatePartiallyRefunded},
		{"REFUND_FAILED first", "failed", 0, 0, payments.StatePartiallyCaptured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.advancedPayment("Authorised")
			if _, err := f.capture(600); err != nil {
				t.Fatal(err)
			}
			d := f.deferring()
			if _, err := f.refund(250); err != nil {
				t.Fatal(err)
			}
			u := d.only(t)
			f.recovered()
			if u.Kind != payments.UpdateRefund || u.Modification != mod {
				t.Fatalf("deferred %+v", u)
			}
			switch tc.first {
			case "refund":
				f.afterGrace(item(payments.EventRefund, mod, psp, "true", 250, nil))
			case "failed":
				f.afterGrace(item(payments.EventRefundFailed, mod, psp, "true", 250, nil))
			}
			f.applyUpdate(u)
			f.applyUpdate(u)
			f.checkRefunds(tc.state, tc.refunded, tc.inFlight)
			if p := f.payment(); apiEntries(p, "refund") != 1 {
				t.Fatalf("%d API refund entries", apiEntries(p, "refund"))
			}
			if tc.first == "" { // its notification after: counted once
				f.afterGrace(item(payments.EventRefund, mod, psp, "true", 250, nil))
				f.applyUpdate(u)
				f.checkRefunds(payments.StatePartiallyRefunded, 250, 0)
			}
		})
	}
}

// TestDeferredReversalAndAmountUpdate: applied twice they apply once; a
// failure notified first (after its grace period) stands.
func TestDeferredReversalAndAmountUpdate(t *testing.T) {
	const mod = "MOD0000000000001"
	t.Run("reversal", func(t *testing.T) {
		for _, failedFirst := range []bool{false, true} {
			f := newFixture(t)
			f.advancedPayment("Authorised")
			d := f.deferring()
			if _, err := f.reverse(); err != nil {
				t.Fatal(err)
			}
			u := d.only(t)
			f.recovered()
			wantState := payments.StateCancelled
			if failedFirst {
				f.afterGrace(item(payments.EventCancelOrRefund, mod, psp, "false", 1000, nil))
				wantState = payments.StateAuthorised
			}
			f.applyUpdate(u)
			f.applyUpdate(u)
			if p := f.payment(); p.State != wantState || apiEntries(p, "reversal") != 1 {
				t.Fatalf("failure first %v: state %s, %d reversal entries; want %s, 1", failedFirst, p.State, apiEntries(p, "reversal"), wantState)
			}
		}
	})
	t.Run("amount update", func(t *testing.T) {
		for _, failedFirst := range []bool{false, true} {
			f := newFixture(t)
			f.advancedPayment("Authorised")
			d := f.deferring()
			if _, err := f.updateAmount(1500); err != nil {
				t.Fatal(err)
			}
			u := d.only(t)
			f.recovered()
			if p := f.payment(); p.AmountUpdate == nil {
				t.Fatal("the amount update is not marked in flight before its update lands")
			}
			want := int64(1500)
			if failedFirst {
				f.afterGrace(item(payments.EventAuthorisationAdjustment, mod, psp, "false", 1500, nil))
				want = 1000
			}
			f.applyUpdate(u)
			f.applyUpdate(u)
			if p := f.payment(); p.AuthorisedValue != want || p.AmountUpdate != nil || apiEntries(p, "amount-update") != 1 {
				t.Fatalf("failure first %v: authorised %d marker %v entries %d; want %d, none, 1",
					failedFirst, p.AuthorisedValue, p.AmountUpdate, apiEntries(p, "amount-update"), want)
			}
		}
	})
}

// TestDeferredPaymentResult: the record of a payment whose answer could
// not be recorded is created by the deferred update, once, and merges with
// the AUTHORISATION that came first.
func TestDeferredPaymentResult(t *testing.T) {
	for _, notifiedFirst := range []bool{false, true} {
		f := newFixture(t)
		d := &deferred{}
		f.svc.RetryRecordWritesFor(0).DeferUpdatesTo(d)
		f.st.failSaves = 1 << 30
		f.advancedPayment("Authorised")
		u := d.only(t)
		f.recovered()
		if u.Kind != payments.UpdatePayment || u.Payment == nil || u.Payment.AuthorisationType != payments.AuthorisationPreAuth {
			t.Fatalf("deferred %+v", u)
		}
		notes := 0
		if notifiedFirst {
			f.mustApply(authorisation("true", 1000))
			notes = 1
		}
		f.applyUpdate(u)
		f.applyUpdate(u)
		f.check(want{payments.StateAuthorised, 1000, 0, 0, notes})
		// (Which of the call's facts a record the notification created
		// takes is the merge's rule, tested with the notifications.)
		if p := f.payment(); apiEntries(p, "payment") != 1 || p.Reference != "order-1" ||
			(!notifiedFirst && p.AuthorisationType != payments.AuthorisationPreAuth) {
			t.Fatalf("notified first %v: %d payment entries, record %+v", notifiedFirst, apiEntries(p, "payment"), p)
		}
	}
}

// TestDeferringAndLosing: what settle does when the store refuses the
// update: deferred (the answer's Wait is clean, counted as deferred);
// when deferring fails too, lost (Wait returns both errors, counted as
// lost); an update that can never apply is neither deferred nor retried.
func TestDeferringAndLosing(t *testing.T) {
	t.Run("deferred", func(t *testing.T) {
		f := newFixture(t)
		f.advancedPayment("Authorised")
		d := f.deferring()
		m := &counts{}
		f.svc.CountRecordUpdates(m)
		if _, err := f.capture(100); err != nil {
			t.Fatalf("capture (Wait included): %v", err)
		}
		if len(d.updates) != 1 || m.deferred["capture"] != 1 || len(m.lost) != 0 {
			t.Fatalf("deferred %d, metrics %+v", len(d.updates), m)
		}
	})
	t.Run("lost", func(t *testing.T) {
		f := newFixture(t)
		f.advancedPayment("Authorised")
		d := f.deferring()
		d.err = errors.New("queue unreachable")
		m := &counts{}
		f.svc.CountRecordUpdates(m)
		c := f.call()
		res, err := f.svc.Capture(f.ctx, c, psp, payments.CaptureInput{Amount: money.Amount{Value: 100, Currency: "EUR"}})
		werr := c.Wait()
		if err != nil || res.Status != "received" {
			t.Fatalf("capture: %+v %v (the upstream's answer stands)", res, err)
		}
		if werr == nil || !strings.Contains(werr.Error(), "store unavailable") || !strings.Contains(werr.Error(), "queue unreachable") {
			t.Fatalf("Wait = %v, want the store's and the queue's errors", werr)
		}
		if m.lost["capture"] != 1 || len(m.deferred) != 0 {
			t.Fatalf("metrics %+v", m)
		}
		if p := f.payment(); len(p.Reservations) != 1 {
			t.Fatalf("the reservation stays (the notification reconciles it): %+v", p.Reservations)
		}
	})
	t.Run("refused", func(t *testing.T) {
		f := newFixture(t)
		u := payments.RecordUpdate{Kind: payments.UpdateCapture, PSPReference: "PSPUNKNOWN000001", Op: "op_x", Modification: "MOD1", Amount: money.Amount{Value: 1, Currency: "EUR"}, At: t0}
		if err := payments.ApplyRecordUpdate(f.ctx, f.st, u); !errors.Is(err, payments.ErrUpdateRefused) {
			t.Fatalf("unknown payment: %v, want ErrUpdateRefused", err)
		}
		for _, bad := range []payments.RecordUpdate{
			{Kind: "bogus", PSPReference: psp},
			{Kind: payments.UpdateCapture, PSPReference: psp, Modification: "MOD1"}, // no operation reference
			{Kind: payments.UpdateReversal, PSPReference: psp},                      // no modification
			{Kind: payments.UpdatePayment, PSPReference: psp},                       // no facts
			{Kind: payments.UpdateSession},
		} {
			if err := bad.Validate(); !errors.Is(err, payments.ErrUpdateRefused) {
				t.Errorf("%+v: Validate = %v, want ErrUpdateRefused", bad, err)
			}
		}
	})
}
