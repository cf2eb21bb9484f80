package openapicheck_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yp/paysvc/docs"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/openapicheck"
	"github.com/yp/paysvc/shared/payments"
)

func repository(t *testing.T) *openapicheck.Checker {
	t.Helper()
	c, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// routeGroups are the route constructors of httpapi by name. The names the
// Lambda mains mount are read from functions/*/main.go, so a new group
// fails TestEveryRouteDocumented until it is listed here.
var routeGroups = map[string]func(*httpapi.Deps) []httpapi.Route{
	"ConfigRoutes":        httpapi.ConfigRoutes,
	"SessionsRoutes":      httpapi.SessionsRoutes,
	"PaymentsRoutes":      httpapi.PaymentsRoutes,
	"ModificationsRoutes": httpapi.ModificationsRoutes,
	"LookupsRoutes":       httpapi.LookupsRoutes,
	"WebhooksRoutes":      httpapi.WebhooksRoutes,
}

// mountedGroups returns the httpapi.*Routes the Lambda functions mount and
// whether any function mounts the upstream notifications endpoint.
func mountedGroups(t *testing.T) (groups []string, notifications bool) {
	t.Helper()
	mains, err := filepath.Glob("../../functions/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no functions/*/main.go: %v", err)
	}
	for _, path := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			switch name := sel.Sel.Name; {
			case !ok:
			case x.Name == "httpapi" && strings.HasSuffix(name, "Routes") && !slices.Contains(groups, name):
				groups = append(groups, name)
			case x.Name == "httpapi" && name == "Notifications", x.Name == "app" && name == "NotificationsHandler":
				notifications = true
			}
			return true
		})
	}
	return groups, notifications
}

// codeOperations are the operations the code serves, from its route tables.
func codeOperations(t *testing.T) []string {
	t.Helper()
	groups, notifications := mountedGroups(t)
	d := &httpapi.Deps{Payments: &payments.Service{}} // route tables only; nothing is served
	var ops []string
	for _, name := range groups {
		build, ok := routeGroups[name]
		if !ok {
			t.Errorf("functions mount httpapi.%s: add it to routeGroups", name)
			continue
		}
		for _, rt := range build(d) {
			ops = append(ops, rt.Method+" "+rt.Pattern)
		}
	}
	if !notifications {
		t.Error("no function mounts the upstream notifications endpoint (httpapi.Notifications)")
	}
	return append(ops, http.MethodPost+" "+httpapi.NotificationsPath)
}

func TestEveryRouteDocumented(t *testing.T) {
	code := codeOperations(t)
	if len(code) < 10 {
		t.Fatalf("only %d routes read from code: %v", len(code), code)
	}
	notInDoc, notInCode := openapicheck.Diff(repository(t).Operations(), code)
	for _, op := range notInDoc {
		t.Errorf("%s is served but not in docs/openapi.yaml", op)
	}
	for _, op := range notInCode {
		t.Errorf("%s is in docs/openapi.yaml but no route serves it", op)
	}
}

// A document missing a route, or describing one the code lacks, is caught.
func TestDiffCatchesABrokenCopy(t *testing.T) {
	broken := bytes.Replace(docs.OpenAPI, []byte("  /v1/ecom/{siteId}/payments/{pspReference}/reversals:\n"),
		[]byte("  /v1/ecom/{siteId}/payments/{pspReference}/voids:\n"), 1)
	c, err := openapicheck.New(broken)
	if err != nil {
		t.Fatal(err)
	}
	notInDoc, notInCode := openapicheck.Diff(c.Operations(), codeOperations(t))
	if !slices.Equal(notInDoc, []string{"POST /v1/ecom/{siteId}/payments/{pspReference}/reversals"}) ||
		!slices.Equal(notInCode, []string{"POST /v1/ecom/{siteId}/payments/{pspReference}/voids"}) {
		t.Fatalf("diff %v / %v", notInDoc, notInCode)
	}
}

func TestNewRefusesInvalidDocuments(t *testing.T) {
	for name, doc := range map[string][]byte{
		"not yaml":      []byte("{{{"),
		"openapi 3.0":   bytes.Replace(docs.OpenAPI, []byte("openapi: 3.1.0"), []byte("openapi: 3.0.3"), 1),
		"bad parameter": bytes.Replace(docs.OpenAPI, []byte("      in: path\n"), []byte("      in: body\n"), 1),
		"no operation":  bytes.Replace(docs.OpenAPI, []byte("operationId: getConfig\n"), nil, 1),
		"no request id": bytes.Replace(docs.OpenAPI, []byte(`        "200":
          description: Deleted.
          headers:
            X-Request-Id: { $ref: "#/components/headers/RequestId" }
`), []byte(`        "200":
          description: Deleted.
          headers: {}
`), 1),
	} {
		t.Run(name, func(t *testing.T) {
			if bytes.Equal(doc, docs.OpenAPI) {
				t.Fatal("the replacement did not apply")
			}
			if _, err := openapicheck.New(doc); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// Check on exchanges: conforming ones pass, each kind of mismatch is named.
func TestCheck(t *testing.T) {
	c := repository(t)
	key := hdr("Authorization", "Bearer yp_test_x", "Content-Type", "application/json")
	answer := hdr("Content-Type", "application/json", "X-Request-Id", "req_1")
	capture := "/v1/ecom/site_a/payments/PSP1/captures"
	okCapture := `{"pspReference":"CAP1","status":"received","paymentPspReference":"PSP1"}`
	for _, tc := range []struct {
		name string
		x    openapicheck.Exchange
		want string // "" = conforms; else a part of a violation
	}{
		{"capture", openapicheck.Exchange{Method: "POST", URL: capture, Header: key, Body: []byte(`{"amount":{"value":100,"currency":"EUR"}}`),
			Status: 200, RespHeader: answer, RespBody: []byte(okCapture)}, ""},
		{"accepted request missing a required field", openapicheck.Exchange{Method: "POST", URL: capture, Header: key, Body: []byte(`{"reference":"r"}`),
			Status: 200, RespHeader: answer, RespBody: []byte(okCapture)}, "request:"},
		{"refused invalid request is not checked", openapicheck.Exchange{Method: "POST", URL: capture, Header: key, Body: []byte(`{"reference":"r"}`),
			Status: 400, RespHeader: answer, RespBody: []byte(`{"errorCode":"yp_2002","message":"x","fields":[{"field":"amount","message":"is required"}]}`)}, ""},
		{"undocumented answer field", openapicheck.Exchange{Method: "POST", URL: capture, Header: key, Body: []byte(`{"amount":{"value":100,"currency":"EUR"}}`),
			Status: 200, RespHeader: answer, RespBody: []byte(`{"pspReference":"CAP1","status":"received","paymentPspReference":"PSP1","extra":1}`)}, "answer:"},
		{"error code not documented for the endpoint", openapicheck.Exchange{Method: "POST", URL: capture, Header: key, Body: []byte(`{}`),
			Status: 500, RespHeader: answer, RespBody: []byte(`{"errorCode":"yp_4008","message":"x"}`)}, "answer:"},
		{"undocumented status", openapicheck.Exchange{Method: "GET", URL: "/v1/ecom/config", Header: key,
			Status: 418, RespHeader: answer, RespBody: []byte(`{"errorCode":"yp_9000","message":"x"}`)}, "answer:"},
		{"no request id", openapicheck.Exchange{Method: "GET", URL: "/v1/ecom/config", Header: key,
			Status: 200, RespHeader: hdr("Content-Type", "application/json"), RespBody: []byte(`{"clientToken":"c","environment":"test"}`)}, "X-Request-Id"},
		{"catch-all 404", openapicheck.Exchange{Method: "GET", URL: "/v1/nope", Header: key,
			Status: 404, RespHeader: answer, RespBody: []byte(`{"errorCode":"yp_9004","message":"no such endpoint"}`)}, ""},
		{"catch-all 405", openapicheck.Exchange{Method: "GET", URL: capture, Header: key,
			Status: 405, RespHeader: answer, RespBody: []byte(`{"errorCode":"yp_9005","message":"method GET not allowed"}`)}, ""},
		{"unknown path answered 200", openapicheck.Exchange{Method: "GET", URL: "/v1/nope", Header: key,
			Status: 200, RespHeader: answer, RespBody: []byte(`{}`)}, "request:"},
		{"rate limited", openapicheck.Exchange{Method: "GET", URL: "/v1/ecom/config", Header: key,
			Status: 429, RespHeader: hdr("Content-Type", "application/json", "X-Request-Id", "r", "Retry-After", "1"),
			RespBody: []byte(`{"errorCode":"yp_9006","message":"slow down"}`)}, ""},
		{"notification accepted", openapicheck.Exchange{Method: "POST", URL: httpapi.NotificationsPath, Header: hdr("Content-Type", "application/json"),
			Body:   []byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"amount":{"value":1,"currency":"EUR"},"eventCode":"AUTHORISATION","eventDate":"2026-11-23T10:00:00+01:00","merchantAccountCode":"A","merchantReference":"r","pspReference":"P","success":"true"}}]}`),
			Status: 200, RespHeader: hdr("Content-Type", "text/plain; charset=utf-8", "X-Request-Id", "r"), RespBody: []byte("[accepted]")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := strings.Join(c.Check(tc.x), "\n")
			if tc.want == "" && v != "" {
				t.Fatalf("violations:\n%s", v)
			}
			if tc.want != "" && !strings.Contains(v, tc.want) {
				t.Fatalf("want a violation with %q, got %q", tc.want, v)
			}
		})
	}
}

// recorder is a TB that remembers failures.
type recorder struct{ failed []string }

func (r *recorder) Helper()                           {}
func (r *recorder) Errorf(format string, args ...any) { r.failed = append(r.failed, format) }

// The in-process hook fails the test on a violation and passes answers on.
func TestHandlerHookFailsOnViolation(t *testing.T) {
	c := repository(t)
	bad := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "r")
		_, _ = w.Write([]byte(`{"clientToken":"c","environment":"staging"}`))
	})
	var tb recorder
	srv := newServer(c.Handler(&tb, bad))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/ecom/config")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || len(tb.failed) != 1 {
		t.Fatalf("status %d, failures %v", resp.StatusCode, tb.failed)
	}
}

// The transport hook does the same for a client.
func TestTransportHookFailsOnViolation(t *testing.T) {
	c := repository(t)
	srv := newServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "r")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errorCode":"yp_1002","message":"wrong code for 401"}`))
	}))
	defer srv.Close()
	var tb recorder
	client := &http.Client{Transport: c.Transport(&tb, srv.Client().Transport)}
	resp, err := client.Get(srv.URL + "/v1/ecom/config")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 401 || len(tb.failed) != 1 {
		t.Fatalf("status %d, failures %v", resp.StatusCode, tb.failed)
	}
}

// The outgoing webhooks are held to the document's webhooks section:
// headers and body; a deliberately wrong one is caught.
func TestCheckWebhook(t *testing.T) {
	c := repository(t)
	header := func() http.Header {
		h := http.Header{}
		for k, v := range map[string]string{
			"X-Webhook-Id": "evt_1", "X-Webhook-Timestamp": "1763892000", "X-Webhook-HMAC-Signature": "v1,c2lnbmF0dXJl",
			"X-Webhook-Delivery-Attempt": "1", "X-Webhook-Payload-Version": "1",
			"webhook-id": "evt_1", "webhook-timestamp": "1763892000", "webhook-signature": "v1,c2lnbmF0dXJl",
		} {
			h.Set(k, v)
		}
		return h
	}
	body := `{"live":false,"notificationItems":[{"NotificationRequestItem":{"additionalData":{"paymentSource":"advanced"},
		"amount":{"value":1000,"currency":"EUR"},"eventCode":"AUTHORISATION","eventDate":"2026-11-23T10:00:00+01:00",
		"merchantAccountCode":"ShopECOM","merchantReference":"order-1","pspReference":"QFQTPCQ8HXSKGK82","success":"true"}}]}`
	if v := c.CheckWebhook("paymentEvent", header(), []byte(body)); len(v) != 0 {
		t.Fatalf("a valid webhook: %v", v)
	}
	noAttempt := header()
	noAttempt.Del("X-Webhook-Delivery-Attempt")
	badSig := header()
	badSig.Set("X-Webhook-HMAC-Signature", "sha256=abc")
	for name, tc := range map[string]struct {
		h    http.Header
		body string
		want string
	}{
		"missing header":       {noAttempt, body, "X-Webhook-Delivery-Attempt"},
		"bad signature header": {badSig, body, "X-Webhook-HMAC-Signature"},
		"live as a string":     {header(), strings.Replace(body, `"live":false`, `"live":"false"`, 1), "body"},
		"hmacSignature kept":   {header(), strings.Replace(body, `"paymentSource":"advanced"`, `"paymentSource":"advanced","hmacSignature":"x"`, 1), "body"},
		"non-string value":     {header(), strings.Replace(body, `"paymentSource":"advanced"`, `"paymentSource":"advanced","score":1`, 1), "body"},
	} {
		v := c.CheckWebhook("paymentEvent", tc.h, []byte(tc.body))
		if len(v) == 0 || !strings.Contains(strings.Join(v, " "), tc.want) {
			t.Errorf("%s: violations %v, want one naming %s", name, v, tc.want)
		}
	}
	if v := c.CheckWebhook("noSuchWebhook", header(), []byte(body)); len(v) == 0 {
		t.Error("an undocumented webhook passed")
	}
}

// Bodies reads each operation's requestBody.required (absent: optional).
func TestBodies(t *testing.T) {
	got := repository(t).Bodies()
	for op, required := range map[string]bool{
		"POST /v1/ecom/{siteId}/payments":                     true,
		"POST /v1/notifications/upstream":                     true,
		"POST /v1/ecom/webhooks/test":                         false,
		"POST /v1/ecom/webhook-deliveries/{deliveryId}/retry": false,
	} {
		if r, ok := got[op]; !ok || r != required {
			t.Errorf("%s: required %v (listed %v), want %v", op, r, ok, required)
		}
	}
	if _, ok := got["GET /v1/ecom/config"]; ok {
		t.Error("GET /v1/ecom/config listed with a body")
	}
}
