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
	"github.com/yp/paysvc/shared/tenant"
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

// failingSaves fails every Write once armed.
type failingSaves struct {
	*memStore
	armed atomic.Bool
}

func (s *failingSaves) Write(ctx context.Context, w payments.Write) error {
	if s.armed.Load() {
		return errors.New("disk on fire")
	}
	return s.memStore.Write(ctx, w)
}

// authorised stores an authorised payment of 1000 EUR of merchant/site.
func authorised(t *testing.T, st payments.Store) {
	t.Helper()
	h := payments.Head{
		PSPReference: psp, MerchantID: merchant.ID, SiteID: site.ID, Source: payments.SourceAdvanced,
		Amount: eur(1000), Authorised: 1000, Auth: payments.Auth{ResultCode: "Authorised"}, CaptureMode: merchant.CaptureMode,
		Version: 1, CreatedAt: t0, UpdatedAt: t0,
	}
	h.Totals = payments.Fold(h, nil)
	if err := st.Write(context.Background(), payments.Write{PSP: psp, Put: &h}); err != nil {
		t.Fatal(err)
	}
}

func eur(v int64) money.Amount { return money.Amount{Value: v, Currency: "EUR"} }

// authorisedService is a service calling up, on a memStore holding the
// authorised payment (authorised).
func authorisedService(t *testing.T, up *captureUpstream) (*memStore, *captureUpstream, *payments.Service) {
	t.Helper()
	st := newMemStore()
	authorised(t, st)
	return st, up, newCaptureService(st, up)
}

// do makes operation op (svc.Capture, svc.Refund, svc.Reverse,
// svc.Cancel) of in on the payment as merchant m, and waits for its record
// writes.
func do[In any](t *testing.T, m tenant.Merchant, op func(context.Context, *payments.Call, string, In) (payments.ModificationResult, error), in In) error {
	t.Helper()
	c := &payments.Call{Merchant: m, Site: site}
	_, err := op(context.Background(), c, psp, in)
	if werr := c.Wait(); werr != nil {
		t.Fatalf("record writes: %v", werr)
	}
	return err
}

func newCaptureService(st payments.Store, up payments.Upstream) *payments.Service {
	return payments.NewService(st, up, clock.NewFake(t0), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// record returns the payment's head, having checked its totals against
// the fold of its entries.
func record(t *testing.T, st *memStore) payments.Head {
	t.Helper()
	h, err := st.GetPayment(context.Background(), psp)
	if err != nil {
		t.Fatal(err)
	}
	if fold := payments.Fold(h, st.Entries(psp)); fold != h.Totals {
		t.Fatalf("cached totals %+v, fold of the entries %+v", h.Totals, fold)
	}
	return h
}

// timelineKinds lists the kinds of the payment's timeline facts.
func timelineKinds(t *testing.T, st payments.Store) string {
	t.Helper()
	facts, _, err := st.Timeline(context.Background(), psp, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range facts {
		kinds = append(kinds, f.Kind)
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
		// wantInFlight: captured, or not, nobody knows yet (no definitive answer).
		wantInFlight int64
		wantTimeline string
	}{
		{name: "partial", amounts: []money.Amount{eur(600)}, wantCalled: true,
			wantState: payments.StatePartiallyCaptured, wantValue: 600, wantTimeline: "capture-requested,capture"},
		{name: "in two parts to the full amount", amounts: []money.Amount{eur(600), eur(400)}, wantCalled: true,
			wantState: payments.StateCaptured, wantValue: 1000, wantTimeline: "capture-requested,capture,capture-requested,capture"},
		{name: "more than remains: refused before the upstream", amounts: []money.Amount{eur(600), eur(401)},
			wantKind: apperr.Invalid, wantField: "amount.value",
			wantState: payments.StatePartiallyCaptured, wantValue: 600, wantTimeline: "capture-requested,capture"},
		{name: "another currency: refused before the upstream", amounts: []money.Amount{{Value: 100, Currency: "USD"}},
			wantKind: apperr.Invalid, wantField: "amount.currency", wantState: payments.StateAuthorised},
		{name: "upstream refuses: nothing in flight", amounts: []money.Amount{eur(600)},
			upstreamErr: &payments.UpstreamRejection{Message: "Original pspReference required", Err: errors.New("upstream: HTTP 422 errorCode 167")},
			wantKind:    apperr.Invalid, wantCalled: true,
			wantState: payments.StateAuthorised, wantValue: 0, wantTimeline: "capture-requested,capture-refused"},
		{name: "upstream unavailable: in flight until the platform's answer is learnt", amounts: []money.Amount{eur(600)},
			upstreamErr: errUnavailable, wantKind: apperr.CaptureFailed, wantCalled: true,
			wantState: payments.StateAuthorised, wantValue: 0, wantInFlight: 600, wantTimeline: "capture-requested,capture-unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, up, svc := authorisedService(t, &captureUpstream{})
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
			v := record(t, st).View()
			if v.State != tc.wantState || v.Captured != tc.wantValue || v.CapturesInFlight != tc.wantInFlight || timelineKinds(t, st) != tc.wantTimeline {
				t.Fatalf("record: %+v timeline %s; want %s captured %d in flight %d, %s",
					v, timelineKinds(t, st), tc.wantState, tc.wantValue, tc.wantInFlight, tc.wantTimeline)
			}
		})
	}
}

// TestSingleCapture: a merchant without multiple partial captures (the
// platform's default) takes one capture: once accepted it releases the
// rest of the authorisation (capturable 0, the 400 captured refundable),
// and a second capture is refused before the upstream, naming the rule —
// also while the first is in flight, and of ten at once only one goes.
func TestSingleCapture(t *testing.T) {
	single := merchant
	single.MultiplePartialCaptures = false
	capture := func(svc *payments.Service, v int64) error {
		return do(t, single, svc.Capture, payments.CaptureInput{Amount: eur(v)})
	}
	for _, tc := range []struct {
		name     string
		first    error // the upstream's answer to the first capture
		state    payments.State
		captured int64
		// capturable: the view knows the release once the capture is
		// accepted; in flight, the write's guard refuses the second.
		capturable int64
	}{
		{"accepted", nil, payments.StateCaptured, 400, 0},
		{"in flight", errUnavailable, payments.StateAuthorised, 0, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, up, svc := authorisedService(t, &captureUpstream{err: tc.first})
			_ = capture(svc, 400)
			up.err = nil
			err := capture(svc, 100)
			if e := apperr.As(err); e.Kind != apperr.Invalid || !strings.Contains(err.Error(), "multiple partial captures are off") {
				t.Fatalf("second capture: %v, want 400 naming the rule", err)
			}
			v := record(t, st).View()
			if up.calls() != 1 || v.State != tc.state || v.Captured != tc.captured || v.Capturable != tc.capturable || v.Refundable != tc.captured {
				t.Fatalf("%d upstream calls; record %+v", up.calls(), v)
			}
		})
	}
	st, up, svc := authorisedService(t, &captureUpstream{})
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 10 {
		wg.Go(func() {
			if capture(svc, 200) == nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if v := record(t, st).View(); ok.Load() != 1 || up.calls() != 1 || v.Captured != 200 || v.Capturable != 0 || v.State != payments.StateCaptured {
		t.Fatalf("%d accepted, %d upstream calls; record %+v", ok.Load(), up.calls(), v)
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
	// The crashed attempt: its request written (700 in flight), the
	// upstream never called.
	e := payments.Entry{Ref: "op_" + key, Kind: payments.OpCapture, Version: 1,
		Requested: &payments.Request{Amount: eur(700), UpstreamKey: key, At: t0}}
	if err := st.Write(ctx, payments.Write{PSP: psp, Delta: e.Contribution(), Entries: []payments.Entry{e}, At: t0}); err != nil {
		t.Fatal(err)
	}
	c := &payments.Call{Merchant: merchant, Site: site, UpstreamKey: key}
	if _, err := newCaptureService(st, up).Capture(ctx, c, psp, payments.CaptureInput{Amount: eur(700)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if v := record(t, st).View(); v.Captured != 700 || v.CapturesInFlight != 0 || v.State != payments.StatePartiallyCaptured {
		t.Fatalf("record: %+v", v)
	}
	if up.keys[0] != key {
		t.Fatalf("upstream key %q, want %q", up.keys[0], key)
	}
}

// TestConcurrentCapturesNeverExceedTheAuthorisedAmount: ten captures of 200
// at once on 1000 authorised: five succeed, five are refused, 1000 captured.
func TestConcurrentCapturesNeverExceedTheAuthorisedAmount(t *testing.T) {
	st, up, svc := authorisedService(t, &captureUpstream{})
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
	v := record(t, st).View()
	if ok.Load() != 5 || refused.Load() != 5 || up.calls() != 5 || v.Captured != 1000 || v.State != payments.StateCaptured || v.CapturesInFlight != 0 {
		t.Fatalf("ok %d refused %d upstream calls %d; record %+v", ok.Load(), refused.Load(), up.calls(), v)
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
