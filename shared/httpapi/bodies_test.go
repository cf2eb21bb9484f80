package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/openapicheck"
	"github.com/yp/paysvc/shared/testenv"
)

// Every operation's request body is optional exactly where docs/openapi.yaml
// says so: there a POST with no body and no Content-Type is served, where the
// body is required it is 415; with a body, a Content-Type is needed either way.
func TestOptionalBodiesAsDocumented(t *testing.T) {
	c, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	e := testenv.New(t)
	ne := newNotifyEnv(t, otherKey, httpapi.BasicAuth{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == httpapi.NotificationsPath {
			ne.h.ServeHTTP(w, r)
			return
		}
		e.Handler.ServeHTTP(w, r)
	})
	params := strings.NewReplacer("{siteId}", testenv.SiteA, "{pspReference}", "PSP0000000000001", "{deliveryId}", "msg_unknown")
	unfilled := regexp.MustCompile(`\{[^}]*\}`)
	send := func(method, path, body string) *httptest.ResponseRecorder {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req := httptest.NewRequest(method, path, rd)
		req.Header.Set("Authorization", "Bearer "+e.Keys["A"])
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	bodies := c.Bodies()
	if len(bodies) < 10 {
		t.Fatalf("only %d operations with a body in the document", len(bodies))
	}
	optional := 0
	for op, required := range bodies {
		t.Run(op, func(t *testing.T) {
			method, path, _ := strings.Cut(op, " ")
			path = params.Replace(path)
			if unfilled.MatchString(path) {
				t.Fatalf("no test value for a parameter of %s", path)
			}
			w := send(method, path, "")
			switch {
			case required && w.Code != http.StatusUnsupportedMediaType:
				t.Errorf("no body, no Content-Type: %d %s, want 415 (the body is required)", w.Code, w.Body)
			case !required && (w.Code == http.StatusUnsupportedMediaType || w.Code == http.StatusBadRequest || w.Code >= 500):
				t.Errorf("no body, no Content-Type: %d %s, want it served (the body is optional)", w.Code, w.Body)
			}
			if w := send(method, path, "{}"); w.Code != http.StatusUnsupportedMediaType {
				t.Errorf("a body without Content-Type: %d %s, want 415", w.Code, w.Body)
			}
		})
		if !required {
			optional++
		}
	}
	if optional == 0 {
		t.Error("no operation with an optional body: the test shows nothing")
	}
}
