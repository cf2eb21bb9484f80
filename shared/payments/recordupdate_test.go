package payments_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

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
		f.st.failWrites = 1 << 30
		f.st.mu.Unlock()
	}
	return d
}

// recovered lets the store take writes again and the upstream answer
// without failing them.
func (f *fixture) recovered() {
	f.st.mu.Lock()
	f.st.failWrites = 0
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

// apiFacts counts the timeline's facts of kind from the service's calls.
func (f *fixture) apiFacts(kind string) int {
	n := 0
	for _, fact := range f.timeline() {
		if fact.Origin == payments.OriginAPI && fact.Kind == kind {
			n++
		}
	}
	return n
}

// notify applies a notification item of a payment the service knows.
func (f *fixture) notify(it payments.Notification) {
	f.t.Helper()
	if _, err := payments.ApplyNotification(f.ctx, f.st, it, payments.NotificationOptions{
		Now: f.clk.Now(), CaptureMode: tenant.CaptureManual,
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
			if v := f.payment().View(); v.CapturesInFlight != 400 || v.Captured != 0 || f.apiFacts("capture") != 0 {
				t.Fatalf("before: the capture must still be in flight: %+v", v)
			}
			for _, s := range tc.steps {
				switch s {
				case "update":
					f.applyUpdate(u)
				case "capture":
					f.mustApply(capture)
				case "failed":
					f.notify(failed)
				}
			}
			f.check(tc.want)
			if v := f.payment().View(); v.CapturesInFlight != 0 || f.apiFacts("capture") != 1 {
				t.Fatalf("in flight %d, %d API capture facts; want none and 1", v.CapturesInFlight, f.apiFacts("capture"))
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

// TestDeferredAnswersApplyOnce: the capture call got no definitive
// answer, or a refusal, and recording it was deferred: applied twice, it
// is recorded once — unknown, the capture stays in flight (to be learnt
// by repeating the call); refused, nothing is in flight.
func TestDeferredAnswersApplyOnce(t *testing.T) {
	refusal := &payments.UpstreamRejection{Message: "Original pspReference required", Err: errors.New("upstream: HTTP 422")}
	for _, tc := range []struct {
		name     string
		err      error
		status   string
		inFlight int64
		fact     string
	}{
		{"no definitive answer", errUnavailable, "unknown", 300, "capture-unknown"},
		{"refused", refusal, "refused", 0, "capture-refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.advancedPayment("Authorised")
			d := f.deferring()
			svc := payments.NewService(f.st, failingCaptures{f.up, tc.err}, f.clk, slog.New(slog.NewTextHandler(io.Discard, nil))).
				RetryRecordWritesFor(0).DeferUpdatesTo(d)
			c := f.call()
			if _, err := svc.Capture(f.ctx, c, psp, payments.CaptureInput{Amount: money.Amount{Value: 300, Currency: "EUR"}}); err == nil {
				t.Fatal("capture succeeded")
			}
			if err := c.Wait(); err != nil {
				t.Fatal(err)
			}
			u := d.only(t)
			f.recovered()
			if u.Kind != payments.UpdateCapture || u.Status != tc.status {
				t.Fatalf("deferred %+v", u)
			}
			f.applyUpdate(u)
			f.applyUpdate(u)
			f.check(want{payments.StateAuthorised, 1000, 0, 0, 0})
			if v := f.payment().View(); v.CapturesInFlight != tc.inFlight || f.apiFacts(tc.fact) != 1 {
				t.Fatalf("record %+v, %d %s facts; want %d in flight, 1", v, f.apiFacts(tc.fact), tc.fact, tc.inFlight)
			}
		})
	}
}

// failingCaptures fails captures with err after their request is written
// (the store fails as it answers).
type failingCaptures struct {
	*fakeUpstream
	err error
}

func (u failingCaptures) Modify(ctx context.Context, r payments.ModificationRequest) (payments.ModificationAnswer, error) {
	if r.Kind != payments.ModifyCapture {
		return u.fakeUpstream.Modify(ctx, r)
	}
	if u.during != nil {
		u.during("")
	}
	return payments.ModificationAnswer{}, u.err
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
				f.notify(item(payments.EventRefund, mod, psp, "true", 250, nil))
			case "failed":
				f.notify(item(payments.EventRefundFailed, mod, psp, "true", 250, nil))
			}
			f.applyUpdate(u)
			f.applyUpdate(u)
			f.checkRefunds(tc.state, tc.refunded, tc.inFlight)
			if n := f.apiFacts("refund"); n != 1 {
				t.Fatalf("%d API refund facts", n)
			}
			if tc.first == "" { // its notification after: counted once
				f.notify(item(payments.EventRefund, mod, psp, "true", 250, nil))
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
				f.notify(item(payments.EventCancelOrRefund, mod, psp, "false", 1000, nil))
				wantState = payments.StateAuthorised
			}
			f.applyUpdate(u)
			f.applyUpdate(u)
			if st := f.payment().View().State; st != wantState || f.apiFacts("reversal") != 1 {
				t.Fatalf("failure first %v: state %s, %d reversal facts; want %s, 1", failedFirst, st, f.apiFacts("reversal"), wantState)
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
			if p := f.payment(); p.Totals.AmountUpdatesInFlight != 1 {
				t.Fatal("the amount update is not marked in flight before its update lands")
			}
			want := int64(1500)
			if failedFirst {
				f.notify(item(payments.EventAuthorisationAdjustment, mod, psp, "false", 1500, nil))
				want = 1000
			}
			f.applyUpdate(u)
			f.applyUpdate(u)
			if p := f.payment(); p.Authorised != want || p.Totals.AmountUpdatesInFlight != 0 || f.apiFacts("amount-update") != 1 {
				t.Fatalf("failure first %v: authorised %d in flight %d facts %d; want %d, none, 1",
					failedFirst, p.Authorised, p.Totals.AmountUpdatesInFlight, f.apiFacts("amount-update"), want)
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
		f.st.failWrites = 1 << 30
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
		if p := f.payment(); f.apiFacts("payment") != 1 || p.Reference != "order-1" ||
			(!notifiedFirst && p.AuthorisationType != payments.AuthorisationPreAuth) {
			t.Fatalf("notified first %v: %d payment facts, record %+v", notifiedFirst, f.apiFacts("payment"), p)
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
		if v := f.payment().View(); v.CapturesInFlight != 100 {
			t.Fatalf("the capture stays in flight (its notification settles it): %+v", v)
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
