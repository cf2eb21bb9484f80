package tenant_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// memTenants is an in-memory fake of the lookups the Authenticator makes
// through tenant.Store, counting them.
type memTenants struct {
	tenant.Store // the provisioning methods are not used here
	mu           sync.Mutex
	keys         map[string]tenant.APIKey
	merchants    map[string]tenant.Merchant
	sites        map[string]tenant.Site
	loads        int
	fail         error
}

func (m *memTenants) get(found bool) error {
	m.loads++
	if m.fail != nil {
		return m.fail
	}
	if !found {
		return storeerr.ErrNotFound
	}
	return nil
}

func (m *memTenants) GetAPIKeyByHash(_ context.Context, hash string) (tenant.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[hash]
	return k, m.get(ok)
}

func (m *memTenants) GetMerchant(_ context.Context, id string) (tenant.Merchant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.merchants[id]
	return v, m.get(ok)
}

func (m *memTenants) GetSite(_ context.Context, id string) (tenant.Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.sites[id]
	return v, m.get(ok)
}

// revoke marks key revoked in the store.
func (m *memTenants) revoke(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.keys[tenant.HashKey(key)]
	k.RevokedAt = &t0
	m.keys[tenant.HashKey(key)] = k
}

const (
	keyA       = "yp_test_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	keyRevoked = "yp_test_rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"
	keyLiveRow = "yp_test_llllllllllllllllllllllllllllllllllllllllll" // stored as a live key
	keyOneSite = "yp_test_ssssssssssssssssssssssssssssssssssssssssss"
	keyOff     = "yp_test_ooooooooooooooooooooooooooooooooooooooooooo" // its merchant is deactivated
	keyNoEcom  = "yp_test_nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn" // its merchant is not set up
)

var t0 = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

func newTenants() *memTenants {
	ready := tenant.Merchant{ID: "m_a", Active: true, Ecommerce: true, UpstreamAccount: "A", ClientKey: "ck", SplitAccount: "BA"}
	off := ready
	off.ID, off.Active = "m_off", false
	noEcom := ready
	noEcom.ID, noEcom.SplitAccount = "m_noecom", ""
	key := func(id, merchant string, env tenant.Environment, sites ...string) tenant.APIKey {
		return tenant.APIKey{ID: id, MerchantID: merchant, Environment: env, Permissions: []tenant.Permission{tenant.PermPayments}, SiteIDs: sites}
	}
	revoked := key("key_r", "m_a", tenant.EnvTest)
	revoked.RevokedAt = &t0
	return &memTenants{
		keys: map[string]tenant.APIKey{
			tenant.HashKey(keyA):       key("key_a", "m_a", tenant.EnvTest),
			tenant.HashKey(keyRevoked): revoked,
			tenant.HashKey(keyLiveRow): key("key_l", "m_a", tenant.EnvLive),
			tenant.HashKey(keyOneSite): key("key_s", "m_a", tenant.EnvTest, "site_other"),
			tenant.HashKey(keyOff):     key("key_o", "m_off", tenant.EnvTest),
			tenant.HashKey(keyNoEcom):  key("key_n", "m_noecom", tenant.EnvTest),
		},
		merchants: map[string]tenant.Merchant{"m_a": ready, "m_off": off, "m_noecom": noEcom},
		sites: map[string]tenant.Site{
			"site_a":     {ID: "site_a", MerchantID: "m_a", Type: tenant.SiteEcommerce, Flows: []tenant.Flow{tenant.FlowAdvanced}},
			"site_pos":   {ID: "site_pos", MerchantID: "m_a", Type: tenant.SitePOS},
			"site_b":     {ID: "site_b", MerchantID: "m_b", Type: tenant.SiteEcommerce},
			"site_off":   {ID: "site_off", MerchantID: "m_off", Type: tenant.SiteEcommerce},
			"site_noeco": {ID: "site_noeco", MerchantID: "m_noecom", Type: tenant.SiteEcommerce},
		},
	}
}

// TestSiteResolution walks a request's tenancy checks: the key, its
// permission, the site and the merchant, each refusal with its kind.
func TestSiteResolution(t *testing.T) {
	for _, tc := range []struct {
		name, authorization, site string
		perm                      tenant.Permission
		want                      apperr.Kind // 0: resolved
	}{
		{"resolved", "Bearer " + keyA, "site_a", tenant.PermPayments, 0},
		{"bearer in any case", "bearer " + keyA, "site_a", tenant.PermPayments, 0},
		{"no header", "", "site_a", tenant.PermPayments, apperr.Unauthenticated},
		{"not bearer", "Basic " + keyA, "site_a", tenant.PermPayments, apperr.Unauthenticated},
		{"not a key", "Bearer nope", "site_a", tenant.PermPayments, apperr.Unauthenticated},
		{"live key to test", "Bearer yp_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "site_a", tenant.PermPayments, apperr.Unauthenticated},
		{"unknown key", "Bearer yp_test_uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu", "site_a", tenant.PermPayments, apperr.Unauthenticated},
		{"revoked key", "Bearer " + keyRevoked, "site_a", tenant.PermPayments, apperr.Unauthenticated},
		{"stored for another environment", "Bearer " + keyLiveRow, "site_a", tenant.PermPayments, apperr.Unauthenticated},
		{"permission missing", "Bearer " + keyA, "site_a", tenant.PermCaptures, apperr.Forbidden},
		{"malformed site id", "Bearer " + keyA, "site a", tenant.PermPayments, apperr.SiteIDMalformed},
		{"site outside the key's sites", "Bearer " + keyOneSite, "site_a", tenant.PermPayments, apperr.SiteNotFound},
		{"unknown site", "Bearer " + keyA, "site_zzz", tenant.PermPayments, apperr.SiteNotFound},
		{"another merchant's site", "Bearer " + keyA, "site_b", tenant.PermPayments, apperr.SiteNotFound},
		{"point-of-sale site", "Bearer " + keyA, "site_pos", tenant.PermPayments, apperr.SiteNotFound},
		{"deactivated merchant", "Bearer " + keyOff, "site_off", tenant.PermPayments, apperr.MerchantNotFound},
		{"merchant not set up for ecommerce", "Bearer " + keyNoEcom, "site_noeco", tenant.PermPayments, apperr.MerchantNotEcommerce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tenant.NewAuthenticator(newTenants(), tenant.EnvTest, clock.NewFake(t0), 0)
			ctx := context.Background()
			p, err := a.Authenticate(ctx, tc.authorization)
			if err == nil {
				err = a.Authorize(p, tc.perm)
			}
			var site tenant.Site
			var m tenant.Merchant
			if err == nil {
				site, m, err = a.Site(ctx, p, tc.site)
			}
			if got := apperr.As(err).Kind; err != nil && got != tc.want || err == nil && tc.want != 0 {
				t.Fatalf("err %v (kind %d), want kind %d", err, got, tc.want)
			}
			if tc.want == 0 && (site.ID != tc.site || m.ID != "m_a") {
				t.Fatalf("resolved site %q merchant %q", site.ID, m.ID)
			}
		})
	}
}

func TestRequireFlow(t *testing.T) {
	s := tenant.Site{Flows: []tenant.Flow{tenant.FlowAdvanced}}
	if err := tenant.RequireFlow(s, tenant.FlowAdvanced); err != nil {
		t.Fatal(err)
	}
	if err := tenant.RequireFlow(s, tenant.FlowSessions); apperr.As(err).Kind != apperr.SiteFlowNotEnabled {
		t.Fatalf("sessions on an advanced-only site: %v", err)
	}
}

// TestCache: lookups (found or missing) are cached for the TTL, a key
// revoked in the store is refused once its entry expires, and Forget makes
// it immediate on this instance.
func TestCache(t *testing.T) {
	st, clk := newTenants(), clock.NewFake(t0)
	a := tenant.NewAuthenticator(st, tenant.EnvTest, clk, 5*time.Second)
	ctx := context.Background()
	auth := func() error { _, err := a.Authenticate(ctx, "Bearer "+keyA); return err }
	for range 3 {
		if err := auth(); err != nil {
			t.Fatal(err)
		}
	}
	if st.loads != 1 {
		t.Fatalf("%d store loads for 3 lookups within the TTL, want 1", st.loads)
	}
	unknown := "Bearer yp_test_uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu"
	_, _ = a.Authenticate(ctx, unknown)
	_, _ = a.Authenticate(ctx, unknown)
	if st.loads != 2 {
		t.Fatalf("a missing key is not cached: %d loads", st.loads)
	}

	st.revoke(keyA)
	if err := auth(); err != nil {
		t.Fatalf("within the TTL the cached key still holds: %v", err)
	}
	clk.Advance(5 * time.Second)
	if err := auth(); apperr.As(err).Kind != apperr.Unauthenticated {
		t.Fatalf("after the TTL a revoked key is refused: %v", err)
	}

	// Forget: a revocation on this instance takes effect at once.
	st2 := newTenants()
	b := tenant.NewAuthenticator(st2, tenant.EnvTest, clk, time.Hour)
	if _, err := b.Authenticate(ctx, "Bearer "+keyA); err != nil {
		t.Fatal(err)
	}
	st2.revoke(keyA)
	b.Forget(tenant.HashKey(keyA))
	if _, err := b.Authenticate(ctx, "Bearer "+keyA); apperr.As(err).Kind != apperr.Unauthenticated {
		t.Fatalf("after Forget a revoked key is refused at once: %v", err)
	}
}

// TestStoreFailureIsInternal: a store failure is a 5xx-kind error that
// names the lookup, never a refusal of the caller, and is not cached.
func TestStoreFailureIsInternal(t *testing.T) {
	st := newTenants()
	st.fail = errors.New("table unavailable")
	a := tenant.NewAuthenticator(st, tenant.EnvTest, clock.NewFake(t0), 5*time.Second)
	for range 2 {
		_, err := a.Authenticate(context.Background(), "Bearer "+keyA)
		if e := apperr.As(err); e.Kind != apperr.Internal || !errors.Is(err, st.fail) {
			t.Fatalf("err %v (kind %d)", err, e.Kind)
		}
	}
	if st.loads != 2 {
		t.Fatalf("a failure was cached: %d loads", st.loads)
	}
}

// TestHashKey: the stored hash is the hex SHA-256 of the key, for keys
// short and long (the long ones are hashed from a copy on the heap).
func TestHashKey(t *testing.T) {
	for _, key := range []string{"", "yp_test_" + strings.Repeat("k", 43), strings.Repeat("x", 256), strings.Repeat("y", 257)} {
		sum := sha256.Sum256([]byte(key))
		if got, want := tenant.HashKey(key), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("HashKey(%d bytes) = %s, want %s", len(key), got, want)
		}
	}
}

// siteAfterMerchant answers GetSite only once GetMerchant has begun: a
// Site resolution that reads them one after the other never gets its site.
type siteAfterMerchant struct {
	*memTenants
	merchantBegan chan struct{}
	once          sync.Once
}

func (s *siteAfterMerchant) GetMerchant(ctx context.Context, id string) (tenant.Merchant, error) {
	s.once.Do(func() { close(s.merchantBegan) })
	return s.memTenants.GetMerchant(ctx, id)
}

func (s *siteAfterMerchant) GetSite(ctx context.Context, id string) (tenant.Site, error) {
	select {
	case <-s.merchantBegan:
	case <-time.After(10 * time.Second): // a failure guard only: the passing run never waits here
		return tenant.Site{}, errors.New("the merchant was not read alongside the site")
	}
	return s.memTenants.GetSite(ctx, id)
}

// TestSiteAndMerchantLoadTogether: with neither cached, a request's site
// and merchant are read at the same time (one round trip after the key's),
// and the site's refusal still comes first.
func TestSiteAndMerchantLoadTogether(t *testing.T) {
	st := &siteAfterMerchant{memTenants: newTenants(), merchantBegan: make(chan struct{})}
	a := tenant.NewAuthenticator(st, tenant.EnvTest, clock.NewFake(t0), 5*time.Second)
	ctx := context.Background()
	p, err := a.Authenticate(ctx, "Bearer "+keyOff)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Site(ctx, p, "site_b"); apperr.As(err).Kind != apperr.SiteNotFound {
		t.Fatalf("another merchant's site, with the caller's merchant deactivated: %v (the site's refusal first)", err)
	}
	if _, _, err := a.Site(ctx, p, "site_off"); apperr.As(err).Kind != apperr.MerchantNotFound {
		t.Fatalf("own site, merchant deactivated: %v", err)
	}
	p, _ = a.Authenticate(ctx, "Bearer "+keyA)
	s, m, err := a.Site(ctx, p, "site_a")
	if err != nil || s.ID != "site_a" || m.ID != "m_a" {
		t.Fatalf("site %q merchant %q: %v", s.ID, m.ID, err)
	}
}
