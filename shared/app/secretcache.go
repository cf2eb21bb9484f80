package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
)

// Refresh policy of the upstream secret in AWS. A rotated value (a new
// upstream API key, HMAC key or notification password written with
// put-secret-value) is in use everywhere within SecretTTL, without
// recycling any function; sooner where the old value is refused (see
// SecretCache.Refresh).
const (
	// SecretTTL is how long a value read from Secrets Manager is used
	// before it is read again: at most one read per instance per TTL.
	SecretTTL = 5 * time.Minute
	// SecretMinRefresh is the least time between two reads forced by a
	// refused value, so a storm of 401s cannot become a storm of reads.
	SecretMinRefresh = 30 * time.Second
	// SecretMaxStale bounds how long the last value read is still used while
	// Secrets Manager cannot be read (every failed read is logged). After
	// that, calls needing the secret fail until a read succeeds.
	SecretMaxStale = 24 * time.Hour
)

// SecretCache holds the upstream secrets read from one source, one value
// per instance, re-read after the TTL. It is safe for concurrent use; one
// read runs at a time.
type SecretCache struct {
	fetch      func(context.Context) (config.Secrets, error)
	clock      clock.Clock
	log        *slog.Logger
	ttl        time.Duration
	minRefresh time.Duration
	maxStale   time.Duration

	mu      sync.Mutex
	val     config.Secrets
	version uint64    // 0 before the first successful read; +1 per changed value
	readAt  time.Time // last successful read
	tried   time.Time // last read attempt
	due     bool      // Refresh asked for a read before the TTL ends
}

// NewSecretCache returns a cache over fetch with the production policy
// (SecretTTL, SecretMinRefresh, SecretMaxStale).
func NewSecretCache(fetch func(context.Context) (config.Secrets, error), clk clock.Clock, log *slog.Logger) *SecretCache {
	return &SecretCache{fetch: fetch, clock: clk, log: log, ttl: SecretTTL, minRefresh: SecretMinRefresh, maxStale: SecretMaxStale}
}

// Get returns the current secrets and their version (it changes whenever
// the value does). It reads the source when there is no value yet, the
// TTL has passed, or a Refresh is due; a failed read keeps the last value
// for at most SecretMaxStale.
func (c *SecretCache) Get(ctx context.Context) (config.Secrets, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if c.version > 0 && now.Sub(c.tried) < c.ttl && !c.due && now.Sub(c.readAt) < c.maxStale {
		return c.val, c.version, nil
	}
	c.tried, c.due = now, false
	v, err := c.fetch(ctx)
	if err != nil {
		if c.version > 0 && now.Sub(c.readAt) < c.maxStale {
			c.log.WarnContext(ctx, "upstream secret: read failed, still using the value read earlier",
				"err", err.Error(), "readAgoS", int64(now.Sub(c.readAt).Seconds()), "maxStaleS", int64(c.maxStale.Seconds()))
			return c.val, c.version, nil
		}
		return config.Secrets{}, 0, err
	}
	if c.version == 0 || v != c.val {
		if c.version > 0 {
			c.log.InfoContext(ctx, "upstream secret: a new value is in use", "version", c.version+1)
		}
		c.val = v
		c.version++
	}
	c.readAt = now
	return c.val, c.version, nil
}

// Refresh asks for a read at the next Get, because the current value was
// refused (the upstream answered 401, a notification's HMAC or basic auth
// did not match). It does nothing when the last read is more recent than
// SecretMinRefresh. It reports whether a read was scheduled.
func (c *SecretCache) Refresh() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clock.Now().Sub(c.tried) < c.minRefresh {
		return false
	}
	c.due = true
	return true
}
