package tenant

import (
	"context"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
)

// ReadCache is a Store whose merchant and subscription reads are cached
// per instance for a TTL: the notification receiver and the webhook
// dispatcher read them for every notification and every delivery attempt,
// and one merchant's records share one DynamoDB partition, which serves at
// most 3,000 reads/s (docs/scale.md). A change made elsewhere (a
// subscription disabled, its URL or secrets changed) is seen within the
// TTL; writes through the cache drop the entries they touch at once.
// Secret rotation keeps the old secret valid long after that (tenant.Secret
// ExpiresAt), so a cached subscription still signs with a valid secret.
type ReadCache struct {
	Store
	clock clock.Clock
	ttl   time.Duration

	mu   sync.Mutex
	m    map[string]cached[Merchant]
	sub  map[[2]string]cached[Subscription]
	subs map[string]cached[[]Subscription]
}

// NewReadCache caches s's reads for ttl; ttl <= 0 returns s itself.
func NewReadCache(s Store, clk clock.Clock, ttl time.Duration) Store {
	if ttl <= 0 {
		return s
	}
	return &ReadCache{
		Store: s, clock: clk, ttl: ttl,
		m: map[string]cached[Merchant]{}, sub: map[[2]string]cached[Subscription]{}, subs: map[string]cached[[]Subscription]{},
	}
}

// readThrough returns m[k] while fresh, else loads and keeps it (errors,
// not-found included, are not cached).
func readThrough[K comparable, T any](c *ReadCache, m map[K]cached[T], k K, load func() (T, error)) (T, error) {
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := m[k]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if len(m) >= maxCached {
		clear(m)
	}
	m[k] = cached[T]{v: v, until: now.Add(c.ttl)}
	c.mu.Unlock()
	return v, nil
}

// GetMerchant implements Store, cached.
func (c *ReadCache) GetMerchant(ctx context.Context, id string) (Merchant, error) {
	return readThrough(c, c.m, id, func() (Merchant, error) { return c.Store.GetMerchant(ctx, id) })
}

// GetSubscription implements Store, cached.
func (c *ReadCache) GetSubscription(ctx context.Context, merchantID, id string) (Subscription, error) {
	return readThrough(c, c.sub, [2]string{merchantID, id}, func() (Subscription, error) {
		return c.Store.GetSubscription(ctx, merchantID, id)
	})
}

// ListSubscriptions implements Store, cached.
func (c *ReadCache) ListSubscriptions(ctx context.Context, merchantID string) ([]Subscription, error) {
	subs, err := readThrough(c, c.subs, merchantID, func() ([]Subscription, error) {
		return c.Store.ListSubscriptions(ctx, merchantID)
	})
	return append([]Subscription(nil), subs...), err
}

// PutMerchant implements Store and drops the cached merchant.
func (c *ReadCache) PutMerchant(ctx context.Context, m Merchant) error {
	c.mu.Lock()
	delete(c.m, m.ID)
	c.mu.Unlock()
	return c.Store.PutMerchant(ctx, m)
}

// PutSubscription implements Store and drops the cached subscription and
// its merchant's list.
func (c *ReadCache) PutSubscription(ctx context.Context, s Subscription) error {
	c.mu.Lock()
	delete(c.sub, [2]string{s.MerchantID, s.ID})
	delete(c.subs, s.MerchantID)
	c.mu.Unlock()
	return c.Store.PutSubscription(ctx, s)
}
