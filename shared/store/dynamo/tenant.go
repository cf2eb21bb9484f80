package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Key parts of tenant items (see doc.go).
const (
	pfxMerchant  = "MERCHANT#"
	pfxSite      = "SITE#"
	pfxAPIKey    = "APIKEY#"
	pfxKeyRef    = "KEY#"
	pfxSub       = "SUB#"
	skMeta       = "META"
	gsiMerchants = "MERCHANTS"
)

// PutMerchant creates or replaces a merchant. A new merchant is created
// with its listing shard counts (newShards, shards.go), in one
// transaction; replacing one keeps its counts.
func (s *Store) PutMerchant(ctx context.Context, m tenant.Merchant) error {
	if m.ID == "" {
		return fmt.Errorf("dynamo: put merchant: %w", errEmpty("id"))
	}
	item, err := MerchantItem(m)
	if err == nil {
		cond, names, _ := versionCondition(0) // absent
		_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			condPut(s.table, item, cond, names, nil), condPut(s.table, ShardsItem(m.ID, newShards), cond, names, nil)}})
		if transactionConditionFailed(err) { // it exists: replaced, its counts kept
			err = s.putItem(ctx, item)
		}
	}
	return wrapErr(err, "put merchant %q", m.ID)
}

// GetMerchant returns a merchant, or storeerr.ErrNotFound.
func (s *Store) GetMerchant(ctx context.Context, id string) (tenant.Merchant, error) {
	return getRecord(ctx, s, pfxMerchant+id, skMeta, records.Merchant.ToMerchant, "get merchant %q", id)
}

// ListMerchants returns every merchant, sorted by ID. It reads gsi1, so a
// merchant written a moment ago may be missing.
func (s *Store) ListMerchants(ctx context.Context) ([]tenant.Merchant, error) {
	return listRecords(ctx, s, indexQuery(gsiMerchants, pfxMerchant), records.Merchant.ToMerchant,
		func(m tenant.Merchant) string { return m.ID }, "list merchants")
}

// PutSite creates or replaces a site.
func (s *Store) PutSite(ctx context.Context, site tenant.Site) error {
	switch {
	case site.ID == "":
		return fmt.Errorf("dynamo: put site: %w", errEmpty("id"))
	case site.MerchantID == "":
		return fmt.Errorf("dynamo: put site %q: %w", site.ID, errEmpty("merchant id"))
	}
	item, err := SiteItem(site)
	if err == nil {
		err = s.putItem(ctx, item)
	}
	return wrapErr(err, "put site %q", site.ID)
}

// GetSite returns a site, or storeerr.ErrNotFound.
func (s *Store) GetSite(ctx context.Context, id string) (tenant.Site, error) {
	return getRecord(ctx, s, pfxSite+id, skMeta, records.Site.ToSite, "get site %q", id)
}

// ListSites returns the merchant's sites, sorted by ID. It reads gsi1, so a
// site written a moment ago may be missing.
func (s *Store) ListSites(ctx context.Context, merchantID string) ([]tenant.Site, error) {
	return listRecords(ctx, s, indexQuery(pfxMerchant+merchantID, pfxSite), records.Site.ToSite,
		func(x tenant.Site) string { return x.ID }, "list sites of merchant %q", merchantID)
}

// APIKeyItems are the two items of an API key: by hash and under its
// merchant.
func APIKeyItems(k tenant.APIKey) (byHash, byOwner Item, err error) {
	rec := records.FromAPIKey(k)
	k = rec.ToAPIKey() // times in UTC
	if byHash, err = dataItem(pfxAPIKey+k.Hash, skMeta, rec); err != nil {
		return nil, nil, err
	}
	if byOwner, err = dataItem(pfxMerchant+k.MerchantID, pfxKeyRef+k.ID, rec); err != nil {
		return nil, nil, err
	}
	byOwner[attrHash] = str(k.Hash)
	if k.RevokedAt != nil {
		byHash[attrRevokedAt], byOwner[attrRevokedAt] = rfc3339(*k.RevokedAt), rfc3339(*k.RevokedAt)
	}
	return byHash, byOwner, nil
}

// writeAPIKey writes both items of k in one transaction, each conditional
// on cond (which uses the attribute names in names).
func (s *Store) writeAPIKey(ctx context.Context, k tenant.APIKey, cond string, names map[string]string) error {
	byHash, byOwner, err := APIKeyItems(k)
	if err != nil {
		return err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		condPut(s.table, byHash, aws.String(cond), names, nil), condPut(s.table, byOwner, aws.String(cond), names, nil)}})
	if transactionConditionFailed(err) {
		if wroteItems(err, byHash, byOwner) {
			return nil
		}
		return storeerr.ErrConflict
	}
	return err
}

// CreateAPIKey stores a new key; storeerr.ErrConflict if its hash, or its ID
// for the same merchant, exists.
func (s *Store) CreateAPIKey(ctx context.Context, k tenant.APIKey) error {
	switch {
	case k.ID == "":
		return fmt.Errorf("dynamo: create api key: %w", errEmpty("id"))
	case k.Hash == "":
		return fmt.Errorf("dynamo: create api key %q: %w", k.ID, errEmpty("hash"))
	case k.MerchantID == "":
		return fmt.Errorf("dynamo: create api key %q: %w", k.ID, errEmpty("merchant id"))
	}
	err := s.writeAPIKey(ctx, k, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK})
	return wrapErr(err, "create api key %q of merchant %q", k.ID, k.MerchantID)
}

// GetAPIKeyByHash returns the key with that hash, or storeerr.ErrNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (tenant.APIKey, error) {
	// The hash identifies a secret: keep it out of errors and logs.
	return getRecord(ctx, s, pfxAPIKey+hash, skMeta, records.APIKey.ToAPIKey, "get api key by hash")
}

// ListAPIKeys returns the merchant's keys (revoked ones included), sorted by ID.
func (s *Store) ListAPIKeys(ctx context.Context, merchantID string) ([]tenant.APIKey, error) {
	return listRecords(ctx, s, partitionQuery(pfxMerchant+merchantID, pfxKeyRef), records.APIKey.ToAPIKey,
		func(k tenant.APIKey) string { return k.ID }, "list api keys of merchant %q", merchantID)
}

// RevokeAPIKey marks the merchant's key revoked at `at`, in both its items.
// Revoking a revoked key succeeds and keeps the first time;
// storeerr.ErrNotFound if the merchant has no such key.
func (s *Store) RevokeAPIKey(ctx context.Context, merchantID, keyID string, at time.Time) error {
	const attempts = 3
	var err error
	for range attempts {
		var rec records.APIKey
		rec, err = getData[records.APIKey](ctx, s, pfxMerchant+merchantID, pfxKeyRef+keyID)
		k := rec.ToAPIKey()
		if err != nil || k.Revoked() {
			break
		}
		at := at.UTC()
		k.RevokedAt = &at
		err = s.writeAPIKey(ctx, k, "attribute_exists(#pk) AND attribute_not_exists(#revoked)",
			map[string]string{"#pk": attrPK, "#revoked": attrRevokedAt})
		if !errors.Is(err, storeerr.ErrConflict) {
			break // done, or failed; on conflict someone else wrote: look again
		}
	}
	return wrapErr(err, "revoke api key %q of merchant %q", keyID, merchantID)
}

// PutSubscription creates or replaces a merchant's webhook subscription.
func (s *Store) PutSubscription(ctx context.Context, sub tenant.Subscription) error {
	switch {
	case sub.ID == "":
		return fmt.Errorf("dynamo: put subscription: %w", errEmpty("id"))
	case sub.MerchantID == "":
		return fmt.Errorf("dynamo: put subscription %q: %w", sub.ID, errEmpty("merchant id"))
	}
	item, err := SubscriptionItem(sub)
	if err == nil {
		err = s.putItem(ctx, item)
	}
	return wrapErr(err, "put subscription %q of merchant %q", sub.ID, sub.MerchantID)
}

// GetSubscription returns the merchant's subscription, or storeerr.ErrNotFound.
func (s *Store) GetSubscription(ctx context.Context, merchantID, id string) (tenant.Subscription, error) {
	return getRecord(ctx, s, pfxMerchant+merchantID, pfxSub+id, records.Subscription.ToSubscription,
		"get subscription %q of merchant %q", id, merchantID)
}

// ListSubscriptions returns the merchant's subscriptions, sorted by ID.
func (s *Store) ListSubscriptions(ctx context.Context, merchantID string) ([]tenant.Subscription, error) {
	return listRecords(ctx, s, partitionQuery(pfxMerchant+merchantID, pfxSub), records.Subscription.ToSubscription,
		func(x tenant.Subscription) string { return x.ID }, "list subscriptions of merchant %q", merchantID)
}
