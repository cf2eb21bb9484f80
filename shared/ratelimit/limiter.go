// Package ratelimit limits requests per API key across every instance of the
// service, through a counter in the shared store (docs/security.md).
//
// Algorithm: fixed windows of length burst/rate seconds, each allowing
// `burst` requests. With the defaults (100/s, burst 200) a key may send 200
// requests in any 2-second window, i.e. 100/s sustained and 200 at once. One
// atomic conditional update per request; no read-modify-write race.
//
// A key allowed more than ShardRate requests/s would make its window one
// hot item (DynamoDB serves at most 1,000 writes/s per partition), so its
// window is split into ceil(rate/ShardRate) counters, each allowing an equal
// share of the burst; requests take the counters in turn. Still one write
// per request; a second one only when the counter taken is full while
// another may not be. Keys at or below ShardRate (the default) keep one
// exact counter.
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
)

// Defaults (docs/limits.md).
const (
	DefaultRate  = 100
	DefaultBurst = 200
)

// ShardRate is the most requests/s one window counter takes (half of a
// DynamoDB partition's 1,000 writes/s, leaving room for bursts).
const ShardRate = 500

// Limiter applies per-key limits.
type Limiter struct {
	store Store
	clock clock.Clock
	rate  int
	burst int
	log   *slog.Logger
	next  atomic.Uint64 // round-robin over a sharded window's counters
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

// Window is where a key's requests of one instant are counted.
type Window struct {
	Base   string    // the counter's bucket name, or the prefix of its shards'
	Shards int       // counters: 1, or ceil(rate/ShardRate)
	Limit  int       // requests each counter allows
	Start  time.Time // the fixed window [Start, End)
	End    time.Time
}

// Bucket is the name of counter i (0 ≤ i < Shards).
func (w Window) Bucket(i int) string {
	if w.Shards <= 1 {
		return w.Base
	}
	return w.Base + "#s" + strconv.Itoa(i)
}

// Plan returns the window of keyID at now for rate and burst (both > 0).
func Plan(keyID string, rate, burst int, now time.Time) Window {
	w := window(rate, burst)
	start := now.Truncate(w)
	shards := max((rate+ShardRate-1)/ShardRate, 1)
	// One allocation for the name: "rl#" + keyID + "#" + the start's Unix seconds.
	var room [64]byte
	base := append(append(append(room[:0], "rl#"...), keyID...), '#')
	base = strconv.AppendInt(base, start.Unix(), 10)
	return Window{
		Base:   string(base),
		Shards: shards, Limit: (burst + shards - 1) / shards, Start: start, End: start.Add(w),
	}
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
	now := l.clock.Now()
	win := Plan(keyID, rate, burst, now)
	ok, err := l.hit(ctx, win)
	if err != nil {
		l.log.WarnContext(ctx, "rate limit store failed; request allowed", "err", err.Error())
		return nil
	}
	if ok {
		return nil
	}
	retry := int(math.Ceil(win.End.Sub(now).Seconds()))
	e := apperr.New(apperr.RateLimited, "rate limit exceeded; retry after the Retry-After delay with exponential backoff and jitter")
	e.RetryAfter = max(retry, 1)
	return e
}

// hit counts the request in the window's next counter, or in the one after
// it when that one is full.
func (l *Limiter) hit(ctx context.Context, win Window) (bool, error) {
	n := win.Shards
	first := 0
	if n > 1 {
		first = int(l.next.Add(1) % uint64(n))
	}
	expires := win.End.Add(time.Minute)
	ok, err := l.store.Hit(ctx, win.Bucket(first), win.Limit, expires)
	if ok || err != nil || n == 1 {
		return ok, err
	}
	return l.store.Hit(ctx, win.Bucket((first+1)%n), win.Limit, expires)
}
