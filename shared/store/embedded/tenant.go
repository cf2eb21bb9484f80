package embedded

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// PutMerchant creates or replaces a merchant.
func (s *Store) PutMerchant(ctx context.Context, m tenant.Merchant) error {
	if m.ID == "" {
		return fmt.Errorf("embedded: put merchant: %w", errEmpty("id"))
	}
	return putRecord(ctx, s, bktMerchants, []byte(m.ID), records.FromMerchant(m), "put merchant %q", m.ID)
}

// GetMerchant returns a merchant, or storeerr.ErrNotFound.
func (s *Store) GetMerchant(ctx context.Context, id string) (tenant.Merchant, error) {
	return getRecord(ctx, s, bktMerchants, []byte(id), records.Merchant.ToMerchant, "get merchant %q", id)
}

// ListMerchants returns every merchant, sorted by ID.
func (s *Store) ListMerchants(ctx context.Context) ([]tenant.Merchant, error) {
	return listRecords(ctx, s, bktMerchants, nil, nil, records.Merchant.ToMerchant, "list merchants")
}

// PutSite creates or replaces a site, moving it between merchants' lists if
// its merchant changed.
func (s *Store) PutSite(ctx context.Context, site tenant.Site) error {
	switch {
	case site.ID == "":
		return fmt.Errorf("embedded: put site: %w", errEmpty("id"))
	case site.MerchantID == "":
		return fmt.Errorf("embedded: put site %q: %w", site.ID, errEmpty("merchant id"))
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		sites, index := readBucket(tx, bktSites), readBucket(tx, bktSitesByMerchant)
		var old records.Site
		found, err := getJSON(sites, []byte(site.ID), &old)
		if err != nil {
			return err
		}
		if found && old.MerchantID != site.MerchantID {
			if err := index.Delete(compositeKey(old.MerchantID, old.ID)); err != nil {
				return err
			}
		}
		if err := putJSON(sites, []byte(site.ID), records.FromSite(site)); err != nil {
			return err
		}
		return index.Put(compositeKey(site.MerchantID, site.ID), []byte{})
	})
	return wrapErr(err, "put site %q", site.ID)
}

// GetSite returns a site, or storeerr.ErrNotFound.
func (s *Store) GetSite(ctx context.Context, id string) (tenant.Site, error) {
	return getRecord(ctx, s, bktSites, []byte(id), records.Site.ToSite, "get site %q", id)
}

// ListSites returns the merchant's sites, sorted by ID.
func (s *Store) ListSites(ctx context.Context, merchantID string) ([]tenant.Site, error) {
	prefix := prefixOf(merchantID)
	byID := func(tx *bolt.Tx) func(k, _ []byte) []byte {
		return func(k, _ []byte) []byte { return readBucket(tx, bktSites).Get(k[len(prefix):]) }
	}
	return listRecords(ctx, s, bktSitesByMerchant, prefix, byID, records.Site.ToSite, "list sites of merchant %q", merchantID)
}

// CreateAPIKey stores a new key; storeerr.ErrConflict if its hash, or its ID
// for the same merchant, exists.
func (s *Store) CreateAPIKey(ctx context.Context, k tenant.APIKey) error {
	switch {
	case k.ID == "":
		return fmt.Errorf("embedded: create api key: %w", errEmpty("id"))
	case k.Hash == "":
		return fmt.Errorf("embedded: create api key %q: %w", k.ID, errEmpty("hash"))
	case k.MerchantID == "":
		return fmt.Errorf("embedded: create api key %q: %w", k.ID, errEmpty("merchant id"))
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		keys, index := readBucket(tx, bktAPIKeys), readBucket(tx, bktAPIKeysByMerchant)
		ref := compositeKey(k.MerchantID, k.ID)
		if keys.Get([]byte(k.Hash)) != nil || index.Get(ref) != nil {
			return storeerr.ErrConflict
		}
		if err := putJSON(keys, []byte(k.Hash), records.FromAPIKey(k)); err != nil {
			return err
		}
		return index.Put(ref, []byte(k.Hash))
	})
	return wrapErr(err, "create api key %q of merchant %q", k.ID, k.MerchantID)
}

// GetAPIKeyByHash returns the key with that hash, or storeerr.ErrNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (tenant.APIKey, error) {
	// The hash identifies a secret: keep it out of errors and logs.
	return getRecord(ctx, s, bktAPIKeys, []byte(hash), records.APIKey.ToAPIKey, "get api key by hash")
}

// ListAPIKeys returns the merchant's keys (revoked ones included), sorted by ID.
func (s *Store) ListAPIKeys(ctx context.Context, merchantID string) ([]tenant.APIKey, error) {
	byHash := func(tx *bolt.Tx) func(_, hash []byte) []byte {
		return func(_, hash []byte) []byte { return readBucket(tx, bktAPIKeys).Get(hash) }
	}
	return listRecords(ctx, s, bktAPIKeysByMerchant, prefixOf(merchantID), byHash, records.APIKey.ToAPIKey,
		"list api keys of merchant %q", merchantID)
}

// RevokeAPIKey marks the merchant's key revoked at `at`. Revoking a revoked
// key succeeds and keeps the first time; storeerr.ErrNotFound if the merchant
// has no such key.
func (s *Store) RevokeAPIKey(ctx context.Context, merchantID, keyID string, at time.Time) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		keys := readBucket(tx, bktAPIKeys)
		hash := readBucket(tx, bktAPIKeysByMerchant).Get(compositeKey(merchantID, keyID))
		if hash == nil {
			return storeerr.ErrNotFound
		}
		var k records.APIKey
		if err := mustGet(keys, hash, &k); err != nil {
			return fmt.Errorf("dangling key index: %w", err)
		}
		if k.RevokedAt != nil {
			return nil
		}
		at := at.UTC()
		k.RevokedAt = &at
		return putJSON(keys, hash, k)
	})
	return wrapErr(err, "revoke api key %q of merchant %q", keyID, merchantID)
}

// PutSubscription creates or replaces a merchant's webhook subscription.
func (s *Store) PutSubscription(ctx context.Context, sub tenant.Subscription) error {
	switch {
	case sub.ID == "":
		return fmt.Errorf("embedded: put subscription: %w", errEmpty("id"))
	case sub.MerchantID == "":
		return fmt.Errorf("embedded: put subscription %q: %w", sub.ID, errEmpty("merchant id"))
	}
	return putRecord(ctx, s, bktSubscriptions, compositeKey(sub.MerchantID, sub.ID), records.FromSubscription(sub),
		"put subscription %q of merchant %q", sub.ID, sub.MerchantID)
}

// GetSubscription returns the merchant's subscription, or storeerr.ErrNotFound.
func (s *Store) GetSubscription(ctx context.Context, merchantID, id string) (tenant.Subscription, error) {
	return getRecord(ctx, s, bktSubscriptions, compositeKey(merchantID, id), records.Subscription.ToSubscription,
		"get subscription %q of merchant %q", id, merchantID)
}

// ListSubscriptions returns the merchant's subscriptions, sorted by ID.
func (s *Store) ListSubscriptions(ctx context.Context, merchantID string) ([]tenant.Subscription, error) {
	return listRecords(ctx, s, bktSubscriptions, prefixOf(merchantID), nil, records.Subscription.ToSubscription,
		"list subscriptions of merchant %q", merchantID)
}
