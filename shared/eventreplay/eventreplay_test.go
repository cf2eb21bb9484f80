package eventreplay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/yp/paysvc/shared/eventreplay"
)

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Request turns an event into the local server's request: -psp replaces
// the demo payment in the path, the query, the headers and the body, and
// every send gets a fresh Idempotency-Key unless the file's is kept.
func TestRequest(t *testing.T) {
	fresh := func(k string) string { return k + "-fresh" }
	withHeader := `{"httpMethod":"GET","path":"/v1/ecom/site_demo/payments/QFQTPCQ8HXSKGK82",` +
		`"headers":{"X-Request-Id":"lookup-QFQTPCQ8HXSKGK82","Host":"api.example","X-Forwarded-For":"203.0.113.10"}}`
	for _, tc := range []struct {
		name, file, raw string
		o               eventreplay.Options
		wantURL         string
		wantBody        string // "" = not checked
		wantHeaders     map[string]string
	}{
		{name: "query", file: "events.json", o: eventreplay.Options{BaseURL: "http://h:1/", PSP: "PSP1"},
			wantURL: "http://h:1/v1/ecom/events?limit=20&pspReference=PSP1"},
		{name: "query without -psp", file: "events.json", o: eventreplay.Options{BaseURL: "http://h:1"},
			wantURL: "http://h:1/v1/ecom/events?limit=20&pspReference=" + eventreplay.DemoPSP},
		{name: "path and body", file: "amount-updates.json", o: eventreplay.Options{BaseURL: "http://h:1", PSP: "PSP1", NewKey: fresh},
			wantURL: "http://h:1/v1/ecom/site_demo/payments/PSP1/amount-updates", wantBody: `{"pspReference":"PSP1",`,
			wantHeaders: map[string]string{"Idempotency-Key": "adjust-order-1002-fresh"}},
		{name: "headers; API Gateway's own are dropped", raw: withHeader, o: eventreplay.Options{BaseURL: "http://h:1", PSP: "PSP1"},
			wantURL:     "http://h:1/v1/ecom/site_demo/payments/PSP1",
			wantHeaders: map[string]string{"X-Request-Id": "lookup-PSP1", "X-Forwarded-For": "", "Idempotency-Key": ""}},
		{name: "a fresh key by default", file: "payments-details.json", o: eventreplay.Options{BaseURL: "http://h:1", NewKey: fresh},
			wantURL: "http://h:1/v1/ecom/site_demo/payments/details", wantBody: `{"details":`,
			wantHeaders: map[string]string{"Idempotency-Key": "details-order-1002-fresh", "Authorization": "Bearer yp_test_demoKey000000000000000000000000000000000000"}},
		{name: "the file's key kept", file: "payments-details.json", o: eventreplay.Options{BaseURL: "http://h:1", KeepIdempotencyKey: true, NewKey: fresh},
			wantURL: "http://h:1/v1/ecom/site_demo/payments/details", wantHeaders: map[string]string{"Idempotency-Key": "details-order-1002"}},
		{name: "no key where the file has none", file: "config.json", o: eventreplay.Options{BaseURL: "http://h:1", NewKey: fresh},
			wantURL: "http://h:1/v1/ecom/config", wantHeaders: map[string]string{"Idempotency-Key": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			if tc.file != "" {
				raw = readEvent(t, tc.file)
			}
			req, err := eventreplay.Request(context.Background(), raw, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.wantURL {
				t.Errorf("URL %s, want %s", req.URL, tc.wantURL)
			}
			body, _ := io.ReadAll(req.Body)
			if !strings.HasPrefix(string(body), tc.wantBody) || tc.o.PSP != "" && strings.Contains(string(body), eventreplay.DemoPSP) {
				t.Errorf("body %s, want it to start %s", body, tc.wantBody)
			}
			for k, want := range tc.wantHeaders {
				if got := req.Header.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

// Without NewKey, fresh keys are random: two sends, two keys, both
// starting with the file's.
func TestRequestFreshKeysDiffer(t *testing.T) {
	raw := readEvent(t, "payments-details.json")
	keys := map[string]bool{}
	for range 2 {
		req, err := eventreplay.Request(context.Background(), raw, eventreplay.Options{BaseURL: "http://h:1"})
		if err != nil {
			t.Fatal(err)
		}
		k := req.Header.Get("Idempotency-Key")
		if !strings.HasPrefix(k, "details-order-1002-") || len(k) > 255 {
			t.Fatalf("key %q", k)
		}
		keys[k] = true
	}
	if len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
}

func TestRequestRefusesNonAPIEvents(t *testing.T) {
	if _, err := eventreplay.Request(context.Background(), readEvent(t, "sqs-deliveries.json"), eventreplay.Options{}); !errors.Is(err, eventreplay.ErrNotAnAPIEvent) {
		t.Fatalf("sqs-deliveries.json: %v", err)
	}
}

func TestBaseURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:3000": "http://127.0.0.1:3000",
		":3001":          "http://127.0.0.1:3001",
		"0.0.0.0:8080":   "http://127.0.0.1:8080",
		"[::]:3000":      "http://[::1]:3000",
		"[::1]:3000":     "http://[::1]:3000",
		"localhost:4000": "http://localhost:4000",
	} {
		if got := eventreplay.BaseURL(addr); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// idemServer answers as the service does: the first call with a key is
// stored, a later one with the same key is its replay.
type idemServer struct {
	mu   sync.Mutex
	seen map[string]bool
	reqs []*http.Request
}

func (s *idemServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_%d", len(s.reqs)))
	if k := r.Header.Get("Idempotency-Key"); s.seen[k] {
		w.Header().Set("Idempotent-Replayed", "true")
	} else {
		s.seen[k] = true
	}
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write([]byte(`{"errorCode":"yp_2002","message":"no open challenge"}`))
}

// The command: PAYSVC_ADDR is the server unless -url says otherwise; an
// event sent again is a new call unless -keep-key, and a replay is shown.
func TestRun(t *testing.T) {
	details := filepath.Join("..", "..", "events", "payments-details.json")
	for _, tc := range []struct {
		name       string
		args       [][]string // one command per entry, in order
		addr       string     // PAYSVC_ADDR: "srv" = the test server's
		wantCode   int
		wantCalls  int
		wantOut    []string // in the last command's output
		wantNotOut []string
		wantErr    string
	}{
		{name: "PAYSVC_ADDR", args: [][]string{{details}}, addr: "srv", wantCalls: 1,
			wantOut: []string{"HTTP 400\n", "Idempotency-Key: details-order-1002-", "X-Request-Id: req_1\n", `"yp_2002"`}, wantNotOut: []string{"Replayed"}},
		{name: "-url wins over PAYSVC_ADDR", args: [][]string{{"-url", "srv", details}}, addr: "127.0.0.1:1", wantCalls: 1, wantOut: []string{"HTTP 400\n"}},
		{name: "sent again: a new call", args: [][]string{{details}, {details}}, addr: "srv", wantCalls: 2,
			wantOut: []string{"HTTP 400\n"}, wantNotOut: []string{"Replayed"}},
		{name: "-keep-key: the replay is shown", args: [][]string{{"-keep-key", details}, {"-keep-key", details}}, addr: "srv", wantCalls: 2,
			wantOut: []string{"Idempotency-Key: details-order-1002\n", "Idempotent-Replayed: true"}},
		{name: "usage", args: [][]string{{}}, addr: "srv", wantCode: 2, wantErr: "usage: paysvc-event"},
		{name: "no such file", args: [][]string{{"nope.json"}}, addr: "srv", wantCode: 1, wantErr: "nope.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &idemServer{seen: map[string]bool{}}
			srv := httptest.NewServer(s)
			defer srv.Close()
			addr := strings.ReplaceAll(tc.addr, "srv", srv.Listener.Addr().String())
			getenv := func(k string) string {
				if k == "PAYSVC_ADDR" {
					return addr
				}
				return ""
			}
			var out, errOut bytes.Buffer
			code := 0
			for _, args := range tc.args {
				out.Reset()
				args = append([]string(nil), args...)
				for i, a := range args {
					args[i] = strings.ReplaceAll(a, "srv", srv.URL)
				}
				code = eventreplay.Run(context.Background(), args, getenv, srv.Client(), &out, &errOut)
			}
			if code != tc.wantCode || len(s.reqs) != tc.wantCalls || !strings.Contains(errOut.String(), tc.wantErr) {
				t.Fatalf("exit %d, %d calls, stderr %q", code, len(s.reqs), errOut.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantNotOut {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out.String())
				}
			}
		})
	}
}
