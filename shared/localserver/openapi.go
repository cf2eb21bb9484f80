package localserver

import (
	"net/http"
	"strconv"

	"github.com/yp/paysvc/docs"
)

// OpenAPIPath is where the local server serves docs/openapi.yaml (no key).
const OpenAPIPath = "/openapi.yaml"

// withOpenAPI serves the contract at OpenAPIPath and everything else with next.
func withOpenAPI(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+OpenAPIPath, func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/yaml")
		h.Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
		_, _ = w.Write(docs.OpenAPI)
	})
	mux.Handle("/", next)
	return mux
}
