package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testenv"
)

// TestRouteHandlerPanic: a panic inside a route handler is recovered by the
// one recovery (wrap) as a 500 yp_9000, is logged, and releases the
// request's Idempotency-Key, so a retry runs again (not 409 yp_2004 until
// the lease ends).
func TestRouteHandlerPanic(t *testing.T) {
	e := testenv.New(t)
	runs := 0
	e.Handler = httpapi.NewHandler(e.Deps, []httpapi.Route{{
		Method: http.MethodPost, Pattern: "/v1/ecom/{siteId}/boom", Name: "boom", Perm: tenant.PermPayments, Site: true,
		Handle: func(context.Context, *httpapi.Call) (any, error) { runs++; panic("inner kaboom") },
	}})
	for i := range 2 {
		r := e.Do(http.MethodPost, "/v1/ecom/"+testenv.SiteA+"/boom", "A", `{}`, "Idempotency-Key", "panic-1")
		if r.Status != http.StatusInternalServerError || !strings.Contains(string(r.Body), `"errorCode":"yp_9000"`) || strings.Contains(string(r.Body), "kaboom") {
			t.Fatalf("attempt %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if runs != 2 {
		t.Fatalf("handler ran %d times, want 2 (the key released after the panic)", runs)
	}
	if !strings.Contains(e.Logs.String(), "inner kaboom") {
		t.Fatal("panic not logged")
	}
}
