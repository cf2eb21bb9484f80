package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// TestTenantStore checks the tenant.Store contract: getters return
// storeerr.ErrNotFound, puts are upserts, lists are sorted by ID and scoped to
// one merchant, API keys are unique by hash and revocation is idempotent.
func TestTenantStore(t *testing.T, newStore Factory[tenant.Store]) {
	t.Helper()
	runCases(t, newStore, []testCase[tenant.Store]{
		{"NotFound", testTenantNotFound},
		{"MerchantUpsertAndList", testMerchantUpsertAndList},
		{"SiteUpsertAndListByMerchant", testSiteUpsertAndList},
		{"SiteMovesToAnotherMerchant", testSiteMoves},
		{"APIKeyCreateGetList", testAPIKeyCreateGetList},
		{"APIKeyConflict", testAPIKeyConflict},
		{"APIKeyRevoke", testAPIKeyRevoke},
		{"SubscriptionUpsertAndList", testSubscriptionUpsertAndList},
		{"TimesStoredAsUTC", testTenantTimesUTC},
		{"EmptyIDsRejected", testTenantEmptyIDs},
	})
}

func merchant(id string) tenant.Merchant {
	return tenant.Merchant{
		ID: id, Name: "Merchant " + id, Country: "NL", Active: true,
		CaptureMode: tenant.CaptureManual, Ecommerce: true,
		UpstreamAccount: "Acct" + id, ClientKey: "test_CK" + id, SplitAccount: "BA" + id,
		CommissionAccount: "BAplatform", CommissionBps: 150, CommissionFixed: 10,
		CreatedAt: epoch(),
	}
}

func site(id, merchantID string) tenant.Site {
	return tenant.Site{
		ID: id, MerchantID: merchantID, Name: "Site " + id, Type: tenant.SiteEcommerce,
		Flows: []tenant.Flow{tenant.FlowSessions, tenant.FlowAdvanced}, CreatedAt: epoch(),
	}
}

func apiKey(id, merchantID, hash string) tenant.APIKey {
	return tenant.APIKey{
		ID: id, Hash: hash, Hint: "sk_test_…" + id, Name: "key " + id,
		MerchantID: merchantID, Environment: tenant.EnvTest,
		Permissions: []tenant.Permission{tenant.PermPayments, tenant.PermCaptures},
		SiteIDs:     []string{"site_1"}, RatePerSecond: 5, Burst: 10, CreatedAt: epoch(),
	}
}

func subscription(id, merchantID string) tenant.Subscription {
	expires := epoch().Add(24 * time.Hour)
	return tenant.Subscription{
		ID: id, MerchantID: merchantID, URL: "https://example.com/hooks/" + id,
		Secrets: []tenant.Secret{
			{Value: "whsec_old" + id, CreatedAt: epoch().Add(-time.Hour), ExpiresAt: &expires},
			{Value: "whsec_new" + id, CreatedAt: epoch()},
		},
		EventCodes: []string{"AUTHORISATION", "CAPTURE"}, Enabled: true, CreatedAt: epoch(),
	}
}

func testTenantNotFound(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	noErr(t, s.PutMerchant(ctx, merchant("m_a")), "PutMerchant")
	noErr(t, s.PutSubscription(ctx, subscription("sub_1", "m_a")), "PutSubscription")
	noErr(t, s.CreateAPIKey(ctx, apiKey("key_1", "m_a", "hash1")), "CreateAPIKey")
	tests := []struct {
		name string
		call func() error
	}{
		{"GetMerchant", func() error { _, err := s.GetMerchant(ctx, "m_missing"); return err }},
		{"GetSite", func() error { _, err := s.GetSite(ctx, "site_missing"); return err }},
		{"GetAPIKeyByHash", func() error { _, err := s.GetAPIKeyByHash(ctx, "hash_missing"); return err }},
		{"GetSubscription/unknown id", func() error { _, err := s.GetSubscription(ctx, "m_a", "sub_missing"); return err }},
		{"GetSubscription/other merchant", func() error { _, err := s.GetSubscription(ctx, "m_b", "sub_1"); return err }},
		{"RevokeAPIKey/unknown id", func() error { return s.RevokeAPIKey(ctx, "m_a", "key_missing", epoch()) }},
		{"RevokeAPIKey/unknown merchant", func() error { return s.RevokeAPIKey(ctx, "m_missing", "key_1", epoch()) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.call(), storeerr.ErrNotFound, tc.name) })
	}
	// Empty lists are not errors.
	for name, call := range map[string]func() (int, error){
		"ListSites":         func() (int, error) { x, err := s.ListSites(ctx, "m_missing"); return len(x), err },
		"ListAPIKeys":       func() (int, error) { x, err := s.ListAPIKeys(ctx, "m_missing"); return len(x), err },
		"ListSubscriptions": func() (int, error) { x, err := s.ListSubscriptions(ctx, "m_missing"); return len(x), err },
	} {
		n, err := call()
		noErr(t, err, name)
		if n != 0 {
			t.Fatalf("%s for an unknown merchant: got %d items, want 0", name, n)
		}
	}
}

func testMerchantUpsertAndList(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	ms, err := s.ListMerchants(ctx)
	noErr(t, err, "ListMerchants on empty store")
	if len(ms) != 0 {
		t.Fatalf("ListMerchants on empty store: got %d, want 0", len(ms))
	}
	for _, id := range []string{"m_c", "m_a", "m_b"} {
		noErr(t, s.PutMerchant(ctx, merchant(id)), "PutMerchant "+id)
	}
	got, err := s.GetMerchant(ctx, "m_b")
	noErr(t, err, "GetMerchant")
	same(t, got, merchant("m_b"), "GetMerchant")

	updated := merchant("m_b")
	updated.Name, updated.Active, updated.CaptureMode, updated.CommissionBps = "Renamed", false, tenant.CaptureAuto, 0
	updated.CommissionAccount = ""
	noErr(t, s.PutMerchant(ctx, updated), "PutMerchant (update)")
	got, err = s.GetMerchant(ctx, "m_b")
	noErr(t, err, "GetMerchant after update")
	same(t, got, updated, "GetMerchant after update")

	ms, err = s.ListMerchants(ctx)
	noErr(t, err, "ListMerchants")
	same(t, ids(ms, func(m tenant.Merchant) string { return m.ID }), []string{"m_a", "m_b", "m_c"}, "ListMerchants order")
	same(t, ms[1], updated, "ListMerchants returns the updated record")
}

func testSiteUpsertAndList(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	for _, st := range []tenant.Site{site("site_2", "m_a"), site("site_3", "m_b"), site("site_1", "m_a"), site("site_10", "m_a")} {
		noErr(t, s.PutSite(ctx, st), "PutSite "+st.ID)
	}
	got, err := s.GetSite(ctx, "site_1")
	noErr(t, err, "GetSite")
	same(t, got, site("site_1", "m_a"), "GetSite")

	updated := site("site_1", "m_a")
	updated.Name, updated.Type, updated.Flows = "POS terminal", tenant.SitePOS, nil
	noErr(t, s.PutSite(ctx, updated), "PutSite (update)")
	got, err = s.GetSite(ctx, "site_1")
	noErr(t, err, "GetSite after update")
	same(t, got, updated, "GetSite after update")

	listsByMerchant(t, "ListSites", s.ListSites, func(x tenant.Site) (string, string) { return x.ID, x.MerchantID },
		map[string][]string{"m_a": {"site_1", "site_10", "site_2"}, "m_b": {"site_3"}, "m_c": {}})
}

// listsByMerchant checks that list(merchant) gives the ids want[merchant]
// in order, every one of that merchant (of says an item's id and merchant).
func listsByMerchant[T any](t *testing.T, what string, list func(context.Context, string) ([]T, error), of func(T) (id, merchant string), want map[string][]string) {
	t.Helper()
	for merchant, wantIDs := range want {
		got, err := list(context.Background(), merchant)
		noErr(t, err, what+" "+merchant)
		gotIDs := []string{}
		for _, x := range got {
			id, m := of(x)
			if m != merchant {
				t.Fatalf("%s(%s) returned %s of merchant %s", what, merchant, id, m)
			}
			gotIDs = append(gotIDs, id)
		}
		same(t, gotIDs, wantIDs, what+" "+merchant)
	}
}

func testSiteMoves(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	noErr(t, s.PutSite(ctx, site("site_1", "m_a")), "PutSite")
	noErr(t, s.PutSite(ctx, site("site_1", "m_b")), "PutSite (new merchant)")
	a, err := s.ListSites(ctx, "m_a")
	noErr(t, err, "ListSites m_a")
	b, err := s.ListSites(ctx, "m_b")
	noErr(t, err, "ListSites m_b")
	if len(a) != 0 || len(b) != 1 || b[0].MerchantID != "m_b" {
		t.Fatalf("after moving site_1 to m_b: ListSites(m_a)=%+v ListSites(m_b)=%+v", a, b)
	}
}

func testAPIKeyCreateGetList(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	keys := []tenant.APIKey{
		apiKey("key_b2", "m_a", "hash_b2"),
		apiKey("key_c3", "m_b", "hash_c3"),
		apiKey("key_a1", "m_a", "hash_a1"),
	}
	for _, k := range keys {
		noErr(t, s.CreateAPIKey(ctx, k), "CreateAPIKey "+k.ID)
	}
	for _, k := range keys {
		got, err := s.GetAPIKeyByHash(ctx, k.Hash)
		noErr(t, err, "GetAPIKeyByHash "+k.ID)
		same(t, got, k, "GetAPIKeyByHash "+k.ID)
		if got.Revoked() {
			t.Fatalf("new key %s is revoked", k.ID)
		}
	}
	tests := []struct {
		merchant string
		want     []tenant.APIKey
	}{
		{"m_a", []tenant.APIKey{keys[2], keys[0]}},
		{"m_b", []tenant.APIKey{keys[1]}},
	}
	for _, tc := range tests {
		got, err := s.ListAPIKeys(ctx, tc.merchant)
		noErr(t, err, "ListAPIKeys "+tc.merchant)
		same(t, got, tc.want, "ListAPIKeys "+tc.merchant)
	}
}

func testAPIKeyConflict(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	orig := apiKey("key_01", "m_a", "hash_1")
	noErr(t, s.CreateAPIKey(ctx, orig), "CreateAPIKey")
	tests := []struct {
		name string
		key  tenant.APIKey
	}{
		{"same hash, other id", apiKey("key_02", "m_a", "hash_1")},
		{"same hash, other merchant", apiKey("key_03", "m_b", "hash_1")},
		{"same id and merchant, other hash", apiKey("key_01", "m_a", "hash_2")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, s.CreateAPIKey(ctx, tc.key), storeerr.ErrConflict, "CreateAPIKey duplicate")
		})
	}
	got, err := s.GetAPIKeyByHash(ctx, "hash_1")
	noErr(t, err, "GetAPIKeyByHash after conflicts")
	same(t, got, orig, "key after conflicting creates")
	_, err = s.GetAPIKeyByHash(ctx, "hash_2")
	wantErr(t, err, storeerr.ErrNotFound, "a rejected key must not be stored")
	for _, m := range []string{"m_a", "m_b"} {
		list, err := s.ListAPIKeys(ctx, m)
		noErr(t, err, "ListAPIKeys "+m)
		wantIDs := []string{}
		if m == "m_a" {
			wantIDs = []string{"key_01"}
		}
		same(t, ids(list, func(k tenant.APIKey) string { return k.ID }), wantIDs, "ListAPIKeys after conflicts "+m)
	}
}

func testAPIKeyRevoke(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	k1, k2 := apiKey("key_01", "m_a", "hash_1"), apiKey("key_02", "m_a", "hash_2")
	kb := apiKey("key_03", "m_b", "hash_3")
	for _, k := range []tenant.APIKey{k1, k2, kb} {
		noErr(t, s.CreateAPIKey(ctx, k), "CreateAPIKey "+k.ID)
	}
	at := epoch().Add(time.Hour)
	noErr(t, s.RevokeAPIKey(ctx, "m_a", "key_01", at), "RevokeAPIKey")

	got, err := s.GetAPIKeyByHash(ctx, "hash_1")
	noErr(t, err, "GetAPIKeyByHash revoked")
	if !got.Revoked() {
		t.Fatal("GetAPIKeyByHash after revoke: key not revoked")
	}
	sameTime(t, *got.RevokedAt, at, "RevokedAt")
	want := k1
	want.RevokedAt = &at
	same(t, got, want, "revoked key (only RevokedAt changes)")

	// Idempotent: a second revoke succeeds and keeps the first time.
	noErr(t, s.RevokeAPIKey(ctx, "m_a", "key_01", at.Add(time.Hour)), "RevokeAPIKey again")
	got, err = s.GetAPIKeyByHash(ctx, "hash_1")
	noErr(t, err, "GetAPIKeyByHash after second revoke")
	sameTime(t, *got.RevokedAt, at, "RevokedAt after second revoke")

	// Another merchant cannot revoke (or even see) the key.
	wantErr(t, s.RevokeAPIKey(ctx, "m_b", "key_02", at), storeerr.ErrNotFound, "RevokeAPIKey by another merchant")
	got, err = s.GetAPIKeyByHash(ctx, "hash_2")
	noErr(t, err, "GetAPIKeyByHash key_02")
	if got.Revoked() {
		t.Fatal("key_02 was revoked by another merchant's call")
	}

	list, err := s.ListAPIKeys(ctx, "m_a")
	noErr(t, err, "ListAPIKeys")
	if len(list) != 2 || !list[0].Revoked() || list[1].Revoked() {
		t.Fatalf("ListAPIKeys after revoking key_01: %+v", list)
	}
	sameTime(t, *list[0].RevokedAt, at, "listed RevokedAt")
}

func testSubscriptionUpsertAndList(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	for _, sub := range []tenant.Subscription{subscription("sub_2", "m_a"), subscription("sub_1", "m_a"), subscription("sub_3", "m_b")} {
		noErr(t, s.PutSubscription(ctx, sub), "PutSubscription "+sub.ID)
	}
	got, err := s.GetSubscription(ctx, "m_a", "sub_1")
	noErr(t, err, "GetSubscription")
	same(t, got, subscription("sub_1", "m_a"), "GetSubscription")

	updated := subscription("sub_1", "m_a")
	updatedAt := epoch().Add(2 * time.Hour)
	updated.Enabled, updated.DisabledReason, updated.UpdatedAt = false, "too many failures", &updatedAt
	updated.Secrets, updated.EventCodes = updated.Secrets[1:], nil
	noErr(t, s.PutSubscription(ctx, updated), "PutSubscription (update)")
	got, err = s.GetSubscription(ctx, "m_a", "sub_1")
	noErr(t, err, "GetSubscription after update")
	same(t, got, updated, "GetSubscription after update")

	listsByMerchant(t, "ListSubscriptions", s.ListSubscriptions, func(x tenant.Subscription) (string, string) { return x.ID, x.MerchantID },
		map[string][]string{"m_a": {"sub_1", "sub_2"}, "m_b": {"sub_3"}, "m_c": {}})
}

func testTenantTimesUTC(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	local := epoch().In(elsewhere())
	m := merchant("m_a")
	m.CreatedAt = local
	noErr(t, s.PutMerchant(ctx, m), "PutMerchant")
	gm, err := s.GetMerchant(ctx, "m_a")
	noErr(t, err, "GetMerchant")
	sameTime(t, gm.CreatedAt, epoch(), "Merchant.CreatedAt")

	st := site("site_1", "m_a")
	st.CreatedAt = local
	noErr(t, s.PutSite(ctx, st), "PutSite")
	gs, err := s.GetSite(ctx, "site_1")
	noErr(t, err, "GetSite")
	sameTime(t, gs.CreatedAt, epoch(), "Site.CreatedAt")

	k := apiKey("key_01", "m_a", "hash_1")
	k.CreatedAt = local
	noErr(t, s.CreateAPIKey(ctx, k), "CreateAPIKey")
	noErr(t, s.RevokeAPIKey(ctx, "m_a", "key_01", local.Add(time.Minute)), "RevokeAPIKey")
	gk, err := s.GetAPIKeyByHash(ctx, "hash_1")
	noErr(t, err, "GetAPIKeyByHash")
	sameTime(t, gk.CreatedAt, epoch(), "APIKey.CreatedAt")
	sameTime(t, *gk.RevokedAt, epoch().Add(time.Minute), "APIKey.RevokedAt")

	sub := subscription("sub_1", "m_a")
	exp, upd := local.Add(time.Hour), local.Add(time.Second)
	sub.CreatedAt, sub.UpdatedAt = local, &upd
	sub.Secrets = []tenant.Secret{{Value: "whsec_x", CreatedAt: local, ExpiresAt: &exp}}
	noErr(t, s.PutSubscription(ctx, sub), "PutSubscription")
	gsub, err := s.GetSubscription(ctx, "m_a", "sub_1")
	noErr(t, err, "GetSubscription")
	sameTime(t, gsub.CreatedAt, epoch(), "Subscription.CreatedAt")
	sameTime(t, *gsub.UpdatedAt, epoch().Add(time.Second), "Subscription.UpdatedAt")
	sameTime(t, gsub.Secrets[0].CreatedAt, epoch(), "Secret.CreatedAt")
	sameTime(t, *gsub.Secrets[0].ExpiresAt, epoch().Add(time.Hour), "Secret.ExpiresAt")
	// The caller's values are not modified.
	if sub.Secrets[0].ExpiresAt.Location() == time.UTC || m.CreatedAt.Location() == time.UTC {
		t.Fatal("store modified the caller's times")
	}
}

func testTenantEmptyIDs(t *testing.T, s tenant.Store) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
	}{
		{"PutMerchant", func() error { return s.PutMerchant(ctx, merchant("")) }},
		{"PutSite", func() error { return s.PutSite(ctx, site("", "m_a")) }},
		{"PutSite/no merchant", func() error { return s.PutSite(ctx, site("site_1", "")) }},
		{"CreateAPIKey/no hash", func() error { return s.CreateAPIKey(ctx, apiKey("key_01", "m_a", "")) }},
		{"CreateAPIKey/no id", func() error { return s.CreateAPIKey(ctx, apiKey("", "m_a", "hash_1")) }},
		{"PutSubscription", func() error { return s.PutSubscription(ctx, subscription("", "m_a")) }},
	}
	for _, tc := range tests {
		if tc.call() == nil {
			t.Errorf("%s with an empty identifier: got nil error", tc.name)
		}
	}
}
