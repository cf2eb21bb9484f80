package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
)

// TestPanicBecomes500 checks both recovery layers: inside a route handler
// and in the outer wrapper.
func TestPanicBecomes500(t *testing.T) {
	var logs bytes.Buffer
	d := &Deps{Log: slog.New(slog.NewJSONHandler(&logs, nil)), Clock: clock.NewFake(time.Unix(0, 0))}
	h := d.wrap("boom", func(w http.ResponseWriter, r *http.Request) { panic("kaboom: secret detail") })
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
	if w.Code != 500 || !strings.Contains(w.Body.String(), `"errorCode":"yp_9000"`) || strings.Contains(w.Body.String(), "kaboom") {
		t.Fatalf("outer panic: %d %s", w.Code, w.Body)
	}
	if w.Header().Get("Content-Type") != "application/json" {
		t.Fatal("Content-Type")
	}
	if !strings.Contains(logs.String(), "kaboom") {
		t.Fatal("panic not logged")
	}

	resp := d.run(context.Background(), Route{Name: "r", Handle: func(context.Context, *Call) (any, error) { panic("inner") }}, &Call{})
	if resp.status != 500 || !strings.Contains(string(resp.body), "yp_9000") {
		t.Fatalf("inner panic: %d %s", resp.status, resp.body)
	}
}
