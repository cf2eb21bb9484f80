package localserver

import (
	"net/http"
	"strconv"

	"github.com/yp/paysvc/docs"
)

// OpenAPIPath is where the local server serves docs/openapi.yaml (no key).
const OpenAPIPath = "/openapi.yaml"

// withOpenAPI serves the contract at OpenAPIPath and everything else with
// next. An exact match, not a ServeMux: a mux would answer unclean paths
// with a redirect instead of the API's JSON 404.
func withOpenAPI(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != OpenAPIPath || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/yaml")
		h.Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(docs.OpenAPI)
		}
	})
}
