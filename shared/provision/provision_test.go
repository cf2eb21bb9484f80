package provision_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks/target"
)

func newProv(t *testing.T) (*provision.Provisioner, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	st, err := embedded.Open(filepath.Join(t.TempDir(), "db"), embedded.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &provision.Provisioner{Store: st, Env: tenant.EnvTest, Clock: clk}, clk
}

func TestSeedIsIdempotentAndKeysAreHashed(t *testing.T) {
	ctx := context.Background()
	p, _ := newProv(t)
	s, err := provision.LoadSeed("../../cmd/paysvc-local/seed.example.json")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := p.ApplySeed(ctx, s); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
	}
	keys, err := p.Store.ListAPIKeys(ctx, "m_acme")
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	k := keys[0]
	if k.Hash != tenant.HashKey(s.APIKeys[0].Key) || k.Hint == s.APIKeys[0].Key || len(k.Permissions) != len(tenant.AllPermissions) {
		t.Fatalf("stored key %+v", k)
	}
	subs, _ := p.Store.ListSubscriptions(ctx, "m_acme")
	if len(subs) != 1 || subs[0].Secrets[0].Value != s.Subscriptions[0].Secret {
		t.Fatalf("subs %+v", subs)
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	p, _ := newProv(t)
	if _, err := p.PutMerchant(ctx, tenant.Merchant{ID: "bad id", Country: "NL"}); err == nil {
		t.Fatal("bad id accepted")
	}
	if _, err := p.PutMerchant(ctx, tenant.Merchant{ID: "m1", Country: "Netherlands"}); err == nil {
		t.Fatal("bad country accepted")
	}
	if _, err := p.PutSite(ctx, tenant.Site{ID: "s1", MerchantID: "nobody"}); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("site of unknown merchant: %v", err)
	}
	if _, err := p.PutMerchant(ctx, tenant.Merchant{ID: "m1", Country: "NL"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.CreateAPIKey(ctx, provision.KeySpec{MerchantID: "m1", Permissions: []tenant.Permission{"everything"}}); err == nil {
		t.Fatal("unknown permission accepted")
	}
	if _, _, err := p.CreateAPIKey(ctx, provision.KeySpec{MerchantID: "m1", Secret: "yp_test_short"}); err == nil {
		t.Fatal("short key accepted")
	}
	k, secret, err := p.CreateAPIKey(ctx, provision.KeySpec{MerchantID: "m1"})
	if err != nil || k.Environment != tenant.EnvTest || tenant.HashKey(secret) != k.Hash {
		t.Fatalf("%+v %v", k, err)
	}
}

func TestRotateSecretKeepsOldOneForTheOverlap(t *testing.T) {
	ctx := context.Background()
	p, clk := newProv(t)
	if _, err := p.PutMerchant(ctx, tenant.Merchant{ID: "m1", Country: "NL"}); err != nil {
		t.Fatal(err)
	}
	sub, first, err := p.PutSubscription(ctx, provision.SubscriptionSpec{MerchantID: "m1", URL: "https://m.example/hook"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.RotateSecret(ctx, "m1", sub.ID, 24*time.Hour)
	if err != nil || second == first {
		t.Fatal(err)
	}
	got, _ := p.Store.GetSubscription(ctx, "m1", sub.ID)
	active := got.ActiveSecrets(clk.Now())
	if len(active) != 2 || active[0].Value != second || active[1].Value != first {
		t.Fatalf("active %+v", active)
	}
	clk.Advance(24*time.Hour + time.Second)
	active = got.ActiveSecrets(clk.Now())
	if len(active) != 1 || active[0].Value != second {
		t.Fatalf("after overlap %+v", active)
	}
}

func TestParseSeedRefusesAmbiguousDocuments(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"duplicate at top", `{"merchants":[],"merchants":[{"id":"m_x"}]}`, "merchants: is given more than once"},
		{"duplicate in a subscription", `{"subscriptions":[{"url":"https://a.example/","url":"https://169.254.169.254/"}]}`, "subscriptions[0].url: is given more than once"},
		{"unknown field", `{"merchant":[]}`, "unknown field"},
		{"trailing data", `{"merchants":[]} {"merchants":[]}`, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := provision.ParseSeed([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	// A document that is not a seed: its errors quote nothing of it.
	for _, doc := range []string{"~root:x:0:0:hunter2", `{"privateThing":"hunter2"}`, `{"privateThing":1,"privateThing":2}`, `{"merchants":"hunter2"}`} {
		_, err := provision.ParseSeed([]byte(doc))
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "privateThing") || strings.Contains(err.Error(), "~") {
			t.Errorf("%s: err = %v, want one quoting nothing of it", doc, err)
		}
	}
	if s, err := provision.ParseSeed([]byte(`{"merchants":[{"id":"m_x","name":"X","country":"NL"}]}`)); err != nil || len(s.Merchants) != 1 {
		t.Fatalf("valid seed: %+v %v", s, err)
	}
}

// Every way a subscription gets in goes through the one target check: seeds
// included (they once stored metadata and private addresses unchecked).
func TestSubscriptionTargetsCheckedOnEveryEntry(t *testing.T) {
	ctx := context.Background()
	p, _ := newProv(t)
	if _, err := p.PutMerchant(ctx, tenant.Merchant{ID: "m1", Country: "NL"}); err != nil {
		t.Fatal(err)
	}
	refused := []string{
		"https://169.254.169.254/latest", "http://10.0.0.5:8080/x", "https://2130706433/", "https://0177.0.0.1/",
		"https://0x7f000001/", "https://127.1/", "https://0/", "https://LOCALHOST./", "https://ip6-localhost/",
		"https://metadata.google.internal/", "https://100.64.0.1/", "http://hooks.shop.example/", "https://hooks.shop.example:8443/",
	}
	for i, u := range refused {
		t.Run(u, func(t *testing.T) {
			_, _, err := p.PutSubscription(ctx, provision.SubscriptionSpec{MerchantID: "m1", URL: u})
			if !errors.Is(err, target.ErrRefused) {
				t.Errorf("PutSubscription: %v, want refused", err)
			}
			seed := provision.Seed{Subscriptions: []provision.SeedSub{{ID: fmt.Sprintf("sub_%d", i), MerchantID: "m1", URL: u}}}
			if err := p.ApplySeed(ctx, seed); !errors.Is(err, target.ErrRefused) {
				t.Errorf("ApplySeed: %v, want refused", err)
			}
			if _, err := p.Store.GetSubscription(ctx, "m1", fmt.Sprintf("sub_%d", i)); err == nil {
				t.Error("the refused subscription was stored")
			}
		})
	}
	// Local targets only when asked for, loopback only.
	seed := provision.Seed{Subscriptions: []provision.SeedSub{{ID: "sub_local", MerchantID: "m1", URL: "http://127.0.0.1:4000/webhooks", AllowInsecureLocal: true}}}
	if err := p.ApplySeed(ctx, seed); err != nil {
		t.Fatalf("local seed target with allowInsecureLocal: %v", err)
	}
	seed.Subscriptions[0].URL, seed.Subscriptions[0].ID = "http://10.0.0.5:8080/x", "sub_private"
	if err := p.ApplySeed(ctx, seed); !errors.Is(err, target.ErrRefused) {
		t.Fatalf("private target with allowInsecureLocal: %v", err)
	}
}
