package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
)

// TestPanicBecomes500 checks the one recovery, in wrap: a panic becomes a
// JSON 500 yp_9000 that hides the panic's value, which is logged.
func TestPanicBecomes500(t *testing.T) {
	var logs bytes.Buffer
	d := &Deps{Log: slog.New(slog.NewJSONHandler(&logs, nil)), Clock: clock.NewFake(time.Unix(0, 0))}
	h := d.wrap("boom", func(http.ResponseWriter, *http.Request, *reqInfo) { panic("kaboom: secret detail") })
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
}
