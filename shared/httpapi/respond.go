package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// writeJSON writes v as JSON with status. Encoding errors of our own types
// are programming errors; they become a bare 500.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"errorCode":"yp_9000","message":"internal error"}`)
	}
	writeRaw(w, status, b)
}

// Header values of every JSON answer, shared (read-only).
var (
	hdrJSON    = []string{"application/json"}
	hdrNoStore = []string{"no-store"}
)

// writeRaw writes an already encoded JSON body.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	h["Cache-Control"] = hdrNoStore
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
