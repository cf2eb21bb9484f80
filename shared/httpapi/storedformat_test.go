package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/storeerr"
)

// formatMetrics counts StoredFormatUnknown.
type formatMetrics struct{ unknown int }

func (*formatMetrics) Request(string, int, string, time.Duration) {}
func (m *formatMetrics) StoredFormatUnknown()                     { m.unknown++ }

// A request that fails on a stored record of an unknown format version is
// counted (StoredFormatUnknown); one that fails otherwise is not.
func TestStoredFormatUnknownCounted(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("get payment %q: decode item PAYMENT#P1/HEAD: format version 2: %w", "P1", storeerr.ErrUnknownFormat), 1},
		{fmt.Errorf("get payment %q: %w", "P1", storeerr.ErrConflict), 0},
	} {
		m := &formatMetrics{}
		d := &Deps{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Clock: clock.NewFake(time.Unix(0, 0)), Metrics: m}
		h := d.wrap("payment", func(w http.ResponseWriter, _ *http.Request, info *reqInfo) { writeError(w, info, tc.err) })
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
		if w.Code != http.StatusInternalServerError || m.unknown != tc.want {
			t.Errorf("%v: %d, counted %d; want 500, %d", tc.err, w.Code, m.unknown, tc.want)
		}
	}
}
