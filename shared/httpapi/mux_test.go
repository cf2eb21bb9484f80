package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Patterns one ServeMux cannot hold together are served as API Gateway
// resolves them: a literal segment before a {variable}, level by level,
// with path values set.
func TestRouteMuxPrecedence(t *testing.T) {
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name+":"+r.PathValue("siteId")+r.PathValue("pspReference")+r.PathValue("deliveryId"))
		})
	}
	patterns := []string{
		"/v1/ecom/{siteId}/payments/{pspReference}",
		"/v1/ecom/{siteId}/payments/details",
		"/v1/ecom/webhook-deliveries/{deliveryId}/retry",
		"/v1/ecom/config",
	}
	handlers := map[string]http.Handler{}
	for i, p := range patterns {
		handlers[p] = named(string(rune('a' + i)))
	}
	m := newRouteMux(patterns, handlers)
	if len(m.muxes) != 2 {
		t.Fatalf("%d muxes, want 2 (the lookup conflicts with the retry)", len(m.muxes))
	}
	for path, want := range map[string]string{
		"/v1/ecom/site_a/payments/PSP1":                   "a:site_aPSP1",
		"/v1/ecom/site_a/payments/details":                "b:site_a",
		"/v1/ecom/webhook-deliveries/msg_1/retry":         "c:msg_1",
		"/v1/ecom/webhook-deliveries/payments/retry":      "c:payments",
		"/v1/ecom/webhook-deliveries/payments/details":    "b:webhook-deliveries",
		"/v1/ecom/config":                                 "d:",
		"/v1/ecom/nope":                                   "",
		"/v1/ecom/webhook-deliveries/msg_1/retry/further": "",
	} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		h := m.handler(r)
		got := ""
		if h != nil {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got = w.Body.String()
		}
		if got != want {
			t.Errorf("%s: served %q, want %q", path, got, want)
		}
	}
}
