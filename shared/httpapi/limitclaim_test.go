package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/testenv"
)

// rendezvous makes two calls meet: each announces itself and waits for the
// other, so the test fails if they ran one after the other.
type rendezvous struct{ hit, claim chan struct{} }

func (r rendezvous) meet(t *testing.T, mine, other chan struct{}, what string) {
	close(mine)
	select {
	case <-other:
	case <-time.After(30 * time.Second): // a failure bound only
		t.Errorf("%s ran alone: rate-limit hit and idempotency claim are not concurrent", what)
	}
}

type meetingLimits struct {
	ratelimit.Store
	t *testing.T
	r rendezvous
}

func (m meetingLimits) Hit(ctx context.Context, bucket string, limit int, exp time.Time) (bool, error) {
	m.r.meet(m.t, m.r.hit, m.r.claim, "rate-limit hit")
	return m.Store.Hit(ctx, bucket, limit, exp)
}

type meetingClaims struct {
	idempotency.Store
	t *testing.T
	r rendezvous
}

func (m meetingClaims) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	m.r.meet(m.t, m.r.claim, m.r.hit, "idempotency claim")
	return m.Store.Claim(ctx, rec, now)
}

// An idempotent POST makes its rate-limit hit and its idempotency claim in
// one store round trip (issue 15: at most 2 sequential round trips on
// DynamoDB, counted on moto in cmd/paysvc-bench).
func TestIdempotentPostLimitsAndClaimsConcurrently(t *testing.T) {
	r := rendezvous{hit: make(chan struct{}), claim: make(chan struct{})}
	e := testenv.NewWith(t, testenv.Options{WrapIdem: func(s idempotency.Store) idempotency.Store {
		return meetingClaims{Store: s, t: t, r: r}
	}})
	e.Deps.Limiter = ratelimit.New(meetingLimits{Store: e.Store, t: t, r: r}, e.Clock, 1000, 2000,
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
