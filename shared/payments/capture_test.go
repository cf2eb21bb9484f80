package payments_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
)

// These tests drive the domain's capture reservation and the per-call
// value (payments.Call) against in-memory fakes of its two ports.

// captureUpstream answers captures "received", or err when set, and
// records what it was sent.
type captureUpstream struct {
	payments.Upstream // other calls are not made here
	mu                sync.Mutex
	err               error
	n                 int
	reqs              []payments.ModificationRequest
	keys              []string
}

func (u *captureUpstream) Modify(_ context.Context, req payments.ModificationRequest) (payments.ModificationAnswer, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reqs = append(u.reqs, req)
	u.keys = append(u.keys, req.IdempotencyKey)
	if u.err != nil {
		return payments.ModificationAnswer{}, u.err
	}
	u.n++
	return payments.ModificationAnswer{PSPReference: fmt.Sprintf("CAP%013d", u.n), Status: "received"}, nil
}

func (u *captureUpstream) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

// failingSaves fails every SavePayment once armed.
type failingSaves struct {
	*memStore
	armed atomic.Bool
}

func (s *failingSaves) SavePayment(ctx context.Context, p payments.Payment, prev int64) error {
	if s.armed.Load() {
		return errors.New("disk on fire")
	}
	return s.memStore.SavePayment(ctx, p, prev)
}

// authorised stores an authorised payment of 1000 EUR of merchant/site.
func authorised(t *testing.T, st payments.Store) {
	t.Helper()
	p := payments.Payment{
		PSPReference: psp, MerchantID: merchant.ID, SiteID: site.ID, Source: payments.SourceAdvanced,
		Amount: eur(1000), AuthorisedValue: 1000, State: payments.StateAuthorised, Version: 1, CreatedAt: t0, UpdatedAt: t0,
	}
	if err := st.SavePayment(context.Background(), p, 0); err != nil {
		t.Fatal(err)
	}
}

func eur(v int64) money.Amount { return money.Amount{Value: v, Currency: "EUR"} }

func newCaptureService(st payments.Store, up payments.Upstream) *payments.Service {
	return payments.NewService(st, up, clock.NewFake(t0), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func record(t *testing.T, st payments.Store) payments.Payment {
	t.Helper()
	p, err := st.GetPayment(context.Background(), psp)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func historyKinds(p payments.Payment) string {
	var kinds []string
	for _, e := range p.History {
		kinds = append(kinds, e.Kind)
	}
	return strings.Join(kinds, ",")
}

func TestCapture(t *testing.T) {
	for _, tc := range []struct {
		name        string
		amounts     []money.Amount // captured in turn; the last one is checked
		upstreamErr error
		wantKind    apperr.Kind // of the last capture; 0 = success
		wantField   string
		wantCalled  bool // the last capture reached the upstream
		wantState   payments.State
		wantValue   int64 // captured value after the last capture
		wantHistory string
	}{
		{name: "partial", amounts: []money.Amount{eur(600)}, wantCalled: true,
			wantState: payments.StatePartiallyCaptured, wantValue: 600, wantHistory: "capture-requested,capture"},
		{name: "in two parts to the full amount", amounts: []money.Amount{eur(600), eur(400)}, wantCalled: true,
			wantState: payments.StateCaptured, wantValue: 1000, wantHistory: "capture-requested,capture,capture-requested,capture"},
		{name: "more than remains: refused before the upstream", amounts: []money.Amount{eur(600), eur(401)},
			wantKind: apperr.Invalid, wantField: "amount.value",
			wantState: payments.StatePartiallyCaptured, wantValue: 600, wantHistory: "capture-requested,capture"},
		{name: "another currency: refused before the upstream", amounts: []money.Amount{{Value: 100, Currency: "USD"}},
			wantKind: apperr.Invalid, wantField: "amount.currency", wantState: payments.StateAuthorised},
		{name: "upstream refuses: reservation released", amounts: []money.Amount{eur(600)},
			upstreamErr: &payments.UpstreamRejection{Message: "Original pspReference required", Err: errors.New("upstream: HTTP 422 errorCode 167")},
			wantKind:    apperr.Invalid, wantCalled: true,
			wantState: payments.StateAuthorised, wantValue: 0, wantHistory: "capture-requested,capture-released"},
		{name: "upstream unavailable: reservation released", amounts: []money.Amount{eur(600)},
			upstreamErr: errUnavailable, wantKind: apperr.CaptureFailed, wantCalled: true,
			wantState: payments.StateAuthorised, wantValue: 0, wantHistory: "capture-requested,capture-released"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, up := newMemStore(), &captureUpstream{}
			authorised(t, st)
			svc := newCaptureService(st, up)
			var c *payments.Call
			var err error
			for i, a := range tc.amounts {
				if i == len(tc.amounts)-1 {
					up.err = tc.upstreamErr
				}
				c = &payments.Call{Merchant: merchant, Site: site}
				_, err = svc.Capture(context.Background(), c, psp, payments.CaptureInput{Amount: a})
				if werr := c.Wait(); werr != nil {
					t.Fatalf("record writes: %v", werr)
				}
			}
			e := apperr.As(err)
			switch {
			case tc.wantKind == 0 && err != nil:
				t.Fatalf("capture: %v", err)
			case tc.wantKind != 0 && e.Kind != tc.wantKind:
				t.Fatalf("capture: %v (kind %d), want kind %d", err, e.Kind, tc.wantKind)
			case tc.wantField != "" && (len(e.Fields) != 1 || e.Fields[0].Field != tc.wantField):
				t.Fatalf("capture: fields %+v, want %s", e.Fields, tc.wantField)
			}
			if c.UpstreamCalled() != tc.wantCalled {
				t.Fatalf("UpstreamCalled = %v, want %v", c.UpstreamCalled(), tc.wantCalled)
			}
			p := record(t, st)
			if p.State != tc.wantState || p.CapturedValue != tc.wantValue || len(p.Reservations) != 0 || historyKinds(p) != tc.wantHistory {
				t.Fatalf("record: state %s captured %d reservations %v history %s; want %s %d none %s",
					p.State, p.CapturedValue, p.Reservations, historyKinds(p), tc.wantState, tc.wantValue, tc.wantHistory)
			}
		})
	}
}

// TestCaptureRetryReservesOnce: a retry under the same Idempotency-Key
// (same upstream key) after a crash that left its reservation finds it and
// does not count the amount twice; the upstream gets the same key.
func TestCaptureRetryReservesOnce(t *testing.T) {
	st, up := newMemStore(), &captureUpstream{}
	authorised(t, st)
	ctx := context.Background()
	const key = "derived-upstream-key-0123456789abcdefghijk"
	// The crashed attempt: reserved 700, never called the upstream.
	p := record(t, st)
	p.Reservations = map[string]int64{"op_" + key: 700}
	p.CapturedValue = 700
	p.Version++
	if err := st.SavePayment(ctx, p, p.Version-1); err != nil {
		t.Fatal(err)
	}
	c := &payments.Call{Merchant: merchant, Site: site, UpstreamKey: key}
	if _, err := newCaptureService(st, up).Capture(ctx, c, psp, payments.CaptureInput{Amount: eur(700)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if p := record(t, st); p.CapturedValue != 700 || len(p.Reservations) != 0 || p.State != payments.StatePartiallyCaptured {
		t.Fatalf("record: %+v", p)
	}
	if up.keys[0] != key {
		t.Fatalf("upstream key %q, want %q", up.keys[0], key)
	}
}

// TestConcurrentCapturesNeverExceedTheAuthorisedAmount: ten captures of 200
// at once on 1000 authorised: five succeed, five are refused, 1000 captured.
func TestConcurrentCapturesNeverExceedTheAuthorisedAmount(t *testing.T) {
	st, up := newMemStore(), &captureUpstream{}
	authorised(t, st)
	svc := newCaptureService(st, up)
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for range 10 {
		wg.Go(func() {
			c := &payments.Call{Merchant: merchant, Site: site}
			_, err := svc.Capture(context.Background(), c, psp, payments.CaptureInput{Amount: eur(200)})
			if werr := c.Wait(); werr != nil {
				t.Errorf("record writes: %v", werr)
			}
			switch {
			case err == nil:
				ok.Add(1)
			case apperr.As(err).Kind == apperr.Invalid:
				refused.Add(1)
			default:
				t.Errorf("capture: %v", err)
			}
		})
	}
	wg.Wait()
	p := record(t, st)
	if ok.Load() != 5 || refused.Load() != 5 || up.calls() != 5 || p.CapturedValue != 1000 || p.State != payments.StateCaptured || len(p.Reservations) != 0 {
		t.Fatalf("ok %d refused %d upstream calls %d; record captured %d state %s reservations %v",
			ok.Load(), refused.Load(), up.calls(), p.CapturedValue, p.State, p.Reservations)
	}
}

// TestRecordErrorAfterTheUpstreamReturnsToTheCaller: the upstream accepted
// the capture, then the record could not be written: the capture's result
// stands and Call.Wait returns the record's error.
func TestRecordErrorAfterTheUpstreamReturnsToTheCaller(t *testing.T) {
	st := &failingSaves{memStore: newMemStore()}
	authorised(t, st)
	// The reservation is saved; every save after the upstream's answer fails.
	svc := newCaptureService(st, &armingUpstream{captureUpstream: &captureUpstream{}, arm: &st.armed}).RetryRecordWritesFor(0)
	c := &payments.Call{Merchant: merchant, Site: site}
	res, err := svc.Capture(context.Background(), c, psp, payments.CaptureInput{Amount: eur(300)})
	if err != nil || res.Status != "received" || res.PaymentPSPReference != psp {
		t.Fatalf("capture: %+v, %v", res, err)
	}
	werr := c.Wait()
	if werr == nil || !strings.Contains(werr.Error(), "after the upstream answered") || !strings.Contains(werr.Error(), "disk on fire") {
		t.Fatalf("Wait = %v, want the record's error", werr)
	}
}

// armingUpstream arms the store's failure as the upstream answers.
type armingUpstream struct {
	*captureUpstream
	arm *atomic.Bool
}

func (u *armingUpstream) Modify(ctx context.Context, req payments.ModificationRequest) (payments.ModificationAnswer, error) {
	resp, err := u.captureUpstream.Modify(ctx, req)
	u.arm.Store(true)
	return resp, err
}

// TestUnknownPaymentNeverReachesTheUpstream: a payment of another site is
// 404 yp_3006 and the call is not marked as having reached the upstream.
func TestUnknownPaymentNeverReachesTheUpstream(t *testing.T) {
	st, up := newMemStore(), &captureUpstream{}
	authorised(t, st)
	other := site
	other.ID = "site_other"
	c := &payments.Call{Merchant: merchant, Site: other}
	_, err := newCaptureService(st, up).Capture(context.Background(), c, psp, payments.CaptureInput{Amount: eur(1)})
	if apperr.As(err).Kind != apperr.PaymentNotFound || c.UpstreamCalled() || up.calls() != 0 {
		t.Fatalf("err %v, called %v, upstream calls %d", err, c.UpstreamCalled(), up.calls())
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
}
