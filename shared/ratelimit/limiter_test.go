package ratelimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
)

// memStore is an exact in-memory Store that records every Hit.
type memStore struct {
	mu     sync.Mutex
	counts map[string]int
	hits   []string
}

func (m *memStore) Hit(_ context.Context, bucket string, limit int, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hits = append(m.hits, bucket)
	if m.counts[bucket] >= limit {
		return false, nil
	}
	m.counts[bucket]++
	return true, nil
}

func newLimiter(clk clock.Clock) (*Limiter, *memStore) {
	st := &memStore{counts: map[string]int{}}
	return New(st, clk, 0, 0, slog.New(slog.NewTextHandler(io.Discard, nil))), st
}

// A key allowed a billion requests/s (the hot-path benchmark's) plans its
// window without building its two million counter names.
func TestPlanHugeRate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() { _ = Plan("k", 1_000_000_000, 1_000_000_000, time.Unix(0, 0)) })
	if allocs > 2 {
		t.Fatalf("Plan allocates %.0f times", allocs)
	}
}

func TestPlan(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	tests := []struct {
		name        string
		rate, burst int
		buckets     []string
		limit       int
		length      time.Duration
	}{
		{"default: one exact counter", 100, 200, []string{"rl#k#1767323044"}, 200, 2 * time.Second},
		{"at ShardRate: one counter", ShardRate, ShardRate, []string{"rl#k#1767323045"}, ShardRate, time.Second},
		{"above ShardRate: sharded", 1200, 2400,
			[]string{"rl#k#1767323044#s0", "rl#k#1767323044#s1", "rl#k#1767323044#s2"}, 800, 2 * time.Second},
		{"12,000/s: 24 counters", 12000, 12000, nil, 500, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Plan("k", tc.rate, tc.burst, now)
			var buckets []string
			for i := range w.Shards {
				buckets = append(buckets, w.Bucket(i))
			}
			if tc.buckets != nil && !equal(buckets, tc.buckets) {
				t.Errorf("buckets %q, want %q", buckets, tc.buckets)
			}
			if shards := (tc.rate + ShardRate - 1) / ShardRate; w.Shards != shards {
				t.Errorf("%d buckets, want %d", w.Shards, shards)
			}
			if w.Limit != tc.limit || w.End.Sub(w.Start) != tc.length || now.Before(w.Start) || !now.Before(w.End) {
				t.Errorf("limit %d window [%s, %s), want %d over %s around %s", w.Limit, w.Start, w.End, tc.limit, tc.length, now)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A default key: one write per request on one counter, exact limit.
func TestAllowDefaultOneCounter(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC))
	l, st := newLimiter(clk)
	for i := range DefaultBurst {
		if err := l.Allow(context.Background(), "k", 0, 0); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	err := l.Allow(context.Background(), "k", 0, 0)
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.RateLimited || e.RetryAfter != 2 {
		t.Fatalf("request over the burst: %v, want 429 with Retry-After 2", err)
	}
	if len(st.counts) != 1 || len(st.hits) != DefaultBurst+1 {
		t.Fatalf("%d counters, %d writes; want 1 counter, one write per request", len(st.counts), len(st.hits))
	}
}

// A high per-key limit spreads over sharded counters, one write per
// request while there is room, and still allows exactly the burst.
func TestAllowShardedHighLimit(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l, st := newLimiter(clk)
	const rate = 12_000
	for i := range rate {
		if err := l.Allow(context.Background(), "big", rate, rate); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if len(st.hits) != rate {
		t.Errorf("%d writes for %d requests, want one each", len(st.hits), rate)
	}
	if len(st.counts) != rate/ShardRate {
		t.Errorf("%d counters, want %d", len(st.counts), rate/ShardRate)
	}
	for b, n := range st.counts {
		if n > ShardRate {
			t.Errorf("counter %s took %d requests in a 1 s window, more than ShardRate", b, n)
		}
	}
	if err := l.Allow(context.Background(), "big", rate, rate); err == nil {
		t.Fatal("request over the burst allowed")
	}
	clk.Advance(time.Second)
	if err := l.Allow(context.Background(), "big", rate, rate); err != nil {
		t.Fatalf("next window: %v", err)
	}
}

// A full counter sends the request to the next one.
func TestAllowShardedFallsOverOnce(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	l, st := newLimiter(clk)
	w := Plan("k", 1000, 1000, clk.Now())
	st.counts[w.Bucket(1)] = w.Limit // the counter taken first is full
	if err := l.Allow(context.Background(), "k", 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if !equal(st.hits, []string{w.Bucket(1), w.Bucket(0)}) || st.counts[w.Bucket(0)] != 1 {
		t.Fatalf("hits %q counts %v", st.hits, st.counts)
	}
}

// Traffic far over the limit costs the store one refused write per counter
// and window on an instance: a counter found full stays full until its
// window ends, so later requests are refused without a write.
func TestAllowRemembersFullCounters(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC))
	for _, c := range []struct {
		name        string
		rate, burst int
	}{
		{"one counter", 0, 0},
		{"sharded", 2000, 2000},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, st := newLimiter(clk)
			w := Plan("k", max(c.rate, DefaultRate), max(c.burst, DefaultBurst), clk.Now())
			allowed := 0
			for range 3 * w.Limit * w.Shards {
				if l.Allow(ctx, "k", c.rate, c.burst) == nil {
					allowed++
				}
			}
			if allowed != w.Limit*w.Shards {
				t.Fatalf("%d allowed in the window, want %d", allowed, w.Limit*w.Shards)
			}
			if refused := len(st.hits) - allowed; refused > w.Shards {
				t.Fatalf("%d refused writes for %d counters", refused, w.Shards)
			}
			clk.Advance(w.End.Sub(w.Start))
			if err := l.Allow(ctx, "k", c.rate, c.burst); err != nil {
				t.Fatalf("the next window: %v", err)
			}
		})
	}
}

// failingStore fails every Hit (DynamoDB throttling) while fail is set.
type failingStore struct {
	*memStore
	fail bool
}

func (f *failingStore) Hit(ctx context.Context, bucket string, limit int, exp time.Time) (bool, error) {
	if f.fail {
		return false, errors.New("ProvisionedThroughputExceededException")
	}
	return f.memStore.Hit(ctx, bucket, limit, exp)
}

// When the store fails the limiter fails open, bounded: the instance lets
// through one counter's limit per window on its own count, refuses the
// rest with 429, and uses the store again once it answers.
func TestAllowBoundedFailOpen(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC))
	st := &failingStore{memStore: &memStore{counts: map[string]int{}}, fail: true}
	l := New(st, clk, 0, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range DefaultBurst {
		if err := l.Allow(ctx, "k", 0, 0); err != nil {
			t.Fatalf("request %d within the limit while the store fails: %v", i, err)
		}
	}
	var e *apperr.Error
	if err := l.Allow(ctx, "k", 0, 0); !errors.As(err, &e) || e.Kind != apperr.RateLimited {
		t.Fatalf("over the limit while the store fails: %v, want 429", err)
	}
	if err := l.Allow(ctx, "other", 0, 0); err != nil {
		t.Fatalf("another key keeps its own count: %v", err)
	}
	clk.Advance(2 * time.Second)
	if err := l.Allow(ctx, "k", 0, 0); err != nil {
		t.Fatalf("the next window, store still failing: %v", err)
	}
	st.fail = false
	if err := l.Allow(ctx, "k", 0, 0); err != nil || len(st.hits) != 1 {
		t.Fatalf("store back: %v after %d writes", err, len(st.hits))
	}
}
