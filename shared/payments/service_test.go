package payments_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/payments"
)

// paymentsUpstream answers payments and sessions, or err when set, and
// records the requests and keys it was sent.
type paymentsUpstream struct {
	payments.Upstream
	mu       sync.Mutex
	err      error
	payments []payments.PaymentRequest
	sessions []payments.SessionRequest
	keys     []string
}

func (u *paymentsUpstream) Pay(_ context.Context, req payments.PaymentRequest) (payments.PaymentAnswer, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.payments, u.keys = append(u.payments, req), append(u.keys, req.IdempotencyKey)
	if u.err != nil {
		return payments.PaymentAnswer{}, u.err
	}
	return payments.PaymentAnswer{ResultCode: "Authorised", PSPReference: psp, MerchantReference: req.Reference}, nil
}

func (u *paymentsUpstream) CreateSession(_ context.Context, req payments.SessionRequest) (payments.SessionAnswer, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sessions, u.keys = append(u.sessions, req), append(u.keys, req.IdempotencyKey)
	if u.err != nil {
		return payments.SessionAnswer{}, u.err
	}
	return payments.SessionAnswer{ID: "CS1", SessionData: "data"}, nil
}

// TestCallCarriesTheUpstreamKey: the key on the Call is what the upstream
// gets, and a reference the merchant did not give is derived from it, so
// a retry sends the upstream the same request; without a key, a random
// reference and no key.
func TestCallCarriesTheUpstreamKey(t *testing.T) {
	const key = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	for _, tc := range []struct {
		name, key, wantRef string
	}{
		{"under an Idempotency-Key", key, "pay_" + key[:24]},
		{"without", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, up := newMemStore(), &paymentsUpstream{}
			svc := newCaptureService(st, up)
			c := &payments.Call{Merchant: merchant, Site: site, UpstreamKey: tc.key}
			res, err := svc.StartPayment(context.Background(), c, payments.PaymentInput{Amount: eur(1000)})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Wait(); err != nil {
				t.Fatal(err)
			}
			ref := up.payments[0].Reference
			if up.keys[0] != tc.key || (tc.wantRef != "" && ref != tc.wantRef) || !strings.HasPrefix(ref, "pay_") || res.MerchantReference != ref {
				t.Fatalf("upstream key %q reference %q (answer %q)", up.keys[0], ref, res.MerchantReference)
			}
			if !c.UpstreamCalled() {
				t.Fatal("not marked as having called the upstream")
			}
			// The record was written before Wait returned.
			if p := record(t, st); p.Reference != ref || p.View().State != payments.StateAuthorised || p.MerchantID != merchant.ID {
				t.Fatalf("record %+v", p)
			}
		})
	}
}

// TestUpstreamRefusalIsTheUpstreamsAnswer: a refusal by the upstream is
// Invalid with its message and the call is marked, so idempotency keeps
// the answer; an unavailable upstream is the endpoint's failure kind.
func TestUpstreamRefusalIsTheUpstreamsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want apperr.Kind
	}{
		{"refused", &payments.UpstreamRejection{Message: "Return URL is missing.", Err: errors.New("upstream: HTTP 422")}, apperr.Invalid},
		{"no definitive answer (our credentials refused, 5xx, timeout)", errUnavailable, apperr.SessionFailed},
		{"in flight", fmt.Errorf("%w: upstream: HTTP 409", payments.ErrUpstreamInFlight), apperr.IdempotencyInFlight},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &paymentsUpstream{err: tc.err}
			c := &payments.Call{Merchant: merchant, Site: site}
			_, err := newCaptureService(newMemStore(), up).CreateSession(context.Background(), c, payments.SessionInput{Amount: eur(1000)})
			if e := apperr.As(err); e.Kind != tc.want {
				t.Fatalf("err %v (kind %d), want %d", err, e.Kind, tc.want)
			}
			if !c.UpstreamCalled() {
				t.Fatal("the upstream was called")
			}
			if tc.want == apperr.Invalid && !strings.Contains(err.Error(), "Return URL is missing.") {
				t.Fatalf("the upstream's message is lost: %v", err)
			}
			if err := c.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSessionRecordErrorFailsTheCall: a session whose record cannot be
// written (the store refuses it for the whole retry window) is not
// answered: the merchant never gets its sessionData, and the error says
// why; its retry gets the same session from the platform (same key) and
// records it.
func TestSessionRecordErrorFailsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // the record's retries wait on the bubble's clock
		st := &failingSessions{memStore: newMemStore()}
		st.down.Store(true)
		svc := newCaptureService(st, &paymentsUpstream{})
		c := &payments.Call{Merchant: merchant, Site: site, UpstreamKey: "session-upstream-key-0123456789abcdefghijk"}
		res, err := svc.CreateSession(context.Background(), c, payments.SessionInput{Amount: eur(1000)})
		if apperr.KindOf(err) != apperr.Internal || !strings.Contains(err.Error(), "store session record CS1") || res.SessionData != "" {
			t.Fatalf("session %+v, %v; want an internal error naming the record", res, err)
		}
		st.down.Store(false)
		c = &payments.Call{Merchant: merchant, Site: site, UpstreamKey: c.UpstreamKey}
		if res, err := svc.CreateSession(context.Background(), c, payments.SessionInput{Amount: eur(1000)}); err != nil || res.ID != "CS1" {
			t.Fatalf("retry: %+v, %v", res, err)
		}
		if s, err := st.GetSession(context.Background(), "CS1"); err != nil || s.SiteID != site.ID {
			t.Fatalf("session record %+v, %v", s, err)
		}
	})
}

// failingSessions refuses session records while down.
type failingSessions struct {
	*memStore
	down atomic.Bool
}

func (s *failingSessions) PutSession(ctx context.Context, rec payments.Session) error {
	if s.down.Load() {
		return errSessionsDown
	}
	return s.memStore.PutSession(ctx, rec)
}

var errSessionsDown = errors.New("sessions table down")
