package admincli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/admincli"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// start is the fake clock's starting time.
var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// harness runs the CLI in-process against one store.
type harness struct {
	t      *testing.T
	clk    *clock.Fake
	getenv func(string) string
	dbPath string // embedded store file; "" for DynamoDB
}

// newEmbedded returns a harness on a fresh embedded store in a temp dir.
func newEmbedded(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	vars := map[string]string{"PAYSVC_STORE": "embedded", "PAYSVC_DATA_DIR": dir, "PAYSVC_ENVIRONMENT": "test"}
	return &harness{
		t: t, clk: clock.NewFake(start),
		getenv: func(k string) string { return vars[k] },
		dbPath: filepath.Join(dir, "paysvc.db"),
	}
}

// run runs the CLI and returns its exit code and output.
func (h *harness) run(args ...string) (code int, stdout, stderr string) {
	h.t.Helper()
	var out, errb bytes.Buffer
	code = admincli.Options{Clock: h.clk}.Run(context.Background(), args, h.getenv, &out, &errb)
	return code, out.String(), errb.String()
}

// ok runs the CLI, fails the test unless it succeeds, and returns stdout.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	code, out, errs := h.run(args...)
	if code != 0 {
		h.t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	return out
}

// jsonOK runs the CLI with --json and decodes its stdout into v.
func (h *harness) jsonOK(v any, args ...string) {
	h.t.Helper()
	out := h.ok(append(args, "--json")...)
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		h.t.Fatalf("%v: stdout is not the expected JSON: %v\n%s", args, err, out)
	}
	if dec.More() {
		h.t.Fatalf("%v: more than one JSON value on stdout:\n%s", args, out)
	}
}

// withStore opens the embedded store (the CLI must not be running) and
// passes it to fn.
func (h *harness) withStore(fn func(tenant.Store)) {
	h.t.Helper()
	st, err := embedded.Open(h.dbPath, embedded.WithClock(h.clk))
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	fn(st)
}

// Output shapes, as a script would decode them.
type (
	merchantOut struct {
		tenant.Merchant
		ReadyForEcommerce bool `json:"readyForEcommerce"`
	}
	keyOut struct {
		ID            string              `json:"id"`
		Name          string              `json:"name"`
		Hint          string              `json:"hint"`
		MerchantID    string              `json:"merchantId"`
		Environment   tenant.Environment  `json:"environment"`
		Permissions   []tenant.Permission `json:"permissions"`
		SiteIDs       []string            `json:"siteIds"`
		RatePerSecond int                 `json:"ratePerSecond"`
		Burst         int                 `json:"burst"`
		CreatedAt     time.Time           `json:"createdAt"`
		Revoked       bool                `json:"revoked"`
		RevokedAt     *time.Time          `json:"revokedAt"`
	}
	createdKeyOut struct {
		APIKey keyOut `json:"apiKey"`
		Key    string `json:"key"`
		Notice string `json:"notice"`
	}
	secretOut struct {
		CreatedAt time.Time  `json:"createdAt"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	subOut struct {
		ID             string      `json:"id"`
		MerchantID     string      `json:"merchantId"`
		URL            string      `json:"url"`
		EventCodes     []string    `json:"eventCodes"`
		Enabled        bool        `json:"enabled"`
		DisabledReason string      `json:"disabledReason"`
		ActiveSecrets  int         `json:"activeSecrets"`
		Secrets        []secretOut `json:"secrets"`
		CreatedAt      time.Time   `json:"createdAt"`
		UpdatedAt      *time.Time  `json:"updatedAt"`
	}
	createdSubOut struct {
		Subscription subOut `json:"subscription"`
		Secret       string `json:"secret"`
		Notice       string `json:"notice"`
	}
)

// shopArgs creates the fully set-up merchant m_shop.
var shopArgs = []string{
	"merchant", "create", "--id", "m_shop", "--name", "Shop", "--country", "nl", "--capture", "auto",
	"--upstream-account", "ShopECOM", "--client-key", "test_CLIENTKEY", "--split-account", "BA_shop",
	"--commission-account", "BA_platform", "--commission-bps", "150", "--commission-fixed", "10",
}

func TestMerchantsAndSites(t *testing.T) {
	h := newEmbedded(t)

	var m merchantOut
	h.jsonOK(&m, shopArgs...)
	if m.ID != "m_shop" || m.Country != "NL" || m.CaptureMode != tenant.CaptureAuto || !m.Active || !m.Ecommerce ||
		!m.ReadyForEcommerce || m.CommissionBps != 150 || m.CommissionFixed != 10 || !m.CreatedAt.Equal(start) {
		t.Fatalf("created merchant = %+v", m)
	}

	// Without an id one is generated; missing upstream settings are warned about.
	code, out, errs := h.run("merchant", "create", "--name", "Bare", "--country", "DE", "--ecommerce=false", "--inactive")
	if code != 0 || !strings.Contains(out, "m_") || !strings.Contains(out, "Bare") {
		t.Fatalf("create bare: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "inactive") {
		t.Errorf("no inactive warning: %q", errs)
	}
	code, _, errs = h.run("merchant", "create", "--name", "Half", "--country", "BE", "--id", "m_half")
	if code != 0 || !strings.Contains(errs, "not ready for ecommerce") || !strings.Contains(errs, "--client-key") {
		t.Fatalf("create half: exit %d, stderr %q", code, errs)
	}

	var ms []merchantOut
	h.jsonOK(&ms, "merchant", "list")
	if len(ms) != 3 {
		t.Fatalf("merchant list = %+v", ms)
	}
	text := h.ok("merchant", "list")
	if !strings.HasPrefix(text, "ID ") || !strings.Contains(text, "m_shop") || !strings.Contains(text, "m_half") {
		t.Errorf("merchant list text:\n%s", text)
	}

	// update changes only what is given.
	h.jsonOK(&m, "merchant", "update", "--id", "m_shop", "--name", "Shop Two", "--commission-bps", "200")
	if m.Name != "Shop Two" || m.CommissionBps != 200 || m.CaptureMode != tenant.CaptureAuto || m.UpstreamAccount != "ShopECOM" {
		t.Fatalf("updated merchant = %+v", m)
	}

	var site tenant.Site
	h.jsonOK(&site, "site", "create", "--merchant", "m_shop", "--id", "site_web", "--name", "Web shop")
	if site.ID != "site_web" || site.MerchantID != "m_shop" || site.Type != tenant.SiteEcommerce ||
		!slices.Equal(site.Flows, []tenant.Flow{tenant.FlowSessions, tenant.FlowAdvanced}) {
		t.Fatalf("site = %+v", site)
	}
	h.ok("site", "create", "--merchant", "m_shop", "--id", "site_pos", "--name", "Till", "--type", "pos", "--flows", "sessions")
	var sites []tenant.Site
	h.jsonOK(&sites, "site", "list", "--merchant", "m_shop")
	if len(sites) != 2 || sites[0].ID != "site_pos" || sites[0].Type != tenant.SitePOS || len(sites[0].Flows) != 1 {
		t.Fatalf("site list = %+v", sites)
	}
	if text := h.ok("site", "list", "--merchant", "m_half"); strings.Count(text, "\n") != 1 {
		t.Errorf("empty site list should be a header only:\n%s", text)
	}

	var show struct {
		Merchant             merchantOut   `json:"merchant"`
		Sites                []tenant.Site `json:"sites"`
		ActiveKeys           int           `json:"activeKeys"`
		RevokedKeys          int           `json:"revokedKeys"`
		Subscriptions        int           `json:"subscriptions"`
		EnabledSubscriptions int           `json:"enabledSubscriptions"`
	}
	h.jsonOK(&show, "merchant", "show", "--id", "m_shop")
	if show.Merchant.ID != "m_shop" || len(show.Sites) != 2 {
		t.Fatalf("merchant show = %+v", show)
	}

	h.jsonOK(&m, "merchant", "deactivate", "--id", "m_shop")
	if m.Active {
		t.Fatal("deactivate left the merchant active")
	}
	h.withStore(func(st tenant.Store) {
		got, err := st.GetMerchant(context.Background(), "m_shop")
		if err != nil || got.Active || got.Name != "Shop Two" {
			t.Fatalf("stored merchant = %+v, %v", got, err)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	h := newEmbedded(t)
	ctx := context.Background()
	h.ok(shopArgs...)
	h.ok("site", "create", "--merchant", "m_shop", "--id", "site_web", "--name", "Web")

	code, out, errs := h.run("key", "create", "--merchant", "m_shop", "--name", "backend",
		"--permissions", "config,sessions", "--sites", "site_web", "--rate", "10", "--burst", "20", "--json")
	if code != 0 {
		t.Fatalf("key create: exit %d\n%s", code, errs)
	}
	var created createdKeyOut
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("key create JSON: %v\n%s", err, out)
	}
	if !strings.Contains(errs, "cannot be shown again") || !strings.Contains(created.Notice, "cannot be shown again") {
		t.Errorf("no store-it-now notice: stderr %q, notice %q", errs, created.Notice)
	}
	k := created.APIKey
	if !strings.HasPrefix(created.Key, "yp_test_") || k.Hint != tenant.KeyHint(created.Key) ||
		!slices.Equal(k.Permissions, []tenant.Permission{tenant.PermConfig, tenant.PermSessions}) ||
		!slices.Equal(k.SiteIDs, []string{"site_web"}) || k.RatePerSecond != 10 || k.Burst != 20 || k.Revoked {
		t.Fatalf("created key = %+v", created)
	}

	// The printed key is the stored one and authenticates.
	h.withStore(func(st tenant.Store) {
		rec, err := st.GetAPIKeyByHash(ctx, tenant.HashKey(created.Key))
		if err != nil || rec.ID != k.ID || rec.MerchantID != "m_shop" {
			t.Fatalf("stored key = %+v, %v", rec, err)
		}
		p, err := tenant.NewAuthenticator(st, tenant.EnvTest, h.clk, 0).Authenticate(ctx, "Bearer "+created.Key)
		if err != nil || p.MerchantID() != "m_shop" || p.Key.ID != k.ID {
			t.Fatalf("authenticate printed key: %+v, %v", p, err)
		}
	})

	// Text output shows the key once, with the notice.
	text := h.ok("key", "create", "--merchant", "m_shop", "--permissions", "*")
	if !strings.Contains(text, "cannot be shown again") || !strings.Contains(text, "yp_test_") || !strings.Contains(text, "* (all)") {
		t.Errorf("key create text:\n%s", text)
	}

	// key list never shows a key or its hash.
	var keys []keyOut
	h.jsonOK(&keys, "key", "list", "--merchant", "m_shop")
	if len(keys) != 2 {
		t.Fatalf("key list = %+v", keys)
	}
	for _, out := range []string{h.ok("key", "list", "--merchant", "m_shop"), h.ok("key", "list", "--merchant", "m_shop", "--json")} {
		if strings.Contains(out, created.Key) || strings.Contains(out, tenant.HashKey(created.Key)) ||
			strings.Contains(out, created.Key[len(created.Key)-12:]) {
			t.Fatalf("key list shows the key or its hash:\n%s", out)
		}
		if !strings.Contains(out, k.ID) || !strings.Contains(out, k.Hint) {
			t.Errorf("key list lacks id or hint:\n%s", out)
		}
	}

	h.clk.Advance(time.Hour)
	var revoked keyOut
	h.jsonOK(&revoked, "key", "revoke", "--merchant", "m_shop", "--id", k.ID)
	if !revoked.Revoked || revoked.RevokedAt == nil || !revoked.RevokedAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("revoked key = %+v", revoked)
	}
	code, _, errs = h.run("key", "revoke", "--merchant", "m_shop", "--id", k.ID)
	if code != 0 || !strings.Contains(errs, "already revoked") {
		t.Errorf("second revoke: exit %d, %q", code, errs)
	}
	h.jsonOK(&keys, "key", "list", "--merchant", "m_shop")
	if i := slices.IndexFunc(keys, func(x keyOut) bool { return x.ID == k.ID }); i < 0 || !keys[i].Revoked {
		t.Fatalf("key list after revoke = %+v", keys)
	}
	h.withStore(func(st tenant.Store) {
		if _, err := tenant.NewAuthenticator(st, tenant.EnvTest, h.clk, 0).Authenticate(ctx, "Bearer "+created.Key); err == nil {
			t.Fatal("a revoked key still authenticates")
		}
	})
}

func TestSubscriptions(t *testing.T) {
	h := newEmbedded(t)
	ctx := context.Background()
	h.ok(shopArgs...)

	var created createdSubOut
	h.jsonOK(&created, "subscription", "create", "--merchant", "m_shop", "--id", "sub_main",
		"--url", "https://hooks.example.com/paysvc", "--events", "authorisation, CAPTURE")
	s := created.Subscription
	if !strings.HasPrefix(created.Secret, "whsec_") || s.ID != "sub_main" || !s.Enabled || s.ActiveSecrets != 1 ||
		!slices.Equal(s.EventCodes, []string{"AUTHORISATION", "CAPTURE"}) || s.Secrets[0].ExpiresAt != nil {
		t.Fatalf("created subscription = %+v", created)
	}
	h.withStore(func(st tenant.Store) {
		got, err := st.GetSubscription(ctx, "m_shop", "sub_main")
		if err != nil || len(got.Secrets) != 1 || got.Secrets[0].Value != created.Secret {
			t.Fatalf("stored subscription = %+v, %v", got, err)
		}
	})

	// rotate-secret: two active secrets, the older expiring at now+overlap.
	h.clk.Advance(2 * time.Hour)
	now := h.clk.Now()
	var rotated createdSubOut
	h.jsonOK(&rotated, "subscription", "rotate-secret", "--merchant", "m_shop", "--id", "sub_main", "--overlap", "24h")
	if !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == created.Secret || rotated.Subscription.ActiveSecrets != 2 {
		t.Fatalf("rotated = %+v", rotated)
	}
	h.withStore(func(st tenant.Store) {
		got, err := st.GetSubscription(ctx, "m_shop", "sub_main")
		if err != nil {
			t.Fatal(err)
		}
		active := got.ActiveSecrets(now)
		if len(active) != 2 {
			t.Fatalf("active secrets = %+v", active)
		}
		newest, older := active[0], active[1]
		if newest.Value != rotated.Secret || newest.ExpiresAt != nil {
			t.Errorf("newest secret = %+v", newest)
		}
		if older.Value != created.Secret || older.ExpiresAt == nil || !older.ExpiresAt.Equal(now.Add(24*time.Hour)) {
			t.Errorf("older secret = %+v, want expiry %s", older, now.Add(24*time.Hour))
		}
	})

	// list: counts and expiry, never a secret.
	var subs []subOut
	h.jsonOK(&subs, "subscription", "list", "--merchant", "m_shop")
	if len(subs) != 1 || subs[0].ActiveSecrets != 2 || subs[0].Secrets[1].ExpiresAt == nil ||
		!subs[0].Secrets[1].ExpiresAt.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("subscription list = %+v", subs)
	}
	text := h.ok("subscription", "list", "--merchant", "m_shop")
	for _, out := range []string{text, h.ok("subscription", "list", "--merchant", "m_shop", "--json")} {
		if strings.Contains(out, "whsec_") {
			t.Fatalf("subscription list shows a secret:\n%s", out)
		}
	}
	if !strings.Contains(text, "never,"+now.Add(24*time.Hour).Format(time.RFC3339)) {
		t.Errorf("subscription list text lacks the expiry:\n%s", text)
	}

	// After the overlap only the new secret is active.
	h.clk.Advance(25 * time.Hour)
	h.jsonOK(&subs, "subscription", "list", "--merchant", "m_shop")
	if subs[0].ActiveSecrets != 1 {
		t.Errorf("after the overlap: %+v", subs[0])
	}

	var sub subOut
	h.jsonOK(&sub, "subscription", "disable", "--merchant", "m_shop", "--id", "sub_main", "--reason", "maintenance")
	if sub.Enabled || sub.DisabledReason != "maintenance" {
		t.Fatalf("disabled = %+v", sub)
	}
	var enabled subOut
	h.jsonOK(&enabled, "subscription", "enable", "--merchant", "m_shop", "--id", "sub_main")
	if sub = enabled; !sub.Enabled || sub.DisabledReason != "" {
		t.Fatalf("enabled = %+v", sub)
	}

	// A local target needs --allow-insecure-local and is warned about.
	code, out, errs := h.run("subscription", "create", "--merchant", "m_shop", "--url", "http://127.0.0.1:8080/hooks", "--allow-insecure-local")
	if code != 0 || !strings.Contains(errs, "warning") || !strings.Contains(errs, "PAYSVC_WEBHOOK_ALLOW_LOCAL") || !strings.Contains(out, "whsec_") {
		t.Fatalf("insecure local (the warning names the server's setting): exit %d\n%s\n%s", code, out, errs)
	}
}

// TestInsecureLocalRefusedInLive: --allow-insecure-local is a usage error
// (exit 2) in the live environment, before the store is touched; nothing
// is created. The test environment only warns (TestSubscriptions).
func TestInsecureLocalRefusedInLive(t *testing.T) {
	h := newEmbedded(t)
	h.ok(shopArgs...)
	getenv := h.getenv
	h.getenv = func(k string) string {
		if k == "PAYSVC_ENVIRONMENT" {
			return "live"
		}
		return getenv(k)
	}
	for _, url := range []string{"http://127.0.0.1:8080/hooks", "https://hooks.example.com/x"} {
		code, out, errs := h.run("subscription", "create", "--merchant", "m_shop", "--url", url, "--allow-insecure-local")
		if code != 2 || out != "" || !strings.Contains(errs, "refused in the live environment") {
			t.Errorf("%s in live: exit %d\nstdout:\n%s\nstderr:\n%s", url, code, out, errs)
		}
	}
	var subs []subOut
	h.jsonOK(&subs, "subscription", "list", "--merchant", "m_shop")
	if len(subs) != 0 {
		t.Errorf("a refused create stored %+v", subs)
	}
}

func TestSeed(t *testing.T) {
	h := newEmbedded(t)
	key := "yp_test_" + strings.Repeat("S", 40)
	seed := `{
  "merchants": [{"id": "m_seed", "name": "Seeded", "country": "NL", "active": true, "ecommerce": true,
                 "upstreamAccount": "SeedECOM", "clientKey": "test_CK", "splitAccount": "BA_seed"}],
  "sites": [{"id": "site_seed", "merchantId": "m_seed", "name": "Web"}],
  "apiKeys": [{"key": "` + key + `", "merchantId": "m_seed", "permissions": ["*"]}],
  "subscriptions": [{"id": "sub_seed", "merchantId": "m_seed", "url": "https://hooks.example.com/x", "secret": "whsec_c2VlZHNlZWRzZWVkc2VlZHNlZWRzZWVk"}]
}`
	file := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(file, []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	var res struct {
		File          string `json:"file"`
		Merchants     int    `json:"merchants"`
		Sites         int    `json:"sites"`
		APIKeys       int    `json:"apiKeys"`
		Subscriptions int    `json:"subscriptions"`
	}
	h.jsonOK(&res, "seed", "--file", file)
	if res.Merchants != 1 || res.Sites != 1 || res.APIKeys != 1 || res.Subscriptions != 1 {
		t.Fatalf("seed result = %+v", res)
	}
	if out := h.ok("seed", "--file", file); strings.Contains(out, key) || strings.Contains(out, "whsec_") {
		t.Fatalf("seed (again) printed a secret:\n%s", out)
	}
	h.withStore(func(st tenant.Store) {
		p, err := tenant.NewAuthenticator(st, tenant.EnvTest, h.clk, 0).Authenticate(context.Background(), "Bearer "+key)
		if err != nil || p.MerchantID() != "m_seed" {
			t.Fatalf("seeded key: %+v, %v", p, err)
		}
	})
}

func TestErrors(t *testing.T) {
	h := newEmbedded(t)
	h.ok(shopArgs...)
	h.ok("merchant", "create", "--id", "m_other", "--name", "Other", "--country", "FR")
	h.ok("site", "create", "--merchant", "m_other", "--id", "site_other", "--name", "Other web")
	h.ok("subscription", "create", "--merchant", "m_shop", "--id", "sub_main", "--url", "https://hooks.example.com/x")

	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no command", nil, 2, "missing command"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"group only", []string{"merchant"}, 2, "missing merchant command"},
		{"unknown subcommand", []string{"key", "rotate"}, 2, `unknown key command "rotate"`},
		{"undefined flag", []string{"merchant", "list", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"positional argument", []string{"merchant", "show", "m_shop"}, 2, `unexpected argument "m_shop"`},
		{"missing country", []string{"merchant", "create", "--name", "X"}, 2, "--country is required"},
		{"missing name and country", []string{"merchant", "create"}, 2, "--name, --country are required"},
		{"bad country", []string{"merchant", "create", "--name", "X", "--country", "XX"}, 2, "ISO 3166-1 alpha-2"},
		{"bad country length", []string{"merchant", "create", "--name", "X", "--country", "NLD"}, 2, "ISO 3166-1 alpha-2"},
		{"bad capture", []string{"merchant", "create", "--name", "X", "--country", "NL", "--capture", "later"}, 2, "--capture must be auto or manual"},
		{"bad id", []string{"merchant", "create", "--name", "X", "--country", "NL", "--id", "m shop"}, 2, "only A-Z"},
		{"commission without account", []string{"merchant", "create", "--name", "X", "--country", "NL", "--commission-bps", "10"}, 2, "--commission-account"},
		{"commission too high", []string{"merchant", "update", "--id", "m_shop", "--commission-bps", "10001"}, 2, "0 to 10000"},
		{"merchant exists", []string{"merchant", "create", "--id", "m_shop", "--name", "X", "--country", "NL"}, 1, "already exists"},
		{"update nothing", []string{"merchant", "update", "--id", "m_shop"}, 2, "nothing to change"},
		{"update unknown merchant", []string{"merchant", "update", "--id", "m_nope", "--name", "X"}, 1, `unknown merchant "m_nope"`},
		{"show missing id", []string{"merchant", "show"}, 2, "--id is required"},
		{"deactivate unknown", []string{"merchant", "deactivate", "--id", "m_nope"}, 1, `unknown merchant "m_nope"`},
		{"site unknown merchant", []string{"site", "create", "--merchant", "m_nope", "--name", "W"}, 1, `unknown merchant "m_nope"`},
		{"site bad type", []string{"site", "create", "--merchant", "m_shop", "--name", "W", "--type", "kiosk"}, 2, "--type must be ecommerce or pos"},
		{"site bad flow", []string{"site", "create", "--merchant", "m_shop", "--name", "W", "--flows", "sessions,magic"}, 2, `unknown flow "magic"`},
		{"site exists", []string{"site", "create", "--merchant", "m_shop", "--id", "site_other", "--name", "W"}, 1, "already exists"},
		{"site list unknown merchant", []string{"site", "list", "--merchant", "m_nope"}, 1, "unknown merchant"},
		{"key missing permissions", []string{"key", "create", "--merchant", "m_shop"}, 2, "--permissions is required"},
		{"key bad permission", []string{"key", "create", "--merchant", "m_shop", "--permissions", "config,refundz"}, 2, `unknown permission "refundz"`},
		{"key star and more", []string{"key", "create", "--merchant", "m_shop", "--permissions", "*,config"}, 2, "give it alone"},
		{"key unknown merchant", []string{"key", "create", "--merchant", "m_nope", "--permissions", "*"}, 1, `unknown merchant "m_nope"`},
		{"key other merchant's site", []string{"key", "create", "--merchant", "m_shop", "--permissions", "*", "--sites", "site_other"}, 1, `has no site "site_other"`},
		{"key negative rate", []string{"key", "create", "--merchant", "m_shop", "--permissions", "*", "--rate", "-1"}, 2, "must not be negative"},
		{"key burst below rate", []string{"key", "create", "--merchant", "m_shop", "--permissions", "*", "--rate", "50", "--burst", "10"}, 2, "at least --rate"},
		{"key list unknown merchant", []string{"key", "list", "--merchant", "m_nope"}, 1, "unknown merchant"},
		{"revoke unknown key", []string{"key", "revoke", "--merchant", "m_shop", "--id", "key_nope"}, 1, `has no API key "key_nope"`},
		{"sub http refused", []string{"subscription", "create", "--merchant", "m_shop", "--url", "http://hooks.example.com/x"}, 2, "https://"},
		{"sub local refused", []string{"subscription", "create", "--merchant", "m_shop", "--url", "http://127.0.0.1:8080/x"}, 2, "--allow-insecure-local"},
		{"sub localhost refused", []string{"subscription", "create", "--merchant", "m_shop", "--url", "https://localhost/x"}, 2, "local address"},
		{"sub port refused", []string{"subscription", "create", "--merchant", "m_shop", "--url", "https://hooks.example.com:8443/x"}, 2, "port 8443"},
		{"sub private address", []string{"subscription", "create", "--merchant", "m_shop", "--url", "https://10.0.0.5/x"}, 2, "not a public address"},
		{"sub remote http even with flag", []string{"subscription", "create", "--merchant", "m_shop", "--url", "http://hooks.example.com/x", "--allow-insecure-local"}, 2, "https://"},
		{"sub not a URL", []string{"subscription", "create", "--merchant", "m_shop", "--url", "hooks.example.com"}, 2, "not an absolute URL"},
		{"sub bad event", []string{"subscription", "create", "--merchant", "m_shop", "--url", "https://h.example.com/", "--events", "AUTH-ORISATION"}, 2, "not an event code"},
		{"sub exists", []string{"subscription", "create", "--merchant", "m_shop", "--id", "sub_main", "--url", "https://h.example.com/"}, 1, "already has subscription"},
		{"sub unknown merchant", []string{"subscription", "list", "--merchant", "m_nope"}, 1, "unknown merchant"},
		{"rotate unknown sub", []string{"subscription", "rotate-secret", "--merchant", "m_shop", "--id", "sub_nope"}, 1, `has no subscription "sub_nope"`},
		{"rotate other merchant's sub", []string{"subscription", "rotate-secret", "--merchant", "m_other", "--id", "sub_main"}, 1, "has no subscription"},
		{"rotate bad overlap", []string{"subscription", "rotate-secret", "--merchant", "m_shop", "--id", "sub_main", "--overlap", "-1h"}, 2, "--overlap must be between"},
		{"rotate unparsable overlap", []string{"subscription", "rotate-secret", "--merchant", "m_shop", "--id", "sub_main", "--overlap", "a day"}, 2, "invalid value"},
		{"disable unknown sub", []string{"subscription", "disable", "--merchant", "m_shop", "--id", "sub_nope"}, 1, "has no subscription"},
		{"delivery list without merchant", []string{"delivery", "list"}, 2, "delivery show --id"},
		{"delivery show missing id", []string{"delivery", "show"}, 2, "--id is required"},
		{"delivery show unknown", []string{"delivery", "show", "--id", "msg_nope"}, 1, `unknown delivery "msg_nope"`},
		{"seed missing file flag", []string{"seed"}, 2, "--file is required"},
		{"seed missing file", []string{"seed", "--file", filepath.Join(t.TempDir(), "nope.json")}, 1, "no such file"},
		{"shards on the embedded store", []string{"merchant", "shards", "--id", "m_shop"}, 1, "does not shard listings"},
		{"shards unknown merchant", []string{"merchant", "shards", "--id", "m_nope"}, 1, "unknown merchant"},
		{"shards negative", []string{"merchant", "shards", "--id", "m_shop", "--events", "-1"}, 2, "want a count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := h.run(tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tt.code, errs)
			}
			if !strings.Contains(errs, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, errs)
			}
			if out != "" {
				t.Errorf("stdout not empty on failure:\n%s", out)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	h := newEmbedded(t)
	top := h.ok("-h")
	for _, cmd := range []string{
		"merchant create", "merchant update", "merchant list", "merchant show", "merchant deactivate",
		"site create", "site list", "key create", "key list", "key revoke",
		"subscription create", "subscription list", "subscription rotate-secret", "subscription enable",
		"subscription disable", "seed", "trigger", "listen", "delivery retry",
	} {
		if !strings.Contains(top, cmd) {
			t.Errorf("top-level help lacks %q", cmd)
		}
		out := h.ok(append(strings.Fields(cmd), "-h")...)
		if !strings.Contains(out, "Usage: paysvc-admin "+cmd) || !strings.Contains(out, "--json") {
			t.Errorf("%s -h:\n%s", cmd, out)
		}
	}
	if out := h.ok("help", "key", "create"); !strings.Contains(out, "--permissions") {
		t.Errorf("help key create:\n%s", out)
	}
	if out := h.ok("subscription", "-h"); !strings.Contains(out, "rotate-secret") {
		t.Errorf("subscription -h:\n%s", out)
	}
}

func TestDataDirInUse(t *testing.T) {
	h := newEmbedded(t)
	h.ok(shopArgs...)
	st, err := embedded.Open(h.dbPath, embedded.WithLockTimeout(time.Second)) // as `make run` would
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, _, errs := h.run("merchant", "list")
	if code != 1 || !strings.Contains(errs, "is in use by another process whose admin API does not answer") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// TestDynamoRoundTrip provisions against DynamoDB on moto. The AWS SDK reads
// its settings from the process environment, so they are set with t.Setenv.
func TestDynamoRoundTrip(t *testing.T) {
	ctx := context.Background()
	endpoint := moto.Endpoint(t)
	table := moto.TableName(t)
	client := moto.DynamoClient(t, endpoint)
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"PAYSVC_STORE": "dynamo", "PAYSVC_TABLE": table, "PAYSVC_ENVIRONMENT": "test",
		"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": moto.Region,
	} {
		t.Setenv(k, v)
	}
	h := &harness{t: t, clk: clock.NewFake(start), getenv: os.Getenv}

	h.ok(shopArgs...)
	h.ok("site", "create", "--merchant", "m_shop", "--id", "site_web", "--name", "Web")
	var created createdKeyOut
	h.jsonOK(&created, "key", "create", "--merchant", "m_shop", "--permissions", "*", "--sites", "site_web")
	var ms []merchantOut
	h.jsonOK(&ms, "merchant", "list")
	if len(ms) != 1 || ms[0].ID != "m_shop" || !ms[0].ReadyForEcommerce {
		t.Fatalf("merchant list = %+v", ms)
	}
	var keys []keyOut
	h.jsonOK(&keys, "key", "list", "--merchant", "m_shop")
	if len(keys) != 1 || keys[0].ID != created.APIKey.ID || keys[0].Revoked {
		t.Fatalf("key list = %+v", keys)
	}

	st := dynamo.New(client, table, h.clk)
	rec, err := st.GetAPIKeyByHash(ctx, tenant.HashKey(created.Key))
	if err != nil || rec.ID != created.APIKey.ID || !slices.Equal(rec.SiteIDs, []string{"site_web"}) {
		t.Fatalf("stored key = %+v, %v", rec, err)
	}
	// A new merchant's listings have one shard each; raised, never lowered.
	type shardsOut struct {
		MerchantID         string `json:"merchantId"`
		Deliveries, Events int
		Own                bool
	}
	var sh shardsOut
	h.jsonOK(&sh, "merchant", "shards", "--id", "m_shop")
	if sh != (shardsOut{"m_shop", 1, 1, true}) {
		t.Fatalf("merchant shards = %+v, want 1 and 1, its own", sh)
	}
	h.jsonOK(&sh, "merchant", "shards", "--id", "m_shop", "--deliveries", "16")
	if sh != (shardsOut{"m_shop", 16, 1, true}) {
		t.Fatalf("merchant shards --deliveries 16 = %+v", sh)
	}
	if got, err := st.ListingShards(ctx, "m_shop"); err != nil || got.Deliveries != 16 || got.Events != 1 {
		t.Fatalf("stored counts %+v, %v", got, err)
	}
	if code, _, errs := h.run("merchant", "shards", "--id", "m_shop", "--deliveries", "8"); code != 1 || !strings.Contains(errs, "can only be raised") {
		t.Fatalf("lowering: exit %d, stderr %q; want 1 and why", code, errs)
	}
	if text := h.ok("merchant", "shards", "--id", "m_shop"); !strings.Contains(text, "delivery shards") || !strings.Contains(text, "16") {
		t.Fatalf("merchant shards:\n%s", text)
	}
}

// The permissions of refunds, payment lookup and the webhook self-service
// endpoints are known to the CLI.
func TestAPIKeyNewPermissions(t *testing.T) {
	h := newEmbedded(t)
	h.ok(shopArgs...)
	var created createdKeyOut
	h.jsonOK(&created, "key", "create", "--merchant", "m_shop", "--permissions", "refunds,payments-read,webhooks")
	want := []tenant.Permission{tenant.PermRefunds, tenant.PermPaymentsRead, tenant.PermWebhooks}
	if !slices.Equal(created.APIKey.Permissions, want) {
		t.Fatalf("permissions %v, want %v", created.APIKey.Permissions, want)
	}
	if out := h.ok("help", "key", "create"); !strings.Contains(out, "payments-read") || !strings.Contains(out, "webhooks") {
		t.Fatalf("help does not list the new permissions:\n%s", out)
	}
}

// listen --forward-to takes a URL on this machine only: a usage error
// (exit 2) before any server is looked for.
func TestListenForwardsToThisMachineOnly(t *testing.T) {
	h := newEmbedded(t)
	for target, ok := range map[string]bool{
		"http://169.254.169.254/latest/meta-data/": false, "https://hooks.example.com/x": false, "http://10.0.0.7:4000/": false,
		"http://0.0.0.0:4000/": false, "http://2130706433:4000/": true, "ftp://127.0.0.1/": false,
		"http://127.0.0.1:4000/webhooks": true, "http://localhost:4000/": true, "http://[::1]:4000/": true, "https://127.0.0.2/": true,
	} {
		code, _, errs := h.run("listen", "--forward-to", target)
		if refused := code == admincli.ExitUsage && strings.Contains(errs, "loopback"); refused == ok {
			t.Errorf("listen --forward-to %s: exit %d %s", target, code, errs)
		}
	}
}
