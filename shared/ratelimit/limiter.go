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
//
// A window's counts only grow, so a counter found full stays full until the
// window ends: each instance remembers that and refuses locally, without a
// write. Traffic far over a key's limit therefore costs the store one
// refused write per counter, instance and window, not one per request.
//
// When the store fails (DynamoDB throttling, an outage) the limiter fails
// open, bounded: the instance lets through at most the counter's limit per
// window on its own count and refuses the rest with 429. The API stays up
// for keys within their limit while a key far over it cannot turn a store
// failure into unlimited traffic: at most instances × limit per window.
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
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

	mu    sync.Mutex
	full  map[string]time.Time // counters found full → their window's end
	local map[string]int       // requests let through on this instance's count while the store failed, per counter
}

// maxRemembered bounds full and local; when one is full it is cleared
// (forgetting costs one write or one more local window, nothing else).
const maxRemembered = 10_000

// New returns a limiter with default rate and burst (≤ 0 picks the defaults).
func New(s Store, clk clock.Clock, rate, burst int, log *slog.Logger) *Limiter {
	if rate <= 0 {
		rate = DefaultRate
	}
	if burst <= 0 {
		burst = max(DefaultBurst, rate)
	}
	return &Limiter{store: s, clock: clk, rate: rate, burst: burst, log: log, full: map[string]time.Time{}, local: map[string]int{}}
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
// the key's window is full. When the store fails, the request is counted on
// this instance alone (bounded fail-open, see the package doc) and the
// failure logged.
func (l *Limiter) Allow(ctx context.Context, keyID string, rate, burst int) error {
	if rate <= 0 {
		rate = l.rate
	}
	if burst <= 0 {
		burst = max(l.burst, rate)
	}
	now := l.clock.Now()
	win := Plan(keyID, rate, burst, now)
	ok, err := l.hit(ctx, win, now)
	if err != nil {
		ok = l.hitLocally(win)
		l.log.WarnContext(ctx, "rate limit store failed; counted on this instance", "err", err.Error(), "allowed", ok)
	}
	if ok {
		return nil
	}
	retry := int(math.Ceil(win.End.Sub(now).Seconds()))
	e := apperr.New(apperr.RateLimited, "rate limit exceeded; retry after the Retry-After delay with exponential backoff and jitter")
	e.RetryAfter = max(retry, 1)
	return e
}

// hit counts the request in the window's next counter not known to be
// full, or in the one after it when that one is full; with every counter
// it would try known full it refuses without a write.
func (l *Limiter) hit(ctx context.Context, win Window, now time.Time) (bool, error) {
	n := win.Shards
	first := 0
	if n > 1 {
		first = int(l.next.Add(1) % uint64(n))
	}
	expires := win.End.Add(time.Minute)
	tries := min(n, 2)
	for i := range tries {
		b := win.Bucket((first + i) % n)
		if l.knownFull(b, now) {
			continue
		}
		ok, err := l.store.Hit(ctx, b, win.Limit, expires)
		if ok || err != nil {
			return ok, err
		}
		l.remember(b, win.End)
	}
	return false, nil
}

func (l *Limiter) knownFull(bucket string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	end, ok := l.full[bucket]
	return ok && now.Before(end)
}

func (l *Limiter) remember(bucket string, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.full) >= maxRemembered {
		clear(l.full)
	}
	l.full[bucket] = end
}

// hitLocally counts a request on this instance while the store fails: at
// most one counter's limit per window.
func (l *Limiter) hitLocally(win Window) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.local[win.Base] >= win.Limit {
		return false
	}
	if len(l.local) >= maxRemembered {
		clear(l.local)
	}
	l.local[win.Base]++
	return true
}
