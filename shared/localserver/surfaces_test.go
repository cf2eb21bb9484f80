package localserver

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/admincli"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// testHMACKey is a notification key the tests give the server explicitly.
const testHMACKey = "0B1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D7E8F9A0B1C"

// oldConstantKey is the notification key that was built into the source.
const oldConstantKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

const cardPayment = `{"amount":{"value":1000,"currency":"EUR"},"reference":"%s","returnUrl":"https://shop.example/return",
	"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`

// pay makes an authorised card payment on site and returns its pspReference.
func pay(t *testing.T, s *server, key, site, ref string) string {
	t.Helper()
	status, out := s.do(t, "POST", "/v1/ecom/"+site+"/payments", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		strings.Replace(cardPayment, "%s", ref, 1))
	psp, _ := out["pspReference"].(string)
	if status != 200 || out["resultCode"] != "Authorised" || psp == "" {
		t.Fatalf("payment %s: %d %v", ref, status, out)
	}
	return psp
}

// raw sends one request and returns its status and body.
func raw(t *testing.T, method, u, host string, header map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var simLine = regexp.MustCompile(`upstream: simulated in-process at (http://127\.0\.0\.1:\d+)/v71 \(X-API-Key (\S+)\)`)

// simListener returns the URL and API key of the simulator's own listener,
// as the banner prints them.
func simListener(t *testing.T, s *server) (base, key string) {
	t.Helper()
	m := simLine.FindStringSubmatch(s.banner.String())
	if m == nil {
		t.Fatalf("no simulator line in the banner:\n%s", s.banner.String())
	}
	return m[1], m[2]
}

// liveSeed is the example seed with live keys and no local webhook target.
func liveSeed(t *testing.T) string {
	t.Helper()
	var sd map[string]any
	b, err := os.ReadFile(exampleSeed)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(b), "yp_test_", "yp_live_")), &sd); err != nil {
		t.Fatal(err)
	}
	delete(sd, "subscriptions")
	out, _ := json.Marshal(sd)
	file := filepath.Join(t.TempDir(), "seed-live.json")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

const liveKey = "yp_live_acmeLocalDevelopmentKey000000000000000000"

// The simulator's test hooks refuse what a web page can send — another
// Origin, Sec-Fetch-Site: cross-site, a form's content types — on the
// service's port and on the simulator's own listener, which also answers
// only to its own Host. curl's requests and the shopper pages (navigations
// from a shop) are served.
func TestSimulatorHooksRefuseWebPages(t *testing.T) {
	s := start(t, nil)
	key := s.demoKey(t)
	simBase, simKey := simListener(t, s)
	fail := "/_sim/fail?endpoint=payments&failure=500"
	for _, tc := range []struct {
		name, base, path, host string
		header                 map[string]string
		status                 int
	}{
		{"foreign Origin", s.base, fail, "", map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site fetch", s.base, fail, "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"form post", s.base, fail, "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 403},
		{"multipart form", s.base, "/_sim/offers/expire", "", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 403},
		{"text/plain form", s.base, "/_sim/offers/expire", "", map[string]string{"Content-Type": "text/plain"}, 403},
		{"offers from another site", s.base, "/_sim/offers/expire", "", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"own listener, foreign Origin", simBase, fail, "", map[string]string{"X-API-Key": simKey, "Origin": "http://evil.example"}, 403},
		{"own listener, form post", simBase, fail, "", map[string]string{"X-API-Key": simKey, "Content-Type": "application/x-www-form-urlencoded"}, 403},
		{"own listener, rebound Host", simBase, fail, "rebound.example", map[string]string{"X-API-Key": simKey}, 403},
		{"own listener, its API under a rebound Host", simBase, "/v71/paymentMethods", "rebound.example", map[string]string{"X-API-Key": simKey, "Content-Type": "application/json"}, 403},
		{"the server's own Origin", s.base, "/_sim/offers/expire", "", map[string]string{"Origin": s.base, "Content-Type": "application/json"}, 200},
		{"curl", s.base, "/_sim/offers/expire", "", nil, 200},
		{"curl, own listener", simBase, "/_sim/offers/expire", "", map[string]string{"X-API-Key": simKey}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, body := raw(t, "POST", tc.base+tc.path, tc.host, tc.header, ""); status != tc.status {
				t.Errorf("%d %s, want %d", status, body, tc.status)
			}
		})
	}
	// Nothing refused was applied: the next payment is authorised.
	pay(t, s, key, "site_demo", "order-after-refusals")

	// The shopper pages receive navigations from other sites.
	out := pay3DS(t, s, key, "order-page")
	link, _ := out["action"].(map[string]any)["url"].(string)
	if !strings.HasPrefix(link, s.base+"/_sim/redirect/") {
		t.Fatalf("the action's link %q", link)
	}
	if status, body := raw(t, "GET", link, "", map[string]string{"Sec-Fetch-Site": "cross-site", "Referer": "https://shop.example/"}, ""); status != 200 || !strings.Contains(body, "order-page") {
		t.Fatalf("the 3-D Secure page from the shop: %d %s", status, body)
	}
	if status, _ := raw(t, "GET", link, "rebound.example", nil, ""); status != 403 {
		t.Fatalf("the 3-D Secure page under a rebound Host: %d, want 403", status)
	}
}

// The simulator's upstream API takes a key made for the data directory,
// not a constant: kept across restarts, another in another directory.
func TestSimulatorKeyIsPerDataDirectory(t *testing.T) {
	env := map[string]string{"PAYSVC_DATA_DIR": t.TempDir()}
	s := start(t, env)
	simBase, key := simListener(t, s)
	if key == "sim_local_api_key" || len(key) < 32 {
		t.Fatalf("the simulator's key %q", key)
	}
	for _, tc := range []struct {
		key  string
		want func(int) bool
	}{
		{"sim_local_api_key", func(s int) bool { return s == 401 }},
		{key, func(s int) bool { return s != 401 && s != 403 }},
	} {
		status, body := raw(t, "POST", simBase+"/v71/paymentMethods", "", map[string]string{"X-API-Key": tc.key, "Content-Type": "application/json"}, `{"merchantAccount":"DemoShopECOM"}`)
		if !tc.want(status) {
			t.Errorf("the simulator's API with key %q: %d %s", tc.key, status, body)
		}
	}
	s.stop()
	again := start(t, env)
	if _, k := simListener(t, again); k != key {
		t.Errorf("after a restart the key is %q, was %q", k, key)
	}
	if _, k := simListener(t, start(t, nil)); k == key {
		t.Errorf("another data directory has the same key %q", k)
	}
}

// In the live environment the simulator's hooks are served on neither
// listener (its shopper pages stay), no demo key is made, and the server
// does not start without its own notification key.
func TestLiveEnvironmentLocalServer(t *testing.T) {
	var banner strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a failure bound only
	defer cancel()
	err := Run(ctx, func(k string) string {
		return map[string]string{"PAYSVC_ENVIRONMENT": "live", "PAYSVC_ADDR": freeAddr(t), "PAYSVC_DATA_DIR": t.TempDir()}[k]
	}, io.Discard, &banner)
	if err == nil || !strings.Contains(err.Error(), "PAYSVC_UPSTREAM_HMAC_KEY") {
		t.Fatalf("live without a notification key: %v, want a refusal naming PAYSVC_UPSTREAM_HMAC_KEY", err)
	}

	demo := start(t, map[string]string{"PAYSVC_ENVIRONMENT": "live", "PAYSVC_UPSTREAM_HMAC_KEY": testHMACKey})
	if _, err := os.Stat(filepath.Join(demo.dataDir, "demo-key.txt")); !os.IsNotExist(err) {
		t.Errorf("demo-key.txt in the live environment: %v", err)
	}
	if strings.Contains(demo.banner.String(), "yp_live_") {
		t.Errorf("the live banner prints a key:\n%s", demo.banner.String())
	}
	demo.stop()

	s := start(t, map[string]string{"PAYSVC_ENVIRONMENT": "live", "PAYSVC_UPSTREAM_HMAC_KEY": testHMACKey, "PAYSVC_SEED_FILE": liveSeed(t)})
	simBase, simKey := simListener(t, s)
	for _, tc := range []struct{ method, url, key string }{
		{"POST", s.base + "/_sim/fail?endpoint=payments&failure=500", ""},
		{"GET", s.base + "/_sim/notifications", ""},
		{"POST", simBase + "/_sim/fail?endpoint=payments&failure=500", simKey},
		{"GET", simBase + "/_sim/notifications", simKey},
	} {
		if status, body := raw(t, tc.method, tc.url, "", map[string]string{"X-API-Key": tc.key}, ""); status != 404 {
			t.Errorf("%s %s in the live environment: %d %s, want 404", tc.method, tc.url, status, body)
		}
	}
	psp := pay(t, s, liveKey, "site_acme_web", "order-live-1")
	// The simulator's notifications say live: they are applied.
	s.logs.waitFor(t, s.ended, 1, `"msg":"notification processed"`, psp)
}

// GET /_sim/payments/{psp} shows the payment's request without its card
// data, as the logs never hold it.
func TestSimulatorPaymentHidesCardData(t *testing.T) {
	s := start(t, nil)
	psp := pay(t, s, s.demoKey(t), "site_demo", "order-redacted")
	status, body := raw(t, "GET", s.base+"/_sim/payments/"+psp, "", nil, "")
	if status != 200 || !strings.Contains(body, `"request"`) {
		t.Fatalf("payment state: %d %s", status, body)
	}
	for _, secret := range []string{"test_4111111111111111", "test_737", "4111111111111111"} {
		if strings.Contains(body, secret) {
			t.Errorf("the payment state shows %q: %s", secret, body)
		}
	}
	if !strings.Contains(body, `"encryptedCardNumber":"[redacted]"`) || !strings.Contains(body, `"encryptedSecurityCode":"[redacted]"`) {
		t.Errorf("the payment state does not say the card fields are redacted: %s", body)
	}
}

// notification returns a signed one-item notification body.
func notification(t *testing.T, keyHex, live string, it upstream.NotificationRequestItem) string {
	t.Helper()
	sig, err := upstream.SignItem(keyHex, it)
	if err != nil {
		t.Fatal(err)
	}
	it.AdditionalData = map[string]string{upstream.KeyHMACSignature: sig}
	b, err := json.Marshal(upstream.Notification{Live: live, NotificationItems: []upstream.NotificationItem{{Item: it}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func captureOf(psp, merchantAccount string) upstream.NotificationRequestItem {
	return upstream.NotificationRequestItem{EventCode: "CAPTURE", PSPReference: "CAP" + psp[3:], OriginalReference: psp, Success: "true",
		MerchantAccountCode: merchantAccount, MerchantReference: "order", Amount: money.Amount{Value: 1000, Currency: "EUR"}}
}

// paymentState is the payment's state as the lookup answers it.
func paymentState(t *testing.T, s *server, key, site, psp string) string {
	t.Helper()
	status, p := s.do(t, "GET", "/v1/ecom/"+site+"/payments/"+psp, map[string]string{"Authorization": "Bearer " + key}, "")
	if status != 200 {
		t.Fatalf("lookup %s: %d %v", psp, status, p)
	}
	state, _ := p["state"].(string)
	return state
}

// The notifications endpoint answers only to the server's own Host, and no
// key is built in: a notification signed with the key once in the source
// is refused.
func TestNotificationsEndpointHostAndKey(t *testing.T) {
	s := start(t, nil)
	key := s.demoKey(t)
	psp := pay(t, s, key, "site_demo", "order-notify")
	body := notification(t, oldConstantKey, "false", captureOf(psp, "DemoShopECOM"))
	for _, tc := range []struct {
		name, host string
		status     int
	}{
		{"rebound Host", "rebound.example", 403},
		{"the source's old key", "", 401},
	} {
		if status, out := raw(t, "POST", s.base+httpapi.NotificationsPath, tc.host, map[string]string{"Content-Type": "application/json"}, body); status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, status, out, tc.status)
		}
	}
	if state := paymentState(t, s, key, "site_demo", psp); state != "Authorised" {
		t.Errorf("the payment is %s after refused notifications", state)
	}
}

// A notification whose live flag disagrees with the environment is
// answered [accepted] (not sent again), logged, and never applied or
// delivered; the same item with the right flag is.
func TestNotificationLiveFlagMustMatch(t *testing.T) {
	s := start(t, map[string]string{"PAYSVC_UPSTREAM_HMAC_KEY": testHMACKey})
	key := s.demoKey(t)
	psp := pay(t, s, key, "site_demo", "order-live-flag")
	s.logs.waitFor(t, s.ended, 1, `"msg":"notification processed"`, psp)
	post := func(live string) {
		t.Helper()
		body := notification(t, testHMACKey, live, captureOf(psp, "DemoShopECOM"))
		if status, out := raw(t, "POST", s.base+httpapi.NotificationsPath, "", map[string]string{"Content-Type": "application/json"}, body); status != 200 || out != "[accepted]" {
			t.Fatalf("live %q: %d %s, want 200 [accepted]", live, status, out)
		}
	}
	post("true")
	if state := paymentState(t, s, key, "site_demo", psp); state != "Authorised" {
		t.Fatalf("a live notification in the test environment made the payment %s", state)
	}
	s.logs.waitFor(t, s.ended, 1, `"live":"true"`, psp)
	_, evs := s.do(t, "GET", "/v1/ecom/events?pspReference="+psp, map[string]string{"Authorization": "Bearer " + key}, "")
	list, _ := evs["data"].([]any)
	for _, e := range list {
		if e.(map[string]any)["eventCode"] != "AUTHORISATION" {
			t.Fatalf("the live notification became the merchant's event: %v", e)
		}
	}
	post("false")
	if state := paymentState(t, s, key, "site_demo", psp); state != "Captured" {
		t.Fatalf("the same capture with the test flag: the payment is %s", state)
	}
}

// listen forwards only to this machine, and runs in the CLI: through exec
// the server refuses it at once, so it never holds the other commands.
func TestListenLoopbackOnlyAndNeverBlocksExec(t *testing.T) {
	s := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a failure bound only
	defer cancel()
	for _, target := range []string{"http://169.254.169.254/latest/meta-data/", "http://example.com/hooks", "http://0.0.0.0:4000/"} {
		var out, errb strings.Builder
		if code := admincli.Run(ctx, []string{"listen", "--forward-to", target}, s.getenv, &out, &errb); code != admincli.ExitUsage || !strings.Contains(errb.String(), "loopback") {
			t.Errorf("listen --forward-to %s: exit %d %s", target, code, errb.String())
		}
	}
	e, ok, err := adminapi.ReadFiles(s.dataDir)
	if err != nil || !ok {
		t.Fatalf("admin files: %v %v", ok, err)
	}
	cl := &adminapi.Client{Endpoint: e, HTTP: &http.Client{Timeout: 20 * time.Second}}
	res, err := cl.Exec(ctx, []string{"listen", "--forward-to", "http://127.0.0.1:4000/webhooks"})
	if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, "listen") {
		t.Fatalf("listen through exec: %v %+v", err, res)
	}
	if res, err := cl.Exec(ctx, []string{"merchant", "list"}); err != nil || !strings.Contains(res.Stdout, "m_demo") {
		t.Fatalf("merchant list after it: %v %+v", err, res)
	}
}

// The dashboard moves the simulator's clock forward only, by at most 400
// days a step: an overflowing step is refused and nothing is saved of it.
func TestSimulatorClockOnlyMovesForward(t *testing.T) {
	s := start(t, nil)
	_, page := raw(t, "GET", s.base+"/_dashboard/", "", nil, "")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the dashboard")
	}
	move := func(by string) url.Values {
		t.Helper()
		form := url.Values{"csrf": {m[1]}, "by": {by}}
		status, _ := raw(t, "POST", s.base+"/_dashboard/simulator/clock", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, form.Encode())
		if status != http.StatusSeeOther {
			t.Fatalf("move the clock by %s: %d", by, status)
		}
		return nil
	}
	offset := func() time.Duration {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(s.dataDir, StateFile))
		if err != nil {
			return 0
		}
		var st struct{ ClockOffset time.Duration }
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		return st.ClockOffset
	}
	move("24h")
	if got := offset(); got != 24*time.Hour {
		t.Fatalf("after 24h the saved offset is %s", got)
	}
	for _, by := range []string{"2562047h", "2562047h", "9601h", "-1h"} {
		move(by)
		if got := offset(); got != 24*time.Hour {
			t.Fatalf("after a step of %s the saved offset is %s, want 24h", by, got)
		}
	}
	move("9600h") // 400 days
	if got := offset(); got != 24*time.Hour+9600*time.Hour {
		t.Fatalf("after 400 days the saved offset is %s", got)
	}
}

// The dashboard and the admin API read through keys of existing merchants
// only: an unknown ?merchant= is an error, not a new key.
func TestDashboardUnknownMerchant(t *testing.T) {
	s := start(t, nil)
	status, page := raw(t, "GET", s.base+"/_dashboard/?merchant=m_nope", "", nil, "")
	page = html.UnescapeString(page)
	if status != 200 {
		t.Fatalf("dashboard: %d", status)
	}
	for _, part := range []string{"events: ", "deliveries: "} {
		if !strings.Contains(page, part+`merchant "m_nope"`) {
			t.Errorf("the dashboard does not say the merchant of %q is unknown", part)
		}
	}
}

// seed --file names what is wrong without showing anything of the file.
func TestSeedFileErrorsRevealNothing(t *testing.T) {
	s := start(t, nil)
	dir := t.TempDir()
	for name, content := range map[string]string{
		"passwd":      "~root:x:0:0:secret-content:/root:/bin/sh\n",
		"credentials": `{"privateThing":"hunter2"}`,
		"typed":       `{"merchants":"hunter2"}`,
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb strings.Builder
		code := admincli.Run(context.Background(), []string{"seed", "--file", file}, s.getenv, &out, &errb)
		msg := strings.ReplaceAll(errb.String(), file, "")
		if code == 0 {
			t.Errorf("%s: seeded", name)
		}
		for _, leak := range []string{"'~'", "secret-content", "privateThing", "hunter2", "root"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: the error shows %q: %s", name, leak, msg)
			}
		}
	}
}
