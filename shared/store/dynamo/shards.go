package dynamo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/storeerr"
)

// A merchant's listings (its deliveries in gsi2, its event history) are
// write-sharded over as few partitions as its write rate needs: a count
// of its own, in the item MERCHANT#<merchant> / SHARDS (attributes dsh and
// esh). A merchant created by PutMerchant starts with one shard of each
// (newShards), so a page of a small merchant's listing is one Query; an
// operator raises the counts ahead of traffic (RaiseListingShards,
// `paysvc-admin merchant shards`). A merchant without the item (created
// before per-merchant counts) has the store's counts (WithDeliveryShards,
// WithEventLogShards: DeliveryShards and EventLogShards).
//
// Counts are only ever raised, so a writer may use a stale, smaller count
// (an item lands in a shard below it, which every later count covers):
// writers read it through a cache (ShardCacheTTL), readers strongly
// consistently, once per page, and query every shard below it.
const skShards = "SHARDS"

// Attributes of the SHARDS item.
const (
	attrDeliveryShards = "dsh"
	attrEventShards    = "esh"
)

// MaxListingShards bounds a count: a page queries every shard at once.
const MaxListingShards = 1024

// ListingShards are a merchant's shard counts.
type ListingShards struct {
	Deliveries int
	Events     int
	// Own: the merchant has counts of its own (else the store's).
	Own bool
}

// newShards are the counts a merchant starts with.
var newShards = ListingShards{Deliveries: 1, Events: 1, Own: true}

// ShardCacheTTL is how long a writer keeps a merchant's counts.
const ShardCacheTTL = time.Minute

// shardCache is the writers' cache of merchants' counts.
type shardCache struct {
	mu sync.Mutex
	m  map[string]cachedShards
}

type cachedShards struct {
	v     ListingShards
	until time.Time
}

func (c *shardCache) get(merchantID string, now time.Time) (ListingShards, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[merchantID]
	return e.v, ok && now.Before(e.until)
}

func (c *shardCache) put(merchantID string, v ListingShards, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 10_000 { // bounded: a cache, not a copy of the table
		c.m = map[string]cachedShards{}
	}
	c.m[merchantID] = cachedShards{v: v, until: now.Add(ShardCacheTTL)}
}

// writeShards are merchantID's counts for a writer: cached.
func (s *Store) writeShards(ctx context.Context, merchantID string) (ListingShards, error) {
	if v, ok := s.shardCache.get(merchantID, s.clock.Now()); ok {
		return v, nil
	}
	return s.ListingShards(ctx, merchantID)
}

// ListingShards are merchantID's counts as stored (strongly consistent: a
// reader's count covers every writer's).
func (s *Store) ListingShards(ctx context.Context, merchantID string) (ListingShards, error) {
	it, err := s.getItem(ctx, pfxMerchant+merchantID, skShards)
	if err != nil && !errors.Is(err, storeerr.ErrNotFound) {
		return ListingShards{}, fmt.Errorf("read listing shards of %q: %w", merchantID, err)
	}
	v := ListingShards{Deliveries: s.shards, Events: s.eventShards}
	if err == nil {
		if err := checkFormat(it); err != nil {
			return ListingShards{}, fmt.Errorf("listing shards of %q: %w", merchantID, err)
		}
		v = ListingShards{Deliveries: int(getN(it, attrDeliveryShards)), Events: int(getN(it, attrEventShards)), Own: true}
		if v.Deliveries < 1 || v.Events < 1 {
			return ListingShards{}, fmt.Errorf("listing shards of %q: bad counts %+v", merchantID, v)
		}
	}
	s.shardCache.put(merchantID, v, s.clock.Now())
	return v, nil
}

// ErrLowerShards: a count can only be raised.
var ErrLowerShards = errors.New("listing shard counts can only be raised")

// RaiseListingShards sets merchantID's counts to deliveries and events (0:
// keep that count). A count lower than the one stored (or than the
// store's, for a merchant without counts of its own) is refused with
// ErrLowerShards: items in the shards above it would drop out of its
// listings. It returns the counts now stored.
func (s *Store) RaiseListingShards(ctx context.Context, merchantID string, deliveries, events int) (ListingShards, error) {
	if merchantID == "" {
		return ListingShards{}, fmt.Errorf("dynamo: raise listing shards: %w", errEmpty("merchant id"))
	}
	if deliveries < 0 || events < 0 || deliveries > MaxListingShards || events > MaxListingShards {
		return ListingShards{}, fmt.Errorf("dynamo: raise listing shards of %q: counts %d, %d: want 1 … %d", merchantID, deliveries, events, MaxListingShards)
	}
	for range 5 {
		cur, err := s.ListingShards(ctx, merchantID)
		if err != nil {
			return ListingShards{}, fmt.Errorf("dynamo: %w", err)
		}
		next := ListingShards{Deliveries: cmp.Or(deliveries, cur.Deliveries), Events: cmp.Or(events, cur.Events), Own: true}
		if next.Deliveries < cur.Deliveries || next.Events < cur.Events {
			return cur, fmt.Errorf("dynamo: raise listing shards of %q to %d deliveries, %d events (now %d, %d): %w",
				merchantID, next.Deliveries, next.Events, cur.Deliveries, cur.Events, ErrLowerShards)
		}
		in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: ShardsItem(merchantID, next)}
		if cur.Own { // unchanged since read
			in.ConditionExpression = aws.String("#d = :d AND #e = :e")
			in.ExpressionAttributeNames = map[string]string{"#d": attrDeliveryShards, "#e": attrEventShards}
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":d": num(int64(cur.Deliveries)), ":e": num(int64(cur.Events))}
		} else {
			in.ConditionExpression, in.ExpressionAttributeNames, _ = versionCondition(0) // absent
		}
		_, err = s.client.PutItem(ctx, in)
		if _, failed := conditionFailed(err); failed {
			continue // raised meanwhile: read again
		}
		if err != nil {
			return ListingShards{}, fmt.Errorf("dynamo: raise listing shards of %q: %w", merchantID, err)
		}
		s.shardCache.put(merchantID, next, s.clock.Now())
		return next, nil
	}
	return ListingShards{}, fmt.Errorf("dynamo: raise listing shards of %q: %w", merchantID, storeerr.ErrConflict)
}

// ShardsItem is merchantID's SHARDS item holding v.
func ShardsItem(merchantID string, v ListingShards) map[string]types.AttributeValue {
	item := withFormat(itemKey(pfxMerchant+merchantID, skShards))
	item[attrDeliveryShards], item[attrEventShards] = num(int64(v.Deliveries)), num(int64(v.Events))
	return item
}
