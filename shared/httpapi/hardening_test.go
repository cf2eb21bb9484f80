package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/testenv"
)

// ISO 4217 codes that name no currency (testing, metals, units of account)
// are refused wherever an amount is accepted, before the upstream is called.
func TestNonCurrencyCodesRefused(t *testing.T) {
	e := testenv.New(t)
	site := "/v1/ecom/" + testenv.SiteA
	var cases []errCase
	for _, code := range []string{"XXX", "XTS", "XAU", "XDR", "XUA"} {
		amount := `{"value":1000,"currency":"` + code + `"}`
		cases = append(cases,
			errCase{name: "payments " + code, method: "POST", path: site + "/payments", key: "A",
				body:   `{"amount":` + amount + `,"paymentMethod":` + card + `,"returnUrl":"https://shop.example/r"}`,
				status: 400, code: "yp_2002", field: "amount.currency"},
			errCase{name: "sessions " + code, method: "POST", path: site + "/sessions", key: "A",
				body:   `{"amount":` + amount + `,"returnUrl":"https://shop.example/r"}`,
				status: 400, code: "yp_2002", field: "amount.currency"},
		)
	}
	runErrCases(t, e, cases)
	if n := len(e.Upstream.Requests("/payments")) + len(e.Upstream.Requests("/sessions")); n != 0 {
		t.Fatalf("the upstream was called %d times for refused currencies", n)
	}
}

// An Idempotency-Key header sent empty, or sent twice, is a 400 naming the
// header — never treated as absent (which would run the request unprotected).
func TestIdempotencyKeyHeaderEmptyOrRepeated(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/payments"
	runErrCases(t, e, []errCase{
		{name: "empty", method: "POST", path: path, key: "A", body: payBody(""),
			headers: []string{"Idempotency-Key", ""}, status: 400, code: "yp_2002", field: "Idempotency-Key"},
	})

	req := httptest.NewRequest("POST", path, strings.NewReader(payBody("")))
	req.Header.Set("Authorization", "Bearer "+e.Keys["A"])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Idempotency-Key", "k-1")
	req.Header.Add("Idempotency-Key", "k-2")
	w := httptest.NewRecorder()
	e.Handler.ServeHTTP(w, req)
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"yp_2002"`) || !strings.Contains(w.Body.String(), `"Idempotency-Key"`) {
		t.Fatalf("two Idempotency-Key headers: %d %s", w.Code, w.Body)
	}
	if n := len(e.Upstream.Requests("/payments")); n != 0 {
		t.Fatalf("the upstream was called %d times", n)
	}
}

// Paths ServeMux would clean get the API's JSON 404 with an X-Request-Id,
// never a redirect.
func TestUncleanPathsAreJSONNotFound(t *testing.T) {
	e := testenv.New(t)
	for _, p := range []string{
		"/v1/ecom//config",
		"/v1/ecom/../ecom/config",
		"/v1/ecom/./config",
		"/v1/ecom/" + testenv.SiteA + "/payments/../sessions",
		"/v1/ecom/%2e%2e/config",
		"//v1/ecom/config",
		"/v1/ecom/config/..",
		"/v1/ecom/config/.",
	} {
		for _, method := range []string{"GET", "POST"} {
			t.Run(method+" "+p, func(t *testing.T) {
				req := httptest.NewRequest(method, "http://svc"+p, nil)
				req.Header.Set("Authorization", "Bearer "+e.Keys["A"])
				w := httptest.NewRecorder()
				e.Handler.ServeHTTP(w, req)
				if w.Code != 404 || !strings.Contains(w.Body.String(), `"errorCode":"yp_9004"`) {
					t.Fatalf("%s %s = %d %q, want 404 yp_9004", method, p, w.Code, w.Body)
				}
				if w.Header().Get("Location") != "" || w.Header().Get("X-Request-Id") == "" || w.Header().Get("Content-Type") != "application/json" {
					t.Fatalf("headers %v", w.Header())
				}
			})
		}
	}
}

// The notifications endpoint's handler passes every other path, unclean ones
// included, to the API handler instead of redirecting.
func TestNotificationsHandlerPassesUncleanPaths(t *testing.T) {
	e := newNotifyEnv(t, otherKey, httpapi.BasicAuth{})
	for _, p := range []string{"/v1/notifications//upstream", "/v1/notifications/../notifications/upstream", "//v1/ecom/config"} {
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "http://svc"+p, strings.NewReader("{}")))
		if w.Code != http.StatusTeapot {
			t.Errorf("%s: %d, want the API handler's answer", p, w.Code)
		}
	}
}
