package payments_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

func refundOf(v int64) payments.RefundInput {
	return payments.RefundInput{Amount: money.Amount{Value: v, Currency: "EUR"}}
}

// captured is a fixture whose payment is authorised and captured in full.
func captured(t *testing.T) *fixture {
	f := authorisedFixture(t)
	f.must(f.capture(1000))
	return f
}

// refund refunds value EUR of the payment through the service and waits
// for its record update.
func (f *fixture) refund(v int64) (payments.ModificationResult, error) {
	return refundWith(f, f.svc, merchant, site, refundOf(v))
}

func refundWith(f *fixture, svc *payments.Service, m tenant.Merchant, s tenant.Site, in payments.RefundInput) (payments.ModificationResult, error) {
	c := &payments.Call{Merchant: m, Site: s}
	r, err := svc.Refund(f.ctx, c, psp, in)
	return r, errors.Join(err, c.Wait())
}

// checkRefunds checks the refunded amount, the refunds in flight and the state.
func (f *fixture) checkRefunds(state payments.State, refunded, inFlight int64) {
	f.t.Helper()
	v := f.payment().View()
	if v.State != state || v.Refunded != refunded || v.RefundsInFlight != inFlight {
		f.t.Fatalf("state %s refunded %d in flight %d; want %s %d %d\ntimeline %+v",
			v.State, v.Refunded, v.RefundsInFlight, state, refunded, inFlight, f.timeline())
	}
}

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	e := apperr.As(err)
	if e.Kind != apperr.Invalid {
		t.Fatalf("err %v (kind %d), want 400", err, e.Kind)
	}
	if field != "" && (len(e.Fields) == 0 || e.Fields[0].Field != field) {
		t.Fatalf("err %v fields %v, want %s named", err, e.Fields, field)
	}
}

// Partial and multiple refunds: each is in flight until its notification,
// counts against what may be refunded, and REFUND / REFUND_FAILED settle
// or release it.
func TestRefundsPartialAndMultiple(t *testing.T) {
	f := captured(t)
	r1, err := f.refund(300)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Status != "received" || r1.PaymentPSPReference != psp || r1.PSPReference == "" {
		t.Fatalf("answer %+v", r1)
	}
	f.checkRefunds(payments.StateCaptured, 0, 300)
	_, err = f.refund(701)
	wantInvalid(t, err, "amount.value")
	r2, err := f.refund(700)
	if err != nil {
		t.Fatal(err)
	}
	f.checkRefunds(payments.StateCaptured, 0, 1000)
	_, err = f.refund(1)
	wantInvalid(t, err, "amount.value")

	f.mustApply(item(payments.EventRefund, r1.PSPReference, psp, "true", 300, nil))
	f.checkRefunds(payments.StatePartiallyRefunded, 300, 700)
	f.mustApply(item(payments.EventRefundFailed, r2.PSPReference, psp, "true", 700, nil))
	f.checkRefunds(payments.StatePartiallyRefunded, 300, 0)
	// Duplicates change nothing.
	f.mustApply(item(payments.EventRefund, r1.PSPReference, psp, "true", 300, nil),
		item(payments.EventRefundFailed, r2.PSPReference, psp, "true", 700, nil))
	f.checkRefunds(payments.StatePartiallyRefunded, 300, 0)
	// The released 700 may be refunded again, then the payment is refunded.
	r3, err := f.refund(700)
	if err != nil {
		t.Fatal(err)
	}
	f.mustApply(item(payments.EventRefund, r3.PSPReference, psp, "true", 700, nil))
	f.checkRefunds(payments.StateRefunded, 1000, 0)
	_, err = f.refund(1)
	wantInvalid(t, err, "")
}

func TestRefundRefused(t *testing.T) {
	f := authorisedFixture(t)
	_, err := f.refund(100)
	wantInvalid(t, err, "") // authorised, not captured

	f = captured(t)
	_, err = refundWith(f, f.svc, merchant, site, payments.RefundInput{Amount: money.Amount{Value: 100, Currency: "USD"}})
	wantInvalid(t, err, "amount.currency")
	other := tenant.Site{ID: "site_b", MerchantID: "m_a"}
	if _, err := refundWith(f, f.svc, merchant, other, refundOf(100)); apperr.KindOf(err) != apperr.PaymentNotFound {
		t.Fatalf("another site's payment: %v", err)
	}
	m2 := merchant
	m2.ID = "m_b"
	if _, err := refundWith(f, f.svc, m2, tenant.Site{ID: "site_a", MerchantID: "m_b"}, refundOf(100)); apperr.KindOf(err) != apperr.PaymentNotFound {
		t.Fatalf("another merchant's payment: %v", err)
	}
	f.checkRefunds(payments.StateCaptured, 0, 0)
}

// failingRefunds fails every refund call like an upstream 500.
type failingRefunds struct{ *fakeUpstream }

func (u failingRefunds) Modify(ctx context.Context, r payments.ModificationRequest) (payments.ModificationAnswer, error) {
	if r.Kind != payments.OpRefund {
		return u.fakeUpstream.Modify(ctx, r)
	}
	return payments.ModificationAnswer{}, errors.New("upstream: HTTP 500: boom")
}

// An upstream failure without a definitive answer is the refund's 500 and
// leaves the refund in flight: the platform may have taken it, so its
// amount stays out of what may be refunded until the answer is learnt.
func TestRefundUpstreamFailureStaysInFlight(t *testing.T) {
	f := captured(t)
	svc := payments.NewService(f.st, failingRefunds{f.up}, f.clk, discardLog())
	_, err := refundWith(f, svc, merchant, site, refundOf(400))
	if apperr.KindOf(err) != apperr.RefundFailed {
		t.Fatalf("err %v, want RefundFailed", err)
	}
	f.checkRefunds(payments.StateCaptured, 0, 400)
	if f.apiFacts("refund-requested") != 1 || f.apiFacts("refund-unknown") != 1 {
		t.Fatalf("timeline %+v", f.timeline())
	}
	_, err = f.refund(601)
	wantInvalid(t, err, "amount.value")
}

// Notifications overtaking the service's own record of the call.
func TestRefundNotificationsDuringTheCall(t *testing.T) {
	f := captured(t)
	f.up.during = func(mod string) { f.mustApply(item(payments.EventRefund, mod, psp, "true", 400, nil)) }
	f.must(f.refund(400))
	f.checkRefunds(payments.StatePartiallyRefunded, 400, 0)

	f = captured(t)
	f.up.during = func(mod string) { f.mustApply(item(payments.EventRefundFailed, mod, psp, "true", 400, nil)) }
	r, err := f.refund(400)
	if err != nil {
		t.Fatal(err)
	}
	f.checkRefunds(payments.StateCaptured, 0, 0)
	f.mustApply(item(payments.EventRefundFailed, r.PSPReference, psp, "true", 400, nil)) // the upstream's retry
	f.checkRefunds(payments.StateCaptured, 0, 0)
}

// A refund confirmed and then reported failed is taken back.
func TestRefundConfirmedThenFailed(t *testing.T) {
	f := captured(t)
	r, err := f.refund(1000)
	if err != nil {
		t.Fatal(err)
	}
	f.mustApply(item(payments.EventRefund, r.PSPReference, psp, "true", 1000, nil))
	f.checkRefunds(payments.StateRefunded, 1000, 0)
	f.mustApply(item(payments.EventRefundFailed, r.PSPReference, psp, "true", 1000, nil))
	f.checkRefunds(payments.StateCaptured, 0, 0)
}

// Concurrent refunds never exceed what was captured.
func TestConcurrentRefundsNeverExceedCaptured(t *testing.T) {
	f := captured(t)
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.refund(100)
			switch apperr.KindOf(err) {
			case apperr.Invalid:
				refused.Add(1)
			default:
				if err != nil {
					t.Errorf("refund: %v", err)
					return
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 || refused.Load() != 15 {
		t.Fatalf("%d accepted, %d refused; want 10 and 15", ok.Load(), refused.Load())
	}
	f.checkRefunds(payments.StateCaptured, 0, 1000)
}

func discardLog() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }
