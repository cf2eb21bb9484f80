package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The request log keeps the latest requests, newest first, with the
// errorCode of error answers and nothing of their bodies; the dashboard's
// own requests are not kept.
func TestRequestLog(t *testing.T) {
	l := NewRequestLog(3, Prefix)
	h := l.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req_"+r.URL.Query().Get("n"))
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"errorCode":"yp_3006","message":"payment not found"}`))
			return
		}
		_, _ = w.Write([]byte(`{"secret":"never kept"}`))
	}))
	for i := range 5 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", fmt.Sprintf("/v1/ecom/x?n=%d", i), nil))
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/ecom/y?n=5&fail=1", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", Prefix, nil))
	got := l.Recent()
	if len(got) != 3 || got[0].RequestID != "req_5" || got[1].RequestID != "req_4" || got[2].RequestID != "req_3" {
		t.Fatalf("recent %+v", got)
	}
	if got[0].Status != 404 || got[0].ErrorCode != "yp_3006" || got[0].Path != "/v1/ecom/y" || got[1].Status != 200 || got[1].ErrorCode != "" {
		t.Fatalf("entries %+v", got[:2])
	}
}
