package localserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineWriter collects JSON log lines; changed is closed (and replaced) at
// every write, so a test waits for a line instead of polling.
type lineWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLineWriter() *lineWriter { return &lineWriter{changed: make(chan struct{})} }

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *lineWriter) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

func (l *lineWriter) snapshot() (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.changed
}

// waitFor waits until what was written holds n lines containing all of
// parts, or done is closed (the server ended), or the failure bound.
func (l *lineWriter) waitFor(t *testing.T, done <-chan struct{}, n int, parts ...string) {
	t.Helper()
	bound := time.NewTimer(30 * time.Second) // a failure bound only
	defer bound.Stop()
	for {
		text, changed := l.snapshot()
		found := 0
		for line := range strings.SplitSeq(text, "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				found++
			}
		}
		if found >= n {
			return
		}
		select {
		case <-changed:
		case <-done:
			t.Fatalf("the server ended before %d lines with %q:\n%s", n, parts, text)
		case <-bound.C:
			t.Fatalf("no %d lines with %q within 30 s:\n%s", n, parts, text)
		}
	}
}

// server is Run in-process until the test ends (or stop).
type server struct {
	base    string
	dataDir string
	env     map[string]string
	logs    *lineWriter
	banner  *bytes.Buffer
	stop    func()
	ended   chan struct{} // closed when Run returned
}

// getenv reads the server's environment (for the admin CLI beside it).
func (s *server) getenv(k string) string { return s.env[k] }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func start(t *testing.T, env map[string]string) *server {
	t.Helper()
	addr := freeAddr(t)
	full := map[string]string{"PAYSVC_ADDR": addr, "PAYSVC_DATA_DIR": t.TempDir()}
	for k, v := range env {
		full[k] = v
	}
	logs := newLineWriter()
	var banner bytes.Buffer // written before "listening" is logged, by the same goroutine
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	var runErr error
	go func() {
		defer close(ended)
		runErr = Run(ctx, func(k string) string { return full[k] }, logs, &banner)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-ended
			if runErr != nil {
				t.Errorf("Run: %v", runErr)
			}
		})
	}
	t.Cleanup(stop)
	logs.waitFor(t, ended, 1, `"msg":"listening"`)
	return &server{base: "http://" + full["PAYSVC_ADDR"], dataDir: full["PAYSVC_DATA_DIR"], env: full, logs: logs, banner: &banner, stop: stop, ended: ended}
}

func (s *server) do(t *testing.T, method, path string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	status, b := raw(t, method, s.base+path, "", header, body)
	var m map[string]any
	_ = json.Unmarshal([]byte(b), &m)
	return status, m
}

const exampleSeed = "../../cmd/paysvc-local/seed.example.json"
const exampleKey = "yp_test_acmeLocalDevelopmentKey000000000000000000"

// TestBannerAndLocalWebhooks: what a newcomer sees at start, by setting.
func TestBannerAndLocalWebhooks(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		banner    []string
		notBanner []string
		logs      []string
		noLogs    []string
	}{
		{
			name: "seed file, local webhooks by default",
			env:  map[string]string{"PAYSVC_SEED_FILE": exampleSeed},
			banner: []string{
				"Seeded from " + exampleSeed, "merchant m_acme (Acme Outdoor)", "site site_acme_web (acme.example, ecommerce)",
				"API key " + exampleKey + " (local development)", "m_acme/sub_acme -> http://127.0.0.1:4000/webhooks",
				"webhooks: delivered to this machine too (127.0.0.1, localhost: the test environment's local default",
				"upstream: simulated in-process at http://127.0.0.1:", "(X-API-Key sim_",
			},
			notBanner: []string{"REFUSED"},
			// The banner says it: no warning line before it.
			noLogs: []string{exampleKey, "whsec_", "webhooks may go to http(s)://localhost", `"level":"WARN"`},
		},
		{
			name:      "local webhooks switched off: the refused target is named at start",
			env:       map[string]string{"PAYSVC_SEED_FILE": exampleSeed, "PAYSVC_WEBHOOK_ALLOW_LOCAL": "false"},
			banner:    []string{"m_acme/sub_acme -> http://127.0.0.1:4000/webhooks  REFUSED", "PAYSVC_WEBHOOK_ALLOW_LOCAL"},
			notBanner: []string{"delivered to this machine"},
			logs: []string{`"msg":"webhook target refused by this server: its deliveries fail"`, `"subscriptionId":"sub_acme"`,
				"PAYSVC_WEBHOOK_ALLOW_LOCAL"},
		},
		{
			name:      "demo tenant on a first start",
			env:       map[string]string{},
			banner:    []string{"Demo tenant", "merchant m_demo", "site site_demo", "API key yp_test_"},
			notBanner: []string{"Webhook subscriptions"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, tc.env)
			banner, logs := s.banner.String(), s.logs.String()
			for _, want := range tc.banner {
				if !strings.Contains(banner, want) {
					t.Errorf("banner lacks %q:\n%s", want, banner)
				}
			}
			for _, not := range tc.notBanner {
				if strings.Contains(banner, not) {
					t.Errorf("banner has %q:\n%s", not, banner)
				}
			}
			for _, want := range tc.logs {
				if !strings.Contains(logs, want) {
					t.Errorf("logs lack %q:\n%s", want, logs)
				}
			}
			for _, not := range tc.noLogs {
				if strings.Contains(logs, not) {
					t.Errorf("logs contain %q", not)
				}
			}
		})
	}
}

// TestPayASessionByHandOnTheServicePort runs README's by-hand flow as
// pasted: create a session on the service, pay it through /_sim on the
// same port without any simulator key, read the payment's state.
func TestPayASessionByHandOnTheServicePort(t *testing.T) {
	s := start(t, map[string]string{"PAYSVC_SEED_FILE": exampleSeed})
	auth := map[string]string{"Authorization": "Bearer " + exampleKey, "Content-Type": "application/json", "Idempotency-Key": "order-hand-1"}
	status, sess := s.do(t, "POST", "/v1/ecom/site_acme_web/sessions", auth,
		`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/return","reference":"order-hand-1"}`)
	id, _ := sess["id"].(string)
	if status != 200 || id == "" {
		t.Fatalf("session: %d %v", status, sess)
	}
	status, paid := s.do(t, "POST", SimHooksPrefix+"sessions/"+id+"/pay", map[string]string{"Content-Type": "application/json"}, `{"cardNumber":"4111111111111111"}`)
	psp, _ := paid["pspReference"].(string)
	if status != 200 || paid["resultCode"] != "Authorised" || psp == "" {
		t.Fatalf("pay: %d %v", status, paid)
	}
	if status, state := s.do(t, "GET", SimHooksPrefix+"payments/"+psp, nil, ""); status != 200 {
		t.Errorf("payment state: %d %v", status, state)
	}
	// A key the caller gives is passed on as it is.
	if status, _ := s.do(t, "GET", SimHooksPrefix+"payments/"+psp, map[string]string{"X-API-Key": "wrong"}, ""); status != 401 {
		t.Errorf("wrong simulator key: %d, want 401", status)
	}
	// The API's own answers are unchanged beside the hooks.
	if status, body := s.do(t, "GET", "/v1/ecom/nope", map[string]string{"Authorization": "Bearer " + exampleKey}, ""); status != 404 || body["errorCode"] != "yp_9004" {
		t.Errorf("unknown path: %d %v", status, body)
	}
}
