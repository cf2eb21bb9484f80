package adminapi

import (
	"context"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/tenant"
)

// Keys are the local server's own API keys, one per merchant, held in
// memory only: the dashboard and the admin API read payments, events and
// deliveries, retry deliveries and make the dashboard's captures, refunds
// and reversals through the merchant API itself with them. They are never
// stored, listed or printed, allow only payments-read, webhooks,
// captures, refunds and reversals, and die with the process.
type Keys struct {
	env   tenant.Environment
	clock func() time.Time

	mu         sync.Mutex
	byMerchant map[string]string        // merchant id -> key
	byHash     map[string]tenant.APIKey // key hash -> key record
}

// NewKeys returns the in-memory keys of a server of environment env.
func NewKeys(env tenant.Environment, now func() time.Time) *Keys {
	return &Keys{env: env, clock: now, byMerchant: map[string]string{}, byHash: map[string]tenant.APIKey{}}
}

// For returns merchantID's key, making it on first use: for a merchant
// that exists (the caller checks).
func (k *Keys) For(merchantID string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key, ok := k.byMerchant[merchantID]; ok {
		return key, nil
	}
	key, err := tenant.NewKeySecret(k.env)
	if err != nil {
		return "", err
	}
	k.byMerchant[merchantID] = key
	k.byHash[tenant.HashKey(key)] = tenant.APIKey{
		ID: "key_local_" + merchantID, Hash: tenant.HashKey(key), Hint: tenant.KeyHint(key),
		Name: "the local server's dashboard and admin API (in memory)", MerchantID: merchantID, Environment: k.env,
		Permissions:   []tenant.Permission{tenant.PermPaymentsRead, tenant.PermWebhooks, tenant.PermCaptures, tenant.PermRefunds, tenant.PermReversals},
		RatePerSecond: 10000, Burst: 20000, CreatedAt: k.clock(),
	}
	return key, nil
}

// Tenants returns s answering for these keys too: the authenticator of
// the local server's API is built over it.
func (k *Keys) Tenants(s tenant.Store) tenant.Store { return keyedTenants{Store: s, keys: k} }

type keyedTenants struct {
	tenant.Store
	keys *Keys
}

func (s keyedTenants) GetAPIKeyByHash(ctx context.Context, hash string) (tenant.APIKey, error) {
	s.keys.mu.Lock()
	key, ok := s.keys.byHash[hash]
	s.keys.mu.Unlock()
	if ok {
		return key, nil
	}
	return s.Store.GetAPIKeyByHash(ctx, hash)
}
