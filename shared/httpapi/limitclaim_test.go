package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/testutil/hang"
)

// An idempotent POST makes its rate-limit hit and its idempotency claim in
// one store round trip (issue 15: at most 2 sequential round trips on
// DynamoDB, counted on moto in cmd/paysvc-bench).
func TestIdempotentPostLimitsAndClaimsConcurrently(t *testing.T) {
	b := newBarrier("rate-limit hit", "idempotency claim")
	e := testenv.NewWith(t, testenv.Options{WrapIdem: func(s idempotency.Store) idempotency.Store {
		return barrierClaims{Store: s, t: t, b: b}
	}})
	e.Deps.Limiter = ratelimit.New(barrierLimits{Store: e.Store, t: t, b: b}, e.Clock, 1000, 2000,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	res := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments", "A", payBody(""), "Idempotency-Key", "concurrent-1")
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
}

// A limited idempotent POST answers 429, never reaches the upstream, and
// releases the claim it made: the same key runs once the window passed.
func TestLimitedIdempotentPostReleasesItsClaim(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/payments"
	for i, k := range []string{"slow-1", "slow-2"} {
		if r := e.Do("POST", path, "ASlow", payBody(""), "Idempotency-Key", k); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	calls := len(e.Upstream.Requests("/payments"))
	r := e.Do("POST", path, "ASlow", payBody(""), "Idempotency-Key", "slow-3")
	if r.Status != 429 || r.JSON(t)["errorCode"] != "yp_9006" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d %s", r.Status, r.Body)
	}
	if n := len(e.Upstream.Requests("/payments")); n != calls {
		t.Fatalf("a limited request reached the upstream (%d calls, want %d)", n, calls)
	}
	// A limited request with a bad key still gets the 429 (the limit decides first).
	if r := e.Do("POST", path, "ASlow", payBody(""), "Idempotency-Key", ""); r.Status != 429 {
		t.Fatalf("limited request with an empty key: %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(2 * time.Second)
	r = e.Do("POST", path, "ASlow", payBody(""), "Idempotency-Key", "slow-3")
	if r.Status != 200 || r.Header.Get(idempotency.HeaderReplayed) != "" {
		t.Fatalf("the key of a limited request, after the window: %d %s (want a fresh 200, not 409 in progress)", r.Status, r.Body)
	}
}

// barrier makes named calls meet: each announces itself and waits for all
// the others, so the test fails if any ran after another had finished.
type barrier map[string]chan struct{}

func newBarrier(names ...string) barrier {
	b := barrier{}
	for _, n := range names {
		b[n] = make(chan struct{})
	}
	return b
}

func (b barrier) meet(t *testing.T, name string) {
	close(b[name])
	for other, ch := range b {
		select {
		case <-ch:
		case <-hang.Deadline(t):
			t.Errorf("%s did not meet %s: they are not concurrent", name, other)
		}
	}
}

type barrierLimits struct {
	ratelimit.Store
	t *testing.T
	b barrier
}

func (m barrierLimits) Hit(ctx context.Context, bucket string, limit int, exp time.Time) (bool, error) {
	m.b.meet(m.t, "rate-limit hit")
	return m.Store.Hit(ctx, bucket, limit, exp)
}

type barrierClaims struct {
	idempotency.Store
	t *testing.T
	b barrier
}

func (m barrierClaims) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	m.b.meet(m.t, "idempotency claim")
	return m.Store.Claim(ctx, rec, now)
}

type barrierSites struct {
	tenant.Store
	t *testing.T
	b barrier
}

func (m barrierSites) GetSite(ctx context.Context, id string) (tenant.Site, error) {
	m.b.meet(m.t, "site read")
	return m.Store.GetSite(ctx, id)
}

// With the tenant cache cold, an idempotent POST reads its site while it
// makes its rate-limit hit and claims its key: after the API key, one store
// round trip, not three (docs/scale.md, "Round trips per endpoint").
func TestColdSiteReadAlongsideHitAndClaim(t *testing.T) {
	b := newBarrier("rate-limit hit", "idempotency claim", "site read")
	e := testenv.NewWith(t, testenv.Options{WrapIdem: func(s idempotency.Store) idempotency.Store {
		return barrierClaims{Store: s, t: t, b: b}
	}})
	e.Deps.Limiter = ratelimit.New(barrierLimits{Store: e.Store, t: t, b: b}, e.Clock, 1000, 2000,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	e.Deps.Auth = tenant.NewAuthenticator(barrierSites{Store: e.Store, t: t, b: b}, tenant.EnvTest, e.Clock, 0)
	res := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments", "A", payBody(""), "Idempotency-Key", "cold-1")
	if res.Status != 200 {
		t.Fatalf("status %d: %s", res.Status, res.Body)
	}
}

// A request refused after its key was claimed (an unknown site, a site of
// another merchant, a bad body) answers that refusal and releases the key:
// the same key then runs afresh on the right path.
func TestRefusedRequestReleasesItsClaim(t *testing.T) {
	e := testenv.New(t)
	for _, tc := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"unknown site", "/v1/ecom/site_nope/payments", payBody(""), 404, "yp_3004"},
		{"another merchant's site", "/v1/ecom/" + testenv.SiteB + "/payments", payBody(""), 404, "yp_3004"},
		{"body not JSON", "/v1/ecom/" + testenv.SiteA + "/payments", "{", 400, "yp_2002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "refused-" + tc.name
			r := e.Do("POST", tc.path, "A", tc.body, "Idempotency-Key", key)
			if r.Status != tc.status || (tc.code != "" && r.JSON(t)["errorCode"] != tc.code) {
				t.Fatalf("%s: %d %s", tc.name, r.Status, r.Body)
			}
			r = e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments", "A", payBody(""), "Idempotency-Key", key)
			if r.Status != 200 || r.Header.Get(idempotency.HeaderReplayed) != "" {
				t.Fatalf("the key after %s: %d %s (want a fresh 200)", tc.name, r.Status, r.Body)
			}
		})
	}
}

// claimingWrites calls meet before a payment write that takes an
// Idempotency-Key claim (payments.Write.Claim), and closes written after
// the first.
type claimingWrites struct {
	payments.Store
	meet    func()
	written chan struct{}
	once    *sync.Once
}

func (m claimingWrites) Write(ctx context.Context, w payments.Write) error {
	if w.Claim == nil {
		return m.Store.Write(ctx, w)
	}
	if m.meet != nil {
		m.meet()
	}
	err := m.Store.Write(ctx, w)
	if m.written != nil {
		m.once.Do(func() { close(m.written) })
	}
	return err
}

// A capture with an Idempotency-Key claims its key in the write that
// reserves its amount, while its rate-limit hit runs: one store round trip
// before the upstream call, not two (docs/scale.md, "Round trips per
// endpoint").
func TestCaptureClaimsWithItsReservationAlongsideTheHit(t *testing.T) {
	var meet func()
	e := testenv.NewWith(t, testenv.Options{WrapPayments: func(s payments.Store) payments.Store {
		return claimingWrites{Store: s, meet: func() { meet() }}
	}})
	psp := authorise(t, e, 1000)
	b := newBarrier("rate-limit hit", "reservation with its claim")
	meet = func() { b.meet(t, "reservation with its claim") }
	e.Deps.Limiter = ratelimit.New(barrierLimits{Store: e.Store, t: t, b: b}, e.Clock, 1000, 2000,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures", "A",
		`{"amount":{"value":400,"currency":"EUR"}}`, "Idempotency-Key", "cap-1")
	if r.Status/100 != 2 {
		t.Fatalf("capture: %d %s", r.Status, r.Body)
	}
	// The key is the capture's: its retry replays it.
	meet = func() {}
	e.Deps.Limiter = ratelimit.New(e.Store, e.Clock, 1000, 2000, slog.New(slog.NewTextHandler(io.Discard, nil)))
	again := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures", "A",
		`{"amount":{"value":400,"currency":"EUR"}}`, "Idempotency-Key", "cap-1")
	if again.Status != r.Status || again.Header.Get(idempotency.HeaderReplayed) != "true" {
		t.Fatalf("the capture's retry: %d %s (replayed %q)", again.Status, again.Body, again.Header.Get(idempotency.HeaderReplayed))
	}
}

// limitAfter refuses every hit while armed, once the reservation it races
// has been written (written closed), and counts them in the store after.
type limitAfter struct {
	ratelimit.Store
	t       *testing.T
	armed   *atomic.Bool
	written chan struct{}
}

func (m limitAfter) Hit(ctx context.Context, bucket string, limit int, exp time.Time) (bool, error) {
	if !m.armed.Load() {
		return m.Store.Hit(ctx, bucket, limit, exp)
	}
	select {
	case <-m.written:
	case <-hang.Deadline(m.t):
		m.t.Error("the reservation was not written while the hit ran")
	}
	return false, nil
}

// A capture whose rate-limit verdict (429) comes after its reservation
// and claim were written withdraws the reservation (its entry answered
// not-sent, nothing in flight), never reaches the upstream, and releases
// the key: the same request after the window reserves anew and runs.
func TestLimitedCaptureWithdrawsItsReservation(t *testing.T) {
	written := make(chan struct{})
	e := testenv.NewWith(t, testenv.Options{WrapPayments: func(s payments.Store) payments.Store {
		return claimingWrites{Store: s, written: written, once: new(sync.Once)}
	}})
	psp := authorise(t, e, 1000)
	var armed atomic.Bool
	armed.Store(true)
	e.Deps.Limiter = ratelimit.New(limitAfter{Store: e.Store, t: t, armed: &armed, written: written}, e.Clock, 1000, 2000,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	path, body := "/v1/ecom/"+testenv.SiteA+"/payments/"+psp+"/captures", `{"amount":{"value":400,"currency":"EUR"}}`
	r := e.Do("POST", path, "A", body, "Idempotency-Key", "cap-limited")
	if r.Status != 429 || r.JSON(t)["errorCode"] != "yp_9006" {
		t.Fatalf("limited capture: %d %s", r.Status, r.Body)
	}
	if n := len(e.Upstream.Requests("/captures")); n != 0 {
		t.Fatalf("a limited capture reached the upstream (%d calls)", n)
	}
	armed.Store(false)
	e.Clock.Advance(2 * time.Second) // the next window
	h, err := e.Store.GetPayment(context.Background(), psp)
	if err != nil {
		t.Fatal(err)
	}
	if h.Totals.CapturesInFlight != 0 || h.Totals.Capturable != 1000 {
		t.Fatalf("after the withdrawal: in flight %d, capturable %d; want 0, 1000", h.Totals.CapturesInFlight, h.Totals.Capturable)
	}
	var kinds []string
	for _, f := range e.Timeline(psp) {
		kinds = append(kinds, f.Kind)
	}
	if !slices.Contains(kinds, "capture-requested") || !slices.Contains(kinds, "capture-not-sent") {
		t.Fatalf("timeline %v: want the request and its withdrawal", kinds)
	}
	r = e.Do("POST", path, "A", body, "Idempotency-Key", "cap-limited")
	if r.Status/100 != 2 || r.Header.Get(idempotency.HeaderReplayed) != "" {
		t.Fatalf("the same capture again: %d %s (want a fresh answer)", r.Status, r.Body)
	}
	if n := len(e.Upstream.Requests("/captures")); n != 1 {
		t.Fatalf("upstream captures %d, want 1", n)
	}
	h, err = e.Store.GetPayment(context.Background(), psp)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Totals.CapturesInFlight + h.Totals.Captured; got != 400 || h.Totals.Capturable != 600 {
		t.Fatalf("after the capture: captured or in flight %d, capturable %d; want 400, 600", got, h.Totals.Capturable)
	}
}
