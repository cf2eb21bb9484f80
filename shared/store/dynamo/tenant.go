package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sort"
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
		_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(s.table), Item: item, ConditionExpression: aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": attrPK}}},
			{Put: &types.Put{TableName: aws.String(s.table), Item: ShardsItem(m.ID, newShards), ConditionExpression: aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": attrPK}}},
		}})
		if transactionConditionFailed(err) { // it exists: replaced, its counts kept
			err = s.putItem(ctx, item)
		}
	}
	if err != nil {
		return fmt.Errorf("dynamo: put merchant %q: %w", m.ID, err)
	}
	return nil
}

// GetMerchant returns a merchant, or storeerr.ErrNotFound.
func (s *Store) GetMerchant(ctx context.Context, id string) (tenant.Merchant, error) {
	rec, err := getData[records.Merchant](ctx, s, pfxMerchant+id, skMeta)
	m := rec.ToMerchant()
	if err != nil {
		return tenant.Merchant{}, fmt.Errorf("dynamo: get merchant %q: %w", id, err)
	}
	return m, nil
}

// ListMerchants returns every merchant, sorted by ID. It reads gsi1, so a
// merchant written a moment ago may be missing.
func (s *Store) ListMerchants(ctx context.Context) ([]tenant.Merchant, error) {
	recs, err := queryData[records.Merchant](ctx, s, indexQuery(gsiMerchants, pfxMerchant))
	ms := records.Convert(recs, records.Merchant.ToMerchant)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list merchants: %w", err)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	return ms, nil
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
	if err != nil {
		return fmt.Errorf("dynamo: put site %q: %w", site.ID, err)
	}
	return nil
}

// GetSite returns a site, or storeerr.ErrNotFound.
func (s *Store) GetSite(ctx context.Context, id string) (tenant.Site, error) {
	rec, err := getData[records.Site](ctx, s, pfxSite+id, skMeta)
	site := rec.ToSite()
	if err != nil {
		return tenant.Site{}, fmt.Errorf("dynamo: get site %q: %w", id, err)
	}
	return site, nil
}

// ListSites returns the merchant's sites, sorted by ID. It reads gsi1, so a
// site written a moment ago may be missing.
func (s *Store) ListSites(ctx context.Context, merchantID string) ([]tenant.Site, error) {
	recs, err := queryData[records.Site](ctx, s, indexQuery(pfxMerchant+merchantID, pfxSite))
	sites := records.Convert(recs, records.Site.ToSite)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list sites of merchant %q: %w", merchantID, err)
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].ID < sites[j].ID })
	return sites, nil
}

// apiKeyItems returns the two items of a key: by hash and under its merchant.
func apiKeyItems(k tenant.APIKey) (byHash, byOwner map[string]types.AttributeValue, err error) {
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
	byHash, byOwner, err := apiKeyItems(k)
	if err != nil {
		return err
	}
	put := func(item map[string]types.AttributeValue) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{
			TableName:                           aws.String(s.table),
			Item:                                item,
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            names,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{put(byHash), put(byOwner)},
	})
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
	if err != nil {
		return fmt.Errorf("dynamo: create api key %q of merchant %q: %w", k.ID, k.MerchantID, err)
	}
	return nil
}

// GetAPIKeyByHash returns the key with that hash, or storeerr.ErrNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (tenant.APIKey, error) {
	rec, err := getData[records.APIKey](ctx, s, pfxAPIKey+hash, skMeta)
	k := rec.ToAPIKey()
	if err != nil {
		// The hash identifies a secret: keep it out of errors and logs.
		return tenant.APIKey{}, fmt.Errorf("dynamo: get api key by hash: %w", err)
	}
	return k, nil
}

// ListAPIKeys returns the merchant's keys (revoked ones included), sorted by ID.
func (s *Store) ListAPIKeys(ctx context.Context, merchantID string) ([]tenant.APIKey, error) {
	recs, err := queryData[records.APIKey](ctx, s, partitionQuery(pfxMerchant+merchantID, pfxKeyRef))
	keys := records.Convert(recs, records.APIKey.ToAPIKey)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list api keys of merchant %q: %w", merchantID, err)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ID < keys[j].ID })
	return keys, nil
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
	if err != nil {
		return fmt.Errorf("dynamo: revoke api key %q of merchant %q: %w", keyID, merchantID, err)
	}
	return nil
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
	if err != nil {
		return fmt.Errorf("dynamo: put subscription %q of merchant %q: %w", sub.ID, sub.MerchantID, err)
	}
	return nil
}

// GetSubscription returns the merchant's subscription, or storeerr.ErrNotFound.
func (s *Store) GetSubscription(ctx context.Context, merchantID, id string) (tenant.Subscription, error) {
	rec, err := getData[records.Subscription](ctx, s, pfxMerchant+merchantID, pfxSub+id)
	sub := rec.ToSubscription()
	if err != nil {
		return tenant.Subscription{}, fmt.Errorf("dynamo: get subscription %q of merchant %q: %w", id, merchantID, err)
	}
	return sub, nil
}

// ListSubscriptions returns the merchant's subscriptions, sorted by ID.
func (s *Store) ListSubscriptions(ctx context.Context, merchantID string) ([]tenant.Subscription, error) {
	recs, err := queryData[records.Subscription](ctx, s, partitionQuery(pfxMerchant+merchantID, pfxSub))
	subs := records.Convert(recs, records.Subscription.ToSubscription)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list subscriptions of merchant %q: %w", merchantID, err)
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].ID < subs[j].ID })
	return subs, nil
}
