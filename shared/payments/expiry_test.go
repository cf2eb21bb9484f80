package payments_test

import (
	"context"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

const day = 24 * time.Hour

// TestAuthorisationExpiry: the expiry is the authorisation's time plus the
// method's validity (docs/expiry.md's table), while something is
// capturable on a manual-capture payment of a method captured separately.
func TestAuthorisationExpiry(t *testing.T) {
	yes := true
	authorised := func(method string, mode tenant.CaptureMode) payments.Head {
		h := payments.Head{PSPReference: "PSP1", Amount: money.Amount{Value: 1000, Currency: "EUR"}, CaptureMode: mode,
			PaymentMethod: method, Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Authorised: 1000, AuthorisedAt: t0}
		h.Totals = payments.Fold(h, nil)
		return h
	}
	captured := authorised("visa", tenant.CaptureManual)
	captured.Totals.Captured, captured.Totals.Capturable = 1000, 0
	released := authorised("visa", tenant.CaptureManual)
	released.Totals.Released = 1
	unstamped := authorised("visa", tenant.CaptureManual)
	unstamped.AuthorisedAt = time.Time{}
	for _, tc := range []struct {
		name   string
		h      payments.Head
		want   time.Duration // from t0; 0: none
		listed bool
	}{
		{"card", authorised("visa", tenant.CaptureManual), 28 * day, true},
		{"wallet on a card", authorised("mc_applepay", tenant.CaptureManual), 28 * day, true},
		{"Cartes Bancaires", authorised("cartebancaire", tenant.CaptureManual), 12 * day, true},
		{"PayPal", authorised("paypal", tenant.CaptureManual), 3 * day, true},
		{"Klarna", authorised("klarna", tenant.CaptureManual), 28 * day, true},
		{"unknown method: the default", authorised("newpay", tenant.CaptureManual), 28 * day, true},
		{"method captured at authorisation", authorised("ideal", tenant.CaptureManual), 0, false},
		{"auto capture", authorised("visa", tenant.CaptureAuto), 0, false},
		{"captured in full", captured, 0, false},
		{"remainder released", released, 0, false},
		{"no authorisation time", unstamped, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, src, ok := tc.h.AuthorisationExpiry()
			if ok != (tc.want != 0) || ok && (!at.Equal(t0.Add(tc.want)) || src != "table") {
				t.Fatalf("AuthorisationExpiry = %v %q %v, want %v after t0", at, src, ok, tc.want)
			}
			if _, due := tc.h.ExpiryDue(); due != tc.listed {
				t.Fatalf("ExpiryDue %v, want %v", due, tc.listed)
			}
			done := tc.h
			done.ExpiryNoticeDone = true
			if _, due := done.ExpiryDue(); due {
				t.Fatal("due after its notice")
			}
		})
	}
}

// staleIndex lists the payment whatever its head says, as a store's index
// may (an entry a Delta left behind): the notice pass reads the head.
type staleIndex struct{}

func (staleIndex) Expiring(context.Context, time.Time, int) ([]string, error) {
	return []string{psp}, nil
}

// TestExpiryNotices: the notice goes out once the authorisation expires
// within the lead, with the uncaptured amount and the expiry, once; a
// payment captured meanwhile is dropped from the index without one.
func TestExpiryNotices(t *testing.T) {
	for _, tc := range []struct {
		name          string
		capture       int64
		sent, dropped int
		amount        int64
	}{
		{"uncaptured", 0, 1, 0, 1000},
		{"partly captured", 400, 1, 0, 600},
		{"captured in full", 1000, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := authorisedFixture(t)
			if at, _, ok := f.payment().AuthorisationExpiry(); !ok || !at.Equal(t0.Add(28*day)) {
				t.Fatalf("expiry %v %v, want t0 + 28 days", at, ok)
			}
			if tc.capture > 0 {
				f.must(f.capture(tc.capture))
			}
			var got []payments.Notification
			emit := func(_ context.Context, n payments.Notification) error { got = append(got, n); return nil }
			pass := func(idx interface {
				Expiring(context.Context, time.Time, int) ([]string, error)
			}) (int, int) {
				t.Helper()
				sent, dropped, err := f.svc.ExpiryNotices(f.ctx, idx, day, 100, emit)
				if err != nil {
					t.Fatal(err)
				}
				return sent, dropped
			}
			f.clk.Advance(27*day - time.Minute)
			if s, d := pass(f.st); s != 0 || d != 0 {
				t.Fatalf("before the lead: sent %d dropped %d", s, d)
			}
			f.clk.Advance(2 * time.Minute)
			if s, d := pass(staleIndex{}); s != tc.sent || d != tc.dropped {
				t.Fatalf("sent %d dropped %d, want %d %d", s, d, tc.sent, tc.dropped)
			}
			if s, d := pass(f.st); s != 0 || d != 0 {
				t.Fatalf("second pass (the store's index): sent %d dropped %d", s, d)
			}
			if len(got) != tc.sent {
				t.Fatalf("%d notices emitted", len(got))
			}
			if tc.sent == 1 {
				n := got[0]
				if n.EventCode != "paysvc.authorisation.expiring" || n.PSPReference != psp || n.Amount.Value != tc.amount ||
					n.AdditionalData["authorisationExpiresAt"] != t0.Add(28*day).Format(time.RFC3339) ||
					n.AdditionalData["authorisationExpirySource"] != "table" || n.OriginalReference != "" {
					t.Fatalf("notice %+v", n)
				}
			}
			if !f.payment().ExpiryNoticeDone {
				t.Fatal("the head is still due")
			}
		})
	}
}
