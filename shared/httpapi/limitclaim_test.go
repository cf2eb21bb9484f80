package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/testutil/hang"
)

// idempotentRoute is an idempotent POST of each kind: a payment, and
// an operation on one (a capture of an authorised payment, made first
// without an Idempotency-Key). path and body are the request.
func idempotentRoute(t *testing.T, e *testenv.Env, kind string) (path, body string) {
	t.Helper()
	if kind == "payments" {
		return "/v1/ecom/" + testenv.SiteA + "/payments", payBody("")
	}
	psp := authorise(t, e, 1000)
	return "/v1/ecom/" + testenv.SiteA + "/payments/" + psp + "/captures", `{"amount":{"value":400,"currency":"EUR"}}`
}

// An idempotent POST — a payment or an operation on one — makes its
// rate-limit hit and its idempotency claim in one store round trip, before
// its handler; its retry replays its answer.
func TestIdempotentPostLimitsAndClaimsConcurrently(t *testing.T) {
	for _, kind := range []string{"payments", "captures"} {
		t.Run(kind, func(t *testing.T) {
			b := newBarrier("rate-limit hit", "idempotency claim")
			var armed atomic.Bool
			e := testenv.NewWith(t, testenv.Options{WrapIdem: func(s idempotency.Store) idempotency.Store {
				return barrierClaims{Store: s, t: t, b: b, armed: &armed}
			}})
			path, body := idempotentRoute(t, e, kind)
			limiter := e.Deps.Limiter
			e.Deps.Limiter = ratelimit.New(barrierLimits{Store: e.Store, t: t, b: b}, e.Clock, 1000, 2000,
				slog.New(slog.NewTextHandler(io.Discard, nil)))
			armed.Store(true)
			res := e.Do("POST", path, "A", body, "Idempotency-Key", "concurrent-1")
			if res.Status != 200 {
				t.Fatalf("status %d: %s", res.Status, res.Body)
			}
			armed.Store(false)
			e.Deps.Limiter = limiter
			again := e.Do("POST", path, "A", body, "Idempotency-Key", "concurrent-1")
			if again.Status != 200 || again.Header.Get(idempotency.HeaderReplayed) != "true" || string(again.Body) != string(res.Body) {
				t.Fatalf("retry: %d %s (replayed %q)", again.Status, again.Body, again.Header.Get(idempotency.HeaderReplayed))
			}
		})
	}
}

// A limited idempotent POST answers 429, never reaches the upstream,
// writes nothing of its own (a capture reserves nothing) and releases the
// claim it made: the same key runs once the window passed.
func TestLimitedIdempotentPostReleasesItsClaim(t *testing.T) {
	for _, kind := range []string{"payments", "captures"} {
		t.Run(kind, func(t *testing.T) {
			e := testenv.New(t)
			path, body := idempotentRoute(t, e, kind)
			for i, k := range []string{"slow-1", "slow-2"} {
				if r := e.Do("POST", path, "ASlow", strings.Replace(body, "400", "100", 1), "Idempotency-Key", k); r.Status != 200 {
					t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
				}
			}
			calls := len(e.Upstream.Requests(kind))
			r := e.Do("POST", path, "ASlow", body, "Idempotency-Key", "slow-3")
			if r.Status != 429 || r.JSON(t)["errorCode"] != "yp_9006" || r.Header.Get("Retry-After") == "" {
				t.Fatalf("third request: %d %s", r.Status, r.Body)
			}
			if n := len(e.Upstream.Requests(kind)); n != calls {
				t.Fatalf("a limited request reached the upstream (%d calls, want %d)", n, calls)
			}
			if kind == "captures" {
				psp := strings.Split(path, "/")[5]
				if h := record(t, e, psp); h.Totals.CapturesInFlight != 0 || h.Totals.Captured != 200 {
					t.Fatalf("after the limited capture: %+v; want 200 captured, nothing in flight", h.Totals)
				}
			}
			// A limited request with a bad key still gets the 429 (the limit decides first).
			if r := e.Do("POST", path, "ASlow", body, "Idempotency-Key", ""); r.Status != 429 {
				t.Fatalf("limited request with an empty key: %d %s", r.Status, r.Body)
			}
			e.Clock.Advance(2 * time.Second)
			r = e.Do("POST", path, "ASlow", body, "Idempotency-Key", "slow-3")
			if r.Status != 200 || r.Header.Get(idempotency.HeaderReplayed) != "" {
				t.Fatalf("the key of a limited request, after the window: %d %s (want a fresh 200, not 409 in progress)", r.Status, r.Body)
			}
		})
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

// barrierClaims meets b at each claim (while armed, when set).
type barrierClaims struct {
	idempotency.Store
	t     *testing.T
	b     barrier
	armed *atomic.Bool
}

func (m barrierClaims) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	if m.armed == nil || m.armed.Load() {
		m.b.meet(m.t, "idempotency claim")
	}
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
