// Package ratelimit limits requests per API key across every instance of the
// service, through a counter in the shared store (docs/security.md).
//
// Algorithm: fixed windows of length burst/rate seconds, each allowing
// `burst` requests. With the defaults (100/s, burst 200) a key may send 200
// requests in any 2-second window, i.e. 100/s sustained and 200 at once. One
// atomic conditional update per request; no read-modify-write race.
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
)

// Defaults (docs/limits.md).
const (
	DefaultRate  = 100
	DefaultBurst = 200
)

// Limiter applies per-key limits.
type Limiter struct {
	store Store
	clock clock.Clock
	rate  int
	burst int
	log   *slog.Logger
}

// New returns a limiter with default rate and burst (≤ 0 picks the defaults).
func New(s Store, clk clock.Clock, rate, burst int, log *slog.Logger) *Limiter {
	if rate <= 0 {
		rate = DefaultRate
	}
	if burst <= 0 {
		burst = max(DefaultBurst, rate)
	}
	return &Limiter{store: s, clock: clk, rate: rate, burst: burst, log: log}
}

// window returns the window length for a rate and burst.
func window(rate, burst int) time.Duration {
	secs := int64(math.Ceil(float64(burst) / float64(rate)))
	return time.Duration(max(secs, 1)) * time.Second
}

// Allow counts one request of keyID, with per-key rate and burst overrides
// (≤ 0: the limiter's). It returns an apperr.RateLimited error with RetryAfter when
// the key's window is full. A store failure lets the request through and is
// logged: the limiter protects capacity, it must not take the API down.
func (l *Limiter) Allow(ctx context.Context, keyID string, rate, burst int) error {
	if rate <= 0 {
		rate = l.rate
	}
	if burst <= 0 {
		burst = max(l.burst, rate)
	}
	w := window(rate, burst)
	now := l.clock.Now()
	start := now.Truncate(w)
	end := start.Add(w)
	bucket := "rl#" + keyID + "#" + strconv.FormatInt(start.Unix(), 10)
	ok, err := l.store.Hit(ctx, bucket, burst, end.Add(time.Minute))
	if err != nil {
		l.log.WarnContext(ctx, "rate limit store failed; request allowed", "err", err.Error())
		return nil
	}
	if ok {
		return nil
	}
	retry := int(math.Ceil(end.Sub(now).Seconds()))
	e := apperr.New(apperr.RateLimited, "rate limit exceeded; retry after the Retry-After delay with exponential backoff and jitter")
	e.RetryAfter = max(retry, 1)
	return e
}
