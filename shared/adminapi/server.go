package adminapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Prefix is where the admin API is served.
const Prefix = "/_admin/v1/"

// Status is what GET /_admin/v1/status answers.
type Status struct {
	URL         string `json:"url"`
	PID         int    `json:"pid"`
	Environment string `json:"environment"`
	DataDir     string `json:"dataDir"`
	Dashboard   string `json:"dashboard"`
}

// ExecRequest is the body of POST /_admin/v1/exec.
type ExecRequest struct {
	Args []string `json:"args"`
}

// ExecResult is its answer.
type ExecResult struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// StreamMessage is one line of GET /_admin/v1/listen (JSON lines): first
// {"type":"ready"} with the merchant, the listener's id and its secret,
// then one {"type":"webhook"} per event.
type StreamMessage struct {
	Type       string   `json:"type"` // ready, webhook
	MerchantID string   `json:"merchantId,omitempty"`
	ListenerID string   `json:"listenerId,omitempty"`
	Secret     string   `json:"secret,omitempty"`
	Webhook    *Webhook `json:"webhook,omitempty"`
}

// Server is the admin API: paysvc-admin's way into a running local server,
// which holds the embedded store.
//
//	GET  /_admin/v1/status                       Status
//	POST /_admin/v1/exec      ExecRequest        runs a paysvc-admin command in the server
//	GET  /_admin/v1/listen?merchant=ID&events=…&to=URL  the merchant's webhooks as JSON lines
//	POST /_admin/v1/listen/report  ListenReport  what became of one (for trigger)
//
// Every request needs Authorization: Bearer <token> (the token in the data
// directory, TokenFile).
type Server struct {
	Token  string
	Local  *Local
	Status Status
	// Exec runs one paysvc-admin command on the server's stores.
	Exec func(ctx context.Context, args []string, stdout, stderr io.Writer) int

	execMu sync.Mutex // one command at a time, as with the CLI on its own store
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(auth), []byte(s.Token)) != 1 {
		writeError(w, http.StatusUnauthorized, "admin_unauthorized", "the admin API needs Authorization: Bearer <the token in the data directory's "+TokenFile+">")
		return
	}
	switch r.Method + " " + strings.TrimPrefix(r.URL.Path, Prefix) {
	case "GET status":
		writeJSON(w, s.Status)
	case "POST exec":
		s.exec(w, r)
	case "GET listen":
		s.listen(w, r)
	case "POST listen/report":
		var rep ListenReport
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&rep); err != nil {
			writeError(w, http.StatusBadRequest, "admin_invalid_request", "body: "+err.Error())
			return
		}
		s.Local.Hub.Report(rep)
		writeJSON(w, struct{}{})
	default:
		writeError(w, http.StatusNotFound, "admin_not_found", "no admin API route "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var req ExecRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "admin_invalid_request", "body: "+err.Error())
		return
	}
	var stdout, stderr bytes.Buffer
	s.execMu.Lock()
	code := s.Exec(r.Context(), req.Args, &stdout, &stderr)
	s.execMu.Unlock()
	// What the command wrote is for the worker and the listeners now.
	if s.Local.Queue != nil {
		s.Local.Queue.Wake()
	}
	s.Local.Hub.Notify(context.WithoutCancel(r.Context()))
	writeJSON(w, ExecResult{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String()})
}

func (s *Server) listen(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	merchantID, err := s.Local.soleMerchant(r.Context(), q.Get("merchant"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "admin_invalid_request", err.Error())
		return
	}
	var codes []string
	for _, c := range strings.Split(strings.ToUpper(q.Get("events")), ",") {
		if c = strings.TrimSpace(c); c != "" {
			codes = append(codes, c)
		}
	}
	l, err := s.Local.Hub.Listen(r.Context(), merchantID, q.Get("to"), codes)
	if err != nil {
		writeError(w, http.StatusNotFound, "admin_not_found", err.Error())
		return
	}
	defer l.Close()
	// A stream outlives the server's write timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	send := func(m StreamMessage) bool { return enc.Encode(m) == nil && rc.Flush() == nil }
	if !send(StreamMessage{Type: "ready", MerchantID: merchantID, ListenerID: l.ID, Secret: l.Secret}) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case wh, ok := <-l.C:
			if !ok || !send(StreamMessage{Type: "webhook", Webhook: &wh}) {
				return // closed: the server is stopping
			}
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
