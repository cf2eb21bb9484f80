package embedded

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/store/internal/utc"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// PutMerchant creates or replaces a merchant.
func (s *Store) PutMerchant(ctx context.Context, m tenant.Merchant) error {
	if m.ID == "" {
		return fmt.Errorf("embedded: put merchant: %w", errEmpty("id"))
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(bucket(tx, bktMerchants), []byte(m.ID), utc.Merchant(m))
	})
	if err != nil {
		return fmt.Errorf("embedded: put merchant %q: %w", m.ID, err)
	}
	return nil
}

// GetMerchant returns a merchant, or storeerr.ErrNotFound.
func (s *Store) GetMerchant(ctx context.Context, id string) (tenant.Merchant, error) {
	var m tenant.Merchant
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return mustGet(bucket(tx, bktMerchants), []byte(id), &m)
	})
	if err != nil {
		return tenant.Merchant{}, fmt.Errorf("embedded: get merchant %q: %w", id, err)
	}
	return m, nil
}

// ListMerchants returns every merchant, sorted by ID.
func (s *Store) ListMerchants(ctx context.Context) ([]tenant.Merchant, error) {
	var out []tenant.Merchant
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = listJSON[tenant.Merchant](bucket(tx, bktMerchants), nil, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list merchants: %w", err)
	}
	return out, nil
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
		sites, index := bucket(tx, bktSites), bucket(tx, bktSitesByMerchant)
		var old tenant.Site
		found, err := getJSON(sites, []byte(site.ID), &old)
		if err != nil {
			return err
		}
		if found && old.MerchantID != site.MerchantID {
			if err := index.Delete(compositeKey(old.MerchantID, old.ID)); err != nil {
				return err
			}
		}
		if err := putJSON(sites, []byte(site.ID), utc.Site(site)); err != nil {
			return err
		}
		return index.Put(compositeKey(site.MerchantID, site.ID), []byte{})
	})
	if err != nil {
		return fmt.Errorf("embedded: put site %q: %w", site.ID, err)
	}
	return nil
}

// GetSite returns a site, or storeerr.ErrNotFound.
func (s *Store) GetSite(ctx context.Context, id string) (tenant.Site, error) {
	var site tenant.Site
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return mustGet(bucket(tx, bktSites), []byte(id), &site)
	})
	if err != nil {
		return tenant.Site{}, fmt.Errorf("embedded: get site %q: %w", id, err)
	}
	return site, nil
}

// ListSites returns the merchant's sites, sorted by ID.
func (s *Store) ListSites(ctx context.Context, merchantID string) ([]tenant.Site, error) {
	var out []tenant.Site
	err := s.view(ctx, func(tx *bolt.Tx) error {
		sites, prefix := bucket(tx, bktSites), prefixOf(merchantID)
		var err error
		out, err = listJSON[tenant.Site](bucket(tx, bktSitesByMerchant), prefix, func(k, _ []byte) []byte {
			return sites.Get(k[len(prefix):])
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list sites of merchant %q: %w", merchantID, err)
	}
	return out, nil
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
		keys, index := bucket(tx, bktAPIKeys), bucket(tx, bktAPIKeysByMerchant)
		ref := compositeKey(k.MerchantID, k.ID)
		if keys.Get([]byte(k.Hash)) != nil || index.Get(ref) != nil {
			return storeerr.ErrConflict
		}
		if err := putJSON(keys, []byte(k.Hash), utc.APIKey(k)); err != nil {
			return err
		}
		return index.Put(ref, []byte(k.Hash))
	})
	if err != nil {
		return fmt.Errorf("embedded: create api key %q of merchant %q: %w", k.ID, k.MerchantID, err)
	}
	return nil
}

// GetAPIKeyByHash returns the key with that hash, or storeerr.ErrNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (tenant.APIKey, error) {
	var k tenant.APIKey
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return mustGet(bucket(tx, bktAPIKeys), []byte(hash), &k)
	})
	if err != nil {
		// The hash identifies a secret: keep it out of errors and logs.
		return tenant.APIKey{}, fmt.Errorf("embedded: get api key by hash: %w", err)
	}
	return k, nil
}

// ListAPIKeys returns the merchant's keys (revoked ones included), sorted by ID.
func (s *Store) ListAPIKeys(ctx context.Context, merchantID string) ([]tenant.APIKey, error) {
	var out []tenant.APIKey
	err := s.view(ctx, func(tx *bolt.Tx) error {
		keys := bucket(tx, bktAPIKeys)
		var err error
		out, err = listJSON[tenant.APIKey](bucket(tx, bktAPIKeysByMerchant), prefixOf(merchantID), func(_, hash []byte) []byte {
			return keys.Get(hash)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list api keys of merchant %q: %w", merchantID, err)
	}
	return out, nil
}

// RevokeAPIKey marks the merchant's key revoked at `at`. Revoking a revoked
// key succeeds and keeps the first time; storeerr.ErrNotFound if the merchant
// has no such key.
func (s *Store) RevokeAPIKey(ctx context.Context, merchantID, keyID string, at time.Time) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		keys := bucket(tx, bktAPIKeys)
		hash := bucket(tx, bktAPIKeysByMerchant).Get(compositeKey(merchantID, keyID))
		if hash == nil {
			return storeerr.ErrNotFound
		}
		var k tenant.APIKey
		if err := mustGet(keys, hash, &k); err != nil {
			return fmt.Errorf("dangling key index: %w", err)
		}
		if k.Revoked() {
			return nil
		}
		at := at.UTC()
		k.RevokedAt = &at
		return putJSON(keys, hash, k)
	})
	if err != nil {
		return fmt.Errorf("embedded: revoke api key %q of merchant %q: %w", keyID, merchantID, err)
	}
	return nil
}

// PutSubscription creates or replaces a merchant's webhook subscription.
func (s *Store) PutSubscription(ctx context.Context, sub tenant.Subscription) error {
	switch {
	case sub.ID == "":
		return fmt.Errorf("embedded: put subscription: %w", errEmpty("id"))
	case sub.MerchantID == "":
		return fmt.Errorf("embedded: put subscription %q: %w", sub.ID, errEmpty("merchant id"))
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(bucket(tx, bktSubscriptions), compositeKey(sub.MerchantID, sub.ID), utc.Subscription(sub))
	})
	if err != nil {
		return fmt.Errorf("embedded: put subscription %q of merchant %q: %w", sub.ID, sub.MerchantID, err)
	}
	return nil
}

// GetSubscription returns the merchant's subscription, or storeerr.ErrNotFound.
func (s *Store) GetSubscription(ctx context.Context, merchantID, id string) (tenant.Subscription, error) {
	var sub tenant.Subscription
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return mustGet(bucket(tx, bktSubscriptions), compositeKey(merchantID, id), &sub)
	})
	if err != nil {
		return tenant.Subscription{}, fmt.Errorf("embedded: get subscription %q of merchant %q: %w", id, merchantID, err)
	}
	return sub, nil
}

// ListSubscriptions returns the merchant's subscriptions, sorted by ID.
func (s *Store) ListSubscriptions(ctx context.Context, merchantID string) ([]tenant.Subscription, error) {
	var out []tenant.Subscription
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = listJSON[tenant.Subscription](bucket(tx, bktSubscriptions), prefixOf(merchantID), nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list subscriptions of merchant %q: %w", merchantID, err)
	}
	return out, nil
}
