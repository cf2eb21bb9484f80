package tenant

import (
	"context"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/storeerr"
)

// countingStore serves one merchant and its subscriptions and counts reads.
type countingStore struct {
	Store // unused methods
	reads int
	subs  []Subscription
}

func (s *countingStore) GetMerchant(_ context.Context, id string) (Merchant, error) {
	s.reads++
	if id != "m_1" {
		return Merchant{}, storeerr.ErrNotFound
	}
	return Merchant{ID: id}, nil
}

func (s *countingStore) GetSubscription(_ context.Context, merchantID, id string) (Subscription, error) {
	s.reads++
	for _, sub := range s.subs {
		if sub.MerchantID == merchantID && sub.ID == id {
			return sub, nil
		}
	}
	return Subscription{}, storeerr.ErrNotFound
}

func (s *countingStore) ListSubscriptions(_ context.Context, merchantID string) ([]Subscription, error) {
	s.reads++
	return append([]Subscription(nil), s.subs...), nil
}

func (s *countingStore) PutSubscription(_ context.Context, sub Subscription) error {
	for i := range s.subs {
		if s.subs[i].ID == sub.ID {
			s.subs[i] = sub
			return nil
		}
	}
	s.subs = append(s.subs, sub)
	return nil
}

func TestReadCache(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	inner := &countingStore{subs: []Subscription{{ID: "sub_1", MerchantID: "m_1", Enabled: true}}}
	c := NewReadCache(inner, clk, 5*time.Second)
	for range 3 {
		if _, err := c.GetMerchant(ctx, "m_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetSubscription(ctx, "m_1", "sub_1"); err != nil {
			t.Fatal(err)
		}
		if subs, err := c.ListSubscriptions(ctx, "m_1"); err != nil || len(subs) != 1 {
			t.Fatal(subs, err)
		}
	}
	if inner.reads != 3 {
		t.Fatalf("%d store reads for 3 rounds of 3 cached reads, want 3", inner.reads)
	}
	// Not-found is not cached.
	for range 2 {
		if _, err := c.GetMerchant(ctx, "m_none"); err != storeerr.ErrNotFound {
			t.Fatalf("unknown merchant: %v", err)
		}
	}
	if inner.reads != 5 {
		t.Fatalf("not-found cached: %d reads", inner.reads)
	}
	// A write through the cache is seen at once.
	if err := c.PutSubscription(ctx, Subscription{ID: "sub_1", MerchantID: "m_1", Enabled: false}); err != nil {
		t.Fatal(err)
	}
	if sub, _ := c.GetSubscription(ctx, "m_1", "sub_1"); sub.Enabled {
		t.Fatal("cached subscription survived a write through the cache")
	}
	if subs, _ := c.ListSubscriptions(ctx, "m_1"); subs[0].Enabled {
		t.Fatal("cached list survived a write through the cache")
	}
	// A change made elsewhere is seen once the TTL passed.
	inner.subs[0].URL = "https://new.example"
	if sub, _ := c.GetSubscription(ctx, "m_1", "sub_1"); sub.URL != "" {
		t.Fatal("expected the cached copy within the TTL")
	}
	clk.Advance(5 * time.Second)
	if sub, _ := c.GetSubscription(ctx, "m_1", "sub_1"); sub.URL != "https://new.example" {
		t.Fatal("stale subscription after the TTL")
	}
	if NewReadCache(inner, clk, 0) != Store(inner) {
		t.Fatal("ttl 0 must not cache")
	}
}
