package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/testenv"
)

// A request carrying Authorization, Idempotency-Key or Content-Type more
// than once is refused before anything else, 400 yp_2002 naming each such
// header: with merchant B's key first and A's second it is served as
// neither (net/http's Get would take B's).
func TestRepeatedHeadersRefused(t *testing.T) {
	e := testenv.New(t)
	pay := "/v1/ecom/" + testenv.SiteA + "/payments"
	bearer := func(k string) string { return "Bearer " + e.Keys[k] }
	tests := []struct {
		name, method, path, body string
		header                   [][2]string // added in order
		fields                   []string    // named by the 400; none: served
	}{
		{"two keys, B's first", "POST", pay, payBody(""),
			[][2]string{{"Authorization", bearer("B")}, {"Authorization", bearer("A")}, {"Content-Type", "application/json"}}, []string{"Authorization"}},
		{"the same key twice", "GET", "/v1/ecom/config", "",
			[][2]string{{"Authorization", bearer("A")}, {"Authorization", bearer("A")}}, []string{"Authorization"}},
		{"a key and an empty one", "GET", "/v1/ecom/events", "",
			[][2]string{{"Authorization", bearer("A")}, {"authorization", ""}}, []string{"Authorization"}},
		{"two Idempotency-Keys", "POST", pay, payBody(""),
			[][2]string{{"Authorization", bearer("A")}, {"Content-Type", "application/json"}, {"Idempotency-Key", "k-1"}, {"Idempotency-Key", "k-2"}}, []string{"Idempotency-Key"}},
		{"two Content-Types", "POST", pay, payBody(""),
			[][2]string{{"Authorization", bearer("A")}, {"Content-Type", "application/json"}, {"Content-Type", "text/plain"}}, []string{"Content-Type"}},
		{"every one twice, unauthenticated", "POST", "/v1/ecom/webhooks/test", "{}",
			[][2]string{{"Authorization", "Bearer x"}, {"Authorization", "Bearer y"}, {"Idempotency-Key", "a"}, {"Idempotency-Key", "a"},
				{"Content-Type", "application/json"}, {"Content-Type", "application/json"}}, []string{"Authorization", "Idempotency-Key", "Content-Type"}},
		{"other headers may repeat", "POST", pay, payBody(""),
			[][2]string{{"Authorization", bearer("A")}, {"Content-Type", "application/json"}, {"Accept", "application/json"}, {"Accept", "*/*"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.Upstream.Requests("/payments"))
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req := httptest.NewRequest(tt.method, tt.path, body)
			for _, h := range tt.header {
				req.Header.Add(h[0], h[1])
			}
			w := httptest.NewRecorder()
			e.Handler.ServeHTTP(w, req)
			if tt.fields == nil {
				if w.Code != http.StatusOK {
					t.Fatalf("%d %s", w.Code, w.Body)
				}
				return
			}
			var got struct {
				ErrorCode string `json:"errorCode"`
				Fields    []struct{ Field, Message string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusBadRequest || got.ErrorCode != "yp_2002" || len(got.Fields) != len(tt.fields) {
				t.Fatalf("%d %s, want 400 yp_2002 naming %v", w.Code, w.Body, tt.fields)
			}
			for i, f := range tt.fields {
				if got.Fields[i].Field != f || got.Fields[i].Message != "must be sent once" {
					t.Errorf("fields %+v, want %v", got.Fields, tt.fields)
				}
			}
			if n := len(e.Upstream.Requests("/payments")) - before; n != 0 {
				t.Errorf("the upstream was called %d times", n)
			}
		})
	}

	// The platform's notifications too.
	ne := newNotifyEnv(t, otherKey, httpapi.BasicAuth{})
	req := httptest.NewRequest(http.MethodPost, httpapi.NotificationsPath, strings.NewReader("{}"))
	req.Header.Add("Content-Type", "application/json")
	req.Header.Add("Content-Type", "application/json")
	w := httptest.NewRecorder()
	ne.h.ServeHTTP(w, req)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"field":"Content-Type"`) {
		t.Fatalf("notification with two Content-Types: %d %s", w.Code, w.Body)
	}
}
