package storetest

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/ratelimit"
)

// TestRateLimitStore checks the ratelimit.Store contract: Hit counts up to
// the limit and then reports false without counting, buckets are
// independent, an expired window starts again from zero, and concurrent hits
// never exceed the limit.
func TestRateLimitStore(t *testing.T, newStore Factory[ratelimit.Store]) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s ratelimit.Store, clk *clock.Fake)
	}{
		{"CountsUpToLimit", testHitCountsUpToLimit},
		{"IndependentBuckets", testHitIndependentBuckets},
		{"ExpiredWindowStartsAgain", testHitExpiredWindow},
		{"NonPositiveLimit", testHitNonPositiveLimit},
		{"ConcurrentHitsNeverExceedLimit", testHitConcurrent},
		{"LimiterShardedWindowAllowsTheBurst", testLimiterSharded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			tc.run(t, newStore(t, clk), clk)
		})
	}
}

// A key allowed more than ratelimit.ShardRate requests/s counts in several
// window items of the store; together they allow exactly the burst, one
// write per request, and the next window starts again.
func testLimiterSharded(t *testing.T, s ratelimit.Store, clk *clock.Fake) {
	ctx := context.Background()
	counted := &countingHits{Store: s}
	l := ratelimit.New(counted, clk, 0, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	const rate = 3 * ratelimit.ShardRate / 2 // 2 counters of 375
	clk.Set(clk.Now().Truncate(2 * time.Second))
	for i := range rate {
		if err := l.Allow(ctx, "key_big", rate, rate); err != nil {
			t.Fatalf("request %d of %d: %v", i+1, rate, err)
		}
	}
	if n := counted.n.Load(); n != rate {
		t.Fatalf("%d store writes for %d requests, want one each", n, rate)
	}
	if err := l.Allow(ctx, "key_big", rate, rate); err == nil {
		t.Fatal("a request over the burst was allowed")
	}
	clk.Advance(time.Second)
	if err := l.Allow(ctx, "key_big", rate, rate); err != nil {
		t.Fatalf("next window: %v", err)
	}
}

// countingHits counts the Hit calls reaching the store.
type countingHits struct {
	ratelimit.Store
	n atomic.Int64
}

func (c *countingHits) Hit(ctx context.Context, bucket string, limit int, expiresAt time.Time) (bool, error) {
	c.n.Add(1)
	return c.Store.Hit(ctx, bucket, limit, expiresAt)
}

// hits calls Hit n times and returns the results.
func hits(t *testing.T, s ratelimit.Store, bucket string, limit, n int, expiresAt time.Time) []bool {
	t.Helper()
	out := make([]bool, n)
	for i := range out {
		ok, err := s.Hit(context.Background(), bucket, limit, expiresAt)
		noErr(t, err, "Hit "+bucket)
		out[i] = ok
	}
	return out
}

func testHitCountsUpToLimit(t *testing.T, s ratelimit.Store, clk *clock.Fake) {
	exp := clk.Now().Add(time.Second)
	tests := []struct {
		limit int
		want  []bool
	}{
		{1, []bool{true, false, false}},
		{3, []bool{true, true, true, false, false}},
	}
	for _, tc := range tests {
		bucket := name("key_1:window", tc.limit)
		same(t, hits(t, s, bucket, tc.limit, len(tc.want), exp), tc.want, bucket)
	}
}

func testHitIndependentBuckets(t *testing.T, s ratelimit.Store, clk *clock.Fake) {
	exp := clk.Now().Add(time.Second)
	same(t, hits(t, s, "key_a:1", 2, 3, exp), []bool{true, true, false}, "bucket a")
	same(t, hits(t, s, "key_b:1", 2, 3, exp), []bool{true, true, false}, "bucket b")
	same(t, hits(t, s, "key_a:2", 1, 2, exp), []bool{true, false}, "bucket a, next window")
}

func testHitExpiredWindow(t *testing.T, s ratelimit.Store, clk *clock.Fake) {
	exp := clk.Now().Add(time.Second)
	same(t, hits(t, s, "key_1", 2, 3, exp), []bool{true, true, false}, "first window")
	clk.Advance(time.Second - time.Nanosecond)
	same(t, hits(t, s, "key_1", 2, 1, exp), []bool{false}, "just before the window expires")
	clk.Advance(time.Nanosecond)
	next := clk.Now().Add(time.Second)
	same(t, hits(t, s, "key_1", 2, 3, next), []bool{true, true, false}, "after the window expired")
}

func testHitNonPositiveLimit(t *testing.T, s ratelimit.Store, clk *clock.Fake) {
	exp := clk.Now().Add(time.Second)
	same(t, hits(t, s, "key_1", 0, 2, exp), []bool{false, false}, "limit 0")
	same(t, hits(t, s, "key_1", -1, 1, exp), []bool{false}, "limit -1")
	same(t, hits(t, s, "key_1", 1, 2, exp), []bool{true, false}, "limit 1 after refused hits")
}

func testHitConcurrent(t *testing.T, s ratelimit.Store, clk *clock.Fake) {
	const goroutines, limit = 50, 10
	exp := clk.Now().Add(time.Minute)
	var counted, failed atomic.Int64
	runConcurrently(goroutines, func(int) {
		ok, err := s.Hit(context.Background(), "hot", limit, exp)
		if err != nil {
			failed.Add(1)
			return
		}
		if ok {
			counted.Add(1)
		}
	})
	if failed.Load() != 0 {
		t.Fatalf("%d concurrent hits failed with an error", failed.Load())
	}
	if counted.Load() != limit {
		t.Fatalf("concurrent hits counted %d times, want exactly %d", counted.Load(), limit)
	}
	same(t, hits(t, s, "hot", limit, 1, exp), []bool{false}, "hit after the window filled")
}
