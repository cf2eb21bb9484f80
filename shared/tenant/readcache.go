package tenant

import (
	"context"
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
	m    *cache[string, Merchant]
	sub  *cache[[2]string, Subscription]
	subs *cache[string, []Subscription]
}

// NewReadCache caches s's reads for ttl; ttl <= 0 returns s itself.
// Not-found answers are not cached: a subscription just created elsewhere
// is seen on the next read.
func NewReadCache(s Store, clk clock.Clock, ttl time.Duration) Store {
	if ttl <= 0 {
		return s
	}
	return &ReadCache{
		Store: s,
		m:     newCache(clk, ttl, false, s.GetMerchant),
		sub: newCache(clk, ttl, false, func(ctx context.Context, k [2]string) (Subscription, error) {
			return s.GetSubscription(ctx, k[0], k[1])
		}),
		subs: newCache(clk, ttl, false, s.ListSubscriptions),
	}
}

// GetMerchant implements Store, cached.
func (c *ReadCache) GetMerchant(ctx context.Context, id string) (Merchant, error) {
	return c.m.get(ctx, id)
}

// GetSubscription implements Store, cached.
func (c *ReadCache) GetSubscription(ctx context.Context, merchantID, id string) (Subscription, error) {
	return c.sub.get(ctx, [2]string{merchantID, id})
}

// ListSubscriptions implements Store, cached.
func (c *ReadCache) ListSubscriptions(ctx context.Context, merchantID string) ([]Subscription, error) {
	subs, err := c.subs.get(ctx, merchantID)
	return append([]Subscription(nil), subs...), err
}

// PutMerchant implements Store and then drops the cached merchant (a read
// under way meanwhile is not kept).
func (c *ReadCache) PutMerchant(ctx context.Context, m Merchant) error {
	err := c.Store.PutMerchant(ctx, m)
	c.m.drop(m.ID)
	return err
}

// PutSubscription implements Store and drops the cached subscription and
// its merchant's list.
func (c *ReadCache) PutSubscription(ctx context.Context, s Subscription) error {
	err := c.Store.PutSubscription(ctx, s)
	c.sub.drop([2]string{s.MerchantID, s.ID})
	c.subs.drop(s.MerchantID)
	return err
}
