package tenant

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/storeerr"
)

// maxCached bounds each cache; when full it is cleared (simple and safe).
const maxCached = 10_000

// refreshTimeout bounds a refresh made in the background (it outlives the
// request that started it).
const refreshTimeout = 5 * time.Second

// cache is a per-instance read-through cache of one kind of record. An
// entry is fresh for ttl after its load. In the last quarter of that, a
// read answers from the entry and starts one refresh in the background
// (one per key at a time), so steady traffic never waits on the store:
// only a key unread for a whole TTL loads on the request's path. Concurrent
// misses of one key share one load. A not-found answer is kept when
// keepMissing (an unknown API key must not cost a read per request);
// other errors never are. drop removes an entry at once, and a load that
// was under way when it happened does not put the old value back.
type cache[K comparable, T any] struct {
	clock       clock.Clock
	ttl         time.Duration
	keepMissing bool
	load        func(ctx context.Context, k K) (T, error) // a record from the store

	mu       sync.Mutex
	entries  map[K]*cacheEntry[T]
	loads    map[K]*cacheLoad[T]
	drops    uint64         // counts drop calls: a load started before one is not kept
	inFlight sync.WaitGroup // background refreshes (tests wait on it)
}

type cacheEntry[T any] struct {
	v          T
	missing    bool
	until      time.Time
	refreshing bool
}

type cacheLoad[T any] struct {
	done chan struct{}
	v    T
	err  error
}

func newCache[K comparable, T any](clk clock.Clock, ttl time.Duration, keepMissing bool, load func(context.Context, K) (T, error)) *cache[K, T] {
	return &cache[K, T]{clock: clk, ttl: ttl, keepMissing: keepMissing, load: load, entries: map[K]*cacheEntry[T]{}, loads: map[K]*cacheLoad[T]{}}
}

// get returns k's record, from the cache while it is fresh, else from the
// store (c.load).
func (c *cache[K, T]) get(ctx context.Context, k K) (T, error) {
	if c.ttl <= 0 {
		return c.load(ctx, k)
	}
	now := c.clock.Now()
	c.mu.Lock()
	if e, ok := c.entries[k]; ok && now.Before(e.until) {
		if !e.refreshing && !now.Before(e.until.Add(-c.ttl/4)) {
			e.refreshing = true
			c.inFlight.Add(1)
			go c.refresh(context.WithoutCancel(ctx), k, e)
		}
		v, missing := e.v, e.missing
		c.mu.Unlock()
		if missing {
			return v, storeerr.ErrNotFound
		}
		return v, nil
	}
	if l, ok := c.loads[k]; ok {
		c.mu.Unlock()
		select {
		case <-l.done:
			return l.v, l.err
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
	l := &cacheLoad[T]{done: make(chan struct{})}
	c.loads[k] = l
	drops := c.drops
	c.mu.Unlock()

	l.v, l.err = c.load(ctx, k)
	c.mu.Lock()
	delete(c.loads, k)
	c.keep(k, drops, now, l.v, l.err)
	c.mu.Unlock()
	close(l.done)
	return l.v, l.err
}

// refresh reloads k in the background; on failure the entry stays until it
// expires, and the next read after that loads on its own path.
func (c *cache[K, T]) refresh(ctx context.Context, k K, e *cacheEntry[T]) {
	defer c.inFlight.Done()
	c.mu.Lock()
	drops := c.drops
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	v, err := c.load(ctx, k)
	c.mu.Lock()
	e.refreshing = false
	c.keep(k, drops, c.clock.Now(), v, err)
	c.mu.Unlock()
}

// keep stores a load's result (c.mu held) unless it may be older than a
// drop made since it started, or is an error the cache does not keep.
func (c *cache[K, T]) keep(k K, drops uint64, loadedAt time.Time, v T, err error) {
	missing := errors.Is(err, storeerr.ErrNotFound)
	if c.drops != drops || (err != nil && !(missing && c.keepMissing)) {
		return
	}
	if len(c.entries) >= maxCached {
		clear(c.entries)
	}
	c.entries[k] = &cacheEntry[T]{v: v, missing: missing, until: loadedAt.Add(c.ttl)}
}

// fresh reports whether k is cached and fresh (no load on a get now).
func (c *cache[K, T]) fresh(k K) bool {
	if c.ttl <= 0 {
		return false
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	return ok && now.Before(e.until)
}

// drop forgets k (a write through the cache, a revocation on this instance).
func (c *cache[K, T]) drop(k K) {
	c.mu.Lock()
	delete(c.entries, k)
	c.drops++
	c.mu.Unlock()
}
