package payments_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/payments"
)

// keyedUpstream acts on each idempotency key once and replays its answer
// to a repeat, as the platform does. fail decides, per call, whether the
// answer is lost (the platform acted, the caller sees err) or the call
// refused or still running.
type keyedUpstream struct {
	payments.Upstream
	mu      sync.Mutex
	answers map[string]payments.ModificationAnswer
	reqs    []payments.ModificationRequest
	fail    func(n int) (act bool, err error) // n: 1-based call number
}

func (u *keyedUpstream) Modify(_ context.Context, req payments.ModificationRequest) (payments.ModificationAnswer, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reqs = append(u.reqs, req)
	act, err := true, error(nil)
	if u.fail != nil {
		act, err = u.fail(len(u.reqs))
	}
	a, seen := u.answers[req.IdempotencyKey]
	if !seen && act {
		a = payments.ModificationAnswer{PSPReference: fmt.Sprintf("MOD%013d", len(u.answers)+1), Status: "received"}
		u.answers[req.IdempotencyKey] = a
	}
	if err != nil {
		return payments.ModificationAnswer{}, err
	}
	return a, nil
}

// keyedFixture is an authorised payment of 1000 whose service calls a
// keyedUpstream (each call's fate decided by fail, nil: acts).
func keyedFixture(t *testing.T, fail func(n int) (bool, error)) (*fixture, *keyedUpstream) {
	f := authorisedFixture(t)
	up := &keyedUpstream{answers: map[string]payments.ModificationAnswer{}, fail: fail}
	f.svc = payments.NewService(f.st, up, f.clk, discardLog())
	return f, up
}

// recoverFixture is keyedFixture's payment whose first capture of 400 got
// no definitive answer.
func recoverFixture(t *testing.T, fail func(n int) (bool, error)) (*fixture, *keyedUpstream) {
	f, up := keyedFixture(t, fail)
	if _, err := f.capture(400); err == nil {
		t.Fatal("the capture's answer was not lost")
	}
	return f, up
}

func (f *fixture) recover() payments.Recovered {
	f.t.Helper()
	r, err := f.svc.Recover(f.ctx, f.st, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// TestRecoverLearnsALostAnswer: the platform took the capture and the
// answer was lost. The capture stays in flight until Recover, past
// RecoverAfter, repeats the same call under the same key: the platform's
// replay names the capture, which its notification then settles once.
func TestRecoverLearnsALostAnswer(t *testing.T) {
	f, up := recoverFixture(t, func(n int) (bool, error) {
		if n == 1 {
			return true, errUnavailable // acted, answer lost
		}
		return true, nil
	})
	if v := f.payment().View(); v.CapturesInFlight != 400 || v.Captured != 0 {
		t.Fatalf("after the lost answer: %+v", v)
	}
	if r := f.recover(); r != (payments.Recovered{}) || len(up.reqs) != 1 {
		t.Fatalf("recovered before RecoverAfter: %+v, %d calls", r, len(up.reqs))
	}
	f.clk.Advance(payments.RecoverAfter + time.Second)
	if r := f.recover(); r.Answered != 1 {
		t.Fatalf("recover: %+v", r)
	}
	if first, again := up.reqs[0], up.reqs[1]; fmt.Sprint(first) != fmt.Sprint(again) || first.IdempotencyKey == "" {
		t.Fatalf("the repeat is not the same call:\n%+v\n%+v", first, again)
	}
	f.check(want{payments.StatePartiallyCaptured, 1000, 400, 0, 0})
	if v := f.payment().View(); v.CapturesInFlight != 0 || v.Capturable != 600 {
		t.Fatalf("after recovery: %+v", v)
	}
	f.mustApply(item(payments.EventCapture, "MOD0000000000001", psp, "true", 400, nil))
	f.check(want{payments.StatePartiallyCaptured, 1000, 400, 0, 1})
	if r := f.recover(); r != (payments.Recovered{}) {
		t.Fatalf("a second pass found work: %+v", r)
	}
}

// TestRecoverOutcomes: the call never reached the platform (it acts on the
// repeat), is refused on the repeat, is still running there, or still
// gets no definitive answer.
func TestRecoverOutcomes(t *testing.T) {
	refused := &payments.UpstreamRejection{Message: "Insufficient balance on payment", Err: errors.New("upstream: HTTP 422")}
	for _, tc := range []struct {
		name     string
		repeat   error
		want     payments.Recovered
		captured int64
		inFlight int64
	}{
		{"acts on the repeat", nil, payments.Recovered{Answered: 1}, 400, 0},
		{"refused on the repeat", refused, payments.Recovered{Answered: 1}, 0, 0},
		{"still running at the platform", fmt.Errorf("%w: HTTP 409", payments.ErrUpstreamInFlight), payments.Recovered{Skipped: 1}, 0, 400},
		{"still no answer", errUnavailable, payments.Recovered{Unknown: 1}, 0, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, up := recoverFixture(t, func(n int) (bool, error) {
				if n == 1 {
					return false, errUnavailable // never reached the platform
				}
				return tc.repeat == nil, tc.repeat
			})
			f.clk.Advance(payments.RecoverAfter + time.Second)
			if r := f.recover(); r != tc.want {
				t.Fatalf("recover: %+v, want %+v", r, tc.want)
			}
			if v := f.payment().View(); v.Captured != tc.captured || v.CapturesInFlight != tc.inFlight {
				t.Fatalf("after recovery: %+v", v)
			}
			if len(up.reqs) != 2 {
				t.Fatalf("%d calls, want 2", len(up.reqs))
			}
		})
	}
}

// crashedCapture writes the request of a capture of value under upstream
// key, as a process that died before its call returned left it.
func (f *fixture) crashedCapture(key string, value int64) {
	f.t.Helper()
	e := payments.Entry{Ref: "op_" + key, Kind: payments.OpCapture, Version: 1, Requested: &payments.Request{
		Amount: eur(value), UpstreamKey: key, Account: merchant.UpstreamAccount, At: f.clk.Now()}}
	if err := f.st.Write(f.ctx, payments.Write{PSP: psp, Delta: e.Contribution(), Entries: []payments.Entry{e},
		Facts: []payments.Fact{}, At: f.clk.Now()}); err != nil {
		f.t.Fatal(err)
	}
}

// TestRecoverCrashBeforeTheAnswer: the request was written, then the
// process died before the call returned (nothing answered recorded):
// Recover repeats the call and the capture is learnt.
func TestRecoverCrashBeforeTheAnswer(t *testing.T) {
	f, up := keyedFixture(t, nil)
	const key = "crashed-upstream-key-00000000000000000000"
	f.crashedCapture(key, 300)
	f.clk.Advance(payments.RecoverAfter + time.Second)
	if r := f.recover(); r.Answered != 1 || up.reqs[0].IdempotencyKey != key || up.reqs[0].Amount != eur(300) {
		t.Fatalf("recover: %+v, calls %+v", r, up.reqs)
	}
	f.check(want{payments.StatePartiallyCaptured, 1000, 300, 0, 0})
}

// TestRecoverBeforeAfterACrash: the platform took a capture of 300 and the
// process died before the answer reached the record (the response may
// still have been stored for the merchant's retry to replay); the
// capture's notification, under a pspReference the record does not know,
// is booked first. A restarted single process repairs its predecessor's
// operations at once (RecoverBefore its start, no RecoverAfter to wait):
// the repeat's replay binds the operation to the notified capture,
// counted once, nothing left in flight. An operation requested after
// `before` is left to the regular passes.
func TestRecoverBeforeAfterACrash(t *testing.T) {
	f, up := keyedFixture(t, nil)
	const key = "crashed-upstream-key-00000000000000000000"
	f.crashedCapture(key, 300)
	up.answers[key] = payments.ModificationAnswer{PSPReference: "MOD0000000000001", Status: "received"} // acted: its answer lost with the process
	f.mustApply(item(payments.EventCapture, "MOD0000000000001", psp, "true", 300, nil))
	if v := f.payment().View(); v.Captured != 300 || v.CapturesInFlight != 300 {
		t.Fatalf("after the crash and the notification: %+v; want 300 captured and the lost answer's 300 in flight", v)
	}
	f.clk.Advance(time.Second)
	started := f.clk.Now()
	if r, err := f.svc.RecoverBefore(f.ctx, f.st, started, 100); err != nil || r != (payments.Recovered{Answered: 1}) {
		t.Fatalf("RecoverBefore the restart: %+v, %v; want 1 answered", r, err)
	}
	if len(up.reqs) != 1 || up.reqs[0].IdempotencyKey != key {
		t.Fatalf("calls %+v, want the one repeat under the first key", up.reqs)
	}
	f.check(want{payments.StatePartiallyCaptured, 1000, 300, 0, 1})
	if v := f.payment().View(); v.CapturesInFlight != 0 || v.Capturable != 700 {
		t.Fatalf("after recovery: %+v", v)
	}

	// A capture this process requested after it started is not an orphan.
	up.fail = func(int) (bool, error) { return true, errUnavailable }
	f.clk.Advance(time.Second)
	if _, err := f.capture(100); err == nil {
		t.Fatal("the second capture's answer was not lost")
	}
	if r, err := f.svc.RecoverBefore(f.ctx, f.st, started, 100); err != nil || r != (payments.Recovered{}) {
		t.Fatalf("RecoverBefore the restart, with a capture of this process in flight: %+v, %v; want nothing", r, err)
	}
}

// TestRecoverLeavesKeylessOperations: an operation an earlier release
// started without an idempotency key cannot be repeated safely: it waits
// for its notification.
func TestRecoverLeavesKeylessOperations(t *testing.T) {
	f, up := keyedFixture(t, nil)
	e := payments.Entry{Ref: "op_0123456789abcdef01234567", Kind: payments.OpCapture, Version: 1,
		Requested: &payments.Request{Amount: eur(300), At: f.clk.Now()}}
	if err := f.st.Write(f.ctx, payments.Write{PSP: psp, Delta: e.Contribution(), Entries: []payments.Entry{e}, At: f.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(payments.RecoverAfter + time.Second)
	if r := f.recover(); r != (payments.Recovered{}) || len(up.reqs) != 0 {
		t.Fatalf("recover: %+v, %d calls", r, len(up.reqs))
	}
}

// TestMerchantRetryLearnsTheAnswer: the merchant's retry with the same
// Idempotency-Key repeats the call; the platform's replay is recorded over
// the unknown answer, and the capture counts once.
func TestMerchantRetryLearnsTheAnswer(t *testing.T) {
	f, _ := keyedFixture(t, func(n int) (bool, error) {
		if n == 1 {
			return true, errUnavailable
		}
		return true, nil
	})
	const key = "merchant-derived-upstream-key-0000000000"
	for i := range 2 {
		c := &payments.Call{Merchant: merchant, Site: site, UpstreamKey: key}
		_, err := f.svc.Capture(f.ctx, c, psp, payments.CaptureInput{Amount: eur(400)})
		if werr := c.Wait(); werr != nil {
			t.Fatal(werr)
		}
		if (i == 0) != (err != nil) {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	f.check(want{payments.StatePartiallyCaptured, 1000, 400, 0, 0})
	if v := f.payment().View(); v.CapturesInFlight != 0 {
		t.Fatalf("after the retry: %+v", v)
	}
	if f.apiFacts("capture-unknown") != 1 || f.apiFacts("capture") != 1 {
		t.Fatalf("timeline %+v", f.timeline())
	}
}

// lostCounts is a RecordMetrics counting lost record writes by kind.
type lostCounts struct {
	mu   sync.Mutex
	lost map[string]int
}

func (c *lostCounts) RecordUpdateLost(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost == nil {
		c.lost = map[string]int{}
	}
	c.lost[kind]++
}

// TestLostAnswerRepairedByRecover: per kind of operation, the store
// refuses the write of the platform's answer for the whole retry window
// (lost: logged and counted). The merchant still gets the platform's
// answer and the operation stays in flight; the recovery pass repeats the
// call under its key and records the answer, and the operation's
// notification — before the pass, after it, or not at all — counts once:
// the record equals a normal run's.
func TestLostAnswerRepairedByRecover(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		first func(f *fixture) // before the operation
		op    func(f *fixture, c *payments.Call) (payments.ModificationResult, error)
		// notice is the operation's notification (its pspReference mod).
		notice func(mod string) payments.Notification
	}{
		{kind: "capture",
			op: func(f *fixture, c *payments.Call) (payments.ModificationResult, error) {
				return f.svc.Capture(f.ctx, c, psp, payments.CaptureInput{Amount: eur(400)})
			},
			notice: func(mod string) payments.Notification { return item(payments.EventCapture, mod, psp, "true", 400, nil) }},
		{kind: "refund",
			first: func(f *fixture) {
				f.must(f.capture(600))
			},
			op: func(f *fixture, c *payments.Call) (payments.ModificationResult, error) {
				return f.svc.Refund(f.ctx, c, psp, refundOf(250))
			},
			notice: func(mod string) payments.Notification { return item(payments.EventRefund, mod, psp, "true", 250, nil) }},
		// A reversal of an uncaptured payment is the platform's cancel
		// (counted as one), of a captured one a refund.
		{kind: "cancel",
			op: func(f *fixture, c *payments.Call) (payments.ModificationResult, error) {
				return f.svc.Reverse(f.ctx, c, psp, payments.ReversalInput{})
			},
			notice: func(mod string) payments.Notification {
				return item(payments.EventCancellation, mod, psp, "true", 1000, nil)
			}},
		{kind: "refund",
			first: func(f *fixture) {
				f.must(f.capture(1000))
			},
			op: func(f *fixture, c *payments.Call) (payments.ModificationResult, error) {
				return f.svc.Reverse(f.ctx, c, psp, payments.ReversalInput{})
			},
			notice: func(mod string) payments.Notification { return item(payments.EventRefund, mod, psp, "true", 1000, nil) }},
		{kind: "amount-update",
			op: func(f *fixture, c *payments.Call) (payments.ModificationResult, error) {
				return f.svc.UpdateAmount(f.ctx, c, psp, payments.AmountUpdateInput{Amount: eur(1500)})
			},
			notice: func(mod string) payments.Notification {
				return item(payments.EventAuthorisationAdjustment, mod, psp, "true", 1500, nil)
			}},
	} {
		for _, notified := range []string{"none", "before the pass", "after the pass"} {
			t.Run(tc.kind+"/notified "+notified, func(t *testing.T) {
				run := func(lose bool) *fixture {
					f, up := keyedFixture(t, nil)
					m := &lostCounts{}
					f.svc.RetryRecordWritesFor(0).CountRecordUpdates(m)
					if tc.first != nil {
						tc.first(f)
					}
					up.fail = func(int) (bool, error) {
						if lose {
							f.st.mu.Lock()
							f.st.failWrites = 1 << 30
							f.st.mu.Unlock()
						}
						return true, nil
					}
					c := f.call()
					res, err := tc.op(f, c)
					werr := c.Wait()
					f.st.mu.Lock()
					f.st.failWrites = 0
					f.st.mu.Unlock()
					up.fail = nil
					if err != nil || res.Status != "received" {
						t.Fatalf("lose %v: %+v, %v (the platform's answer stands)", lose, res, err)
					}
					if lose != (werr != nil) || lose != (m.lost[tc.kind] == 1) {
						t.Fatalf("lose %v: Wait %v, lost %v", lose, werr, m.lost)
					}
					if lose && !inFlight(f.payment()) {
						t.Fatalf("the lost answer's operation is not in flight: %+v", f.payment().Totals)
					}
					if notified == "before the pass" {
						f.mustApply(tc.notice(res.PSPReference))
					}
					f.clk.Advance(payments.RecoverAfter + time.Second)
					if r := f.recover(); r.Answered != map[bool]int{true: 1}[lose] {
						t.Fatalf("lose %v: recovered %+v", lose, r)
					}
					if notified == "after the pass" {
						f.mustApply(tc.notice(res.PSPReference))
					}
					return f
				}
				want, got := run(false), run(true)
				w, g := want.payment(), got.payment()
				if g.View() != w.View() || g.Totals != w.Totals || g.Authorised != w.Authorised || len(g.AmountUpdates) != len(w.AmountUpdates) {
					t.Fatalf("repaired record %+v %+v, a normal run's %+v %+v", g.View(), g.Totals, w.View(), w.Totals)
				}
				if gk, wk := factKinds(got.timeline()), factKinds(want.timeline()); gk != wk {
					t.Fatalf("repaired timeline %s, a normal run's %s", gk, wk)
				}
			})
		}
	}
}

// inFlight reports an operation of head h in flight.
func inFlight(h payments.Head) bool {
	t := h.Totals
	return t.CapturesInFlight != 0 || t.RefundsInFlight != 0 || t.ReversalsInFlight != 0 || t.AmountUpdatesInFlight != 0 || t.CancelsInFlight != 0
}

// factKinds lists a timeline's kinds and origins, sorted.
func factKinds(facts []payments.Fact) string {
	var out []string
	for _, f := range facts {
		out = append(out, f.Kind+"/"+f.Origin)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
