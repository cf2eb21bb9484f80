package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/testenv"
)

// errCase is one request expected to fail with a status and errorCode.
type errCase struct {
	name, method, path, key, body string
	headers                       []string
	status                        int
	code                          string
	field                         string // a field the error must name, if any
}

func runErrCases(t *testing.T, e *testenv.Env, cases []errCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do(tc.method, tc.path, tc.key, tc.body, tc.headers...)
			if r.Status != tc.status {
				t.Fatalf("status = %d, want %d; body %s", r.Status, tc.status, r.Body)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			b := r.JSON(t)
			if b["errorCode"] != tc.code {
				t.Fatalf("errorCode = %v, want %s; body %s", b["errorCode"], tc.code, r.Body)
			}
			if msg, _ := b["message"].(string); msg == "" {
				t.Errorf("empty message: %s", r.Body)
			}
			if tc.field != "" && !namesField(b, tc.field) {
				t.Errorf("error does not name field %q: %s", tc.field, r.Body)
			}
		})
	}
}

func namesField(b map[string]any, field string) bool {
	fields, _ := b["fields"].([]any)
	for _, f := range fields {
		if m, _ := f.(map[string]any); m["field"] == field {
			return true
		}
	}
	return false
}

func TestConfig(t *testing.T) {
	e := testenv.New(t)
	r := e.Do("GET", "/v1/ecom/config", "A", "")
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	b := r.JSON(t)
	if b["clientToken"] != "test_CLIENT_"+testenv.MerchantA || b["environment"] != "test" {
		t.Fatalf("body %s", r.Body)
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
}

func TestAuthAndTenancyErrors(t *testing.T) {
	e := testenv.New(t)
	const cfg = "/v1/ecom/config"
	sessions := func(site string) string { return "/v1/ecom/" + site + "/sessions" }
	okBody := `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`
	runErrCases(t, e, []errCase{
		{name: "missing key", method: "GET", path: cfg, status: 401, code: "yp_1001"},
		{name: "malformed header", method: "GET", path: cfg, headers: []string{"Authorization", "Basic abc"}, status: 401, code: "yp_1001"},
		{name: "unknown key", method: "GET", path: cfg, key: "yp_test_unknownunknownunknownunknownunknownunk", status: 401, code: "yp_1001"},
		{name: "garbage key", method: "GET", path: cfg, key: "nonsense", status: 401, code: "yp_1001"},
		{name: "revoked key", method: "GET", path: cfg, key: "ARevoked", status: 401, code: "yp_1001"},
		{name: "live key on test", method: "GET", path: cfg, key: "ALive", status: 401, code: "yp_1001"},
		{name: "missing permission", method: "POST", path: sessions(testenv.SiteA), key: "AConfigOnly", body: okBody, status: 403, code: "yp_1002"},
		{name: "config merchant inactive", method: "GET", path: cfg, key: "Inactive", status: 404, code: "yp_3005"},
		{name: "config merchant not ecommerce", method: "GET", path: cfg, key: "NotEcom", status: 422, code: "yp_5003"},
		{name: "site id malformed", method: "POST", path: sessions("bad.site"), key: "A", body: okBody, status: 400, code: "yp_3003"},
		{name: "site id too long", method: "POST", path: sessions(strings.Repeat("s", 65)), key: "A", body: okBody, status: 400, code: "yp_3003"},
		{name: "site unknown", method: "POST", path: sessions("site_nope"), key: "A", body: okBody, status: 404, code: "yp_3004"},
		{name: "cross tenant site", method: "POST", path: sessions(testenv.SiteB), key: "A", body: okBody, status: 404, code: "yp_3004"},
		{name: "cross tenant reverse", method: "POST", path: sessions(testenv.SiteA), key: "B", body: okBody, status: 404, code: "yp_3004"},
		{name: "pos site", method: "POST", path: sessions(testenv.SiteAPOS), key: "A", body: okBody, status: 404, code: "yp_3004"},
		{name: "key restricted to other site", method: "POST", path: sessions(testenv.SiteA), key: "ARestricted", body: okBody, status: 404, code: "yp_3004"},
		{name: "site without sessions flow", method: "POST", path: sessions(testenv.SiteAAdvanced), key: "A", body: okBody, status: 409, code: "yp_3004"},
		{name: "merchant inactive", method: "POST", path: sessions(testenv.SiteInactive), key: "Inactive", body: okBody, status: 404, code: "yp_3005"},
		{name: "merchant not ecommerce", method: "POST", path: sessions(testenv.SiteNotEcom), key: "NotEcom", body: okBody, status: 422, code: "yp_5003"},
		{name: "unknown route", method: "GET", path: "/v1/ecom/nothing/here", key: "A", status: 404, code: "yp_9004"},
		{name: "wrong method", method: "GET", path: sessions(testenv.SiteA), key: "A", status: 405, code: "yp_9005"},
		{name: "wrong content type", method: "POST", path: sessions(testenv.SiteA), key: "A", body: okBody, headers: []string{"Content-Type", "text/plain"}, status: 415, code: "yp_2002"},
		{name: "body too large", method: "POST", path: sessions(testenv.SiteA), key: "A", body: `{"reference":"` + strings.Repeat("x", 300<<10) + `"}`, status: 413, code: "yp_2002"},
	})
	if len(e.Upstream.Requests("/sessions")) != 0 {
		t.Fatal("a rejected request reached the upstream")
	}
}

func TestRateLimit(t *testing.T) {
	e := testenv.New(t)
	for i := 0; i < 2; i++ {
		if r := e.Do("GET", "/v1/ecom/config", "ASlow", ""); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := e.Do("GET", "/v1/ecom/config", "ASlow", "")
	if r.Status != 429 || r.JSON(t)["errorCode"] != "yp_9006" {
		t.Fatalf("third request: %d %s", r.Status, r.Body)
	}
	if ra := r.Header.Get("Retry-After"); ra != "2" {
		t.Fatalf("Retry-After = %q, want 2 (window of burst/rate = 2 s, at its start)", ra)
	}
	// Another key of the same merchant is not affected.
	if r := e.Do("GET", "/v1/ecom/config", "A", ""); r.Status != 200 {
		t.Fatalf("other key: %d", r.Status)
	}
	e.Clock.Advance(2_000_000_000)
	if r := e.Do("GET", "/v1/ecom/config", "ASlow", ""); r.Status != 200 {
		t.Fatalf("after the window: %d %s", r.Status, r.Body)
	}
}

func TestLogsNeverCarrySecrets(t *testing.T) {
	e := testenv.New(t)
	e.Do("GET", "/v1/ecom/config", "A", "")
	e.Do("GET", "/v1/ecom/config", "ARevoked", "")
	e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/sessions", "A", `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`)
	logs := e.Logs.String()
	if !strings.Contains(logs, `"route":"sessions"`) {
		t.Fatalf("no request log line: %s", logs)
	}
	for name, key := range e.Keys {
		if strings.Contains(logs, key) {
			t.Errorf("log contains API key %s", name)
		}
	}
	if strings.Contains(logs, testenv.UpstreamAPIKey) {
		t.Error("log contains the upstream API key")
	}
}

func TestEveryLogLineIsJSON(t *testing.T) {
	e := testenv.New(t)
	e.Do("GET", "/v1/ecom/config", "A", "")
	for _, line := range strings.Split(strings.TrimSpace(e.Logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m["msg"] == "request" {
			for _, f := range []string{"method", "route", "status", "latencyMs", "requestId", "merchant"} {
				if _, ok := m[f]; !ok {
					t.Errorf("request log lacks %s: %s", f, line)
				}
			}
		}
	}
}
