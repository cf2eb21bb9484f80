package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// localServer is cmd/paysvc-local running as a process.
type localServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	stderr *output // the banner
	stdout *output // the JSON logs
	done   chan error
}

// serverWait bounds every wait on the local server process (its start,
// its stop, what it writes): a failure bound only, no test passes by it;
// generous, as make run compiles the service first on a loaded machine.
const serverWait = 3 * time.Minute

// output is what a process writes to a pipe, as it arrives.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed (and replaced) at every write
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

func (o *output) String() string { o.mu.Lock(); defer o.mu.Unlock(); return o.buf.String() }

// snapshot returns the text so far and a channel closed at the next write.
func (o *output) snapshot() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String(), o.changed
}

// waitOutput waits until what the server wrote to o satisfies ok (what
// says what is awaited) and returns it. It fails when the server exits
// first, or after serverWait.
func (s *localServer) waitOutput(o *output, what string, ok func(string) bool) string {
	s.t.Helper()
	bound := time.NewTimer(serverWait)
	defer bound.Stop()
	for {
		text, changed := o.snapshot()
		if ok(text) {
			return text
		}
		select {
		case <-changed:
		case err := <-s.done:
			s.done <- err // for stop
			// Wait returned: the pipes are copied to the end.
			if text := o.String(); ok(text) {
				return text
			}
			s.t.Fatalf("local server exited (%v) before %s\nstderr: %s\nstdout: %s", err, what, s.errText(), s.outText())
		case <-bound.C:
			s.t.Fatalf("no %s within %s\nstderr: %s\nstdout: %s", what, serverWait, s.errText(), s.outText())
		}
	}
}

var buildLocal = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "paysvc-local")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "paysvc-local")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/paysvc-local").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build: %v: %s", err, out)
	}
	return bin, nil
})

// freeAddr returns a loopback address free now, its port below the
// kernel's ephemeral range: no outgoing connection can take it between
// this probe and the server's bind (a CI run failed "bind: address
// already in use" on a port from the range, taken meanwhile by a client
// socket of a test running beside it).
func freeAddr(t *testing.T) string {
	t.Helper()
	low := 32768 // Linux's default start of ip_local_port_range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	base := max(low-12000, 1024)
	for range 200 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+mrand.IntN(low-base)))
		if err != nil {
			continue // taken
		}
		addr := l.Addr().String()
		_ = l.Close()
		return addr
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// hookedSeed writes the local server's example seed with its webhook
// subscription sent to hooksURL and returns the file's path.
func hookedSeed(t *testing.T, hooksURL string) string {
	t.Helper()
	seed := readFile(t, "../cmd/paysvc-local/seed.example.json")
	seedFile := filepath.Join(t.TempDir(), "seed.json")
	writeFile(t, seedFile, bytes.Replace(seed, []byte("http://127.0.0.1:4000/webhooks"), []byte(hooksURL), 1), 0o600)
	return seedFile
}

// startLocal starts the local server with env (KEY=VALUE) and waits until
// it serves.
func startLocal(t *testing.T, env ...string) *localServer {
	t.Helper()
	return startLocalAt(t, freeAddr(t), env...)
}

// startLocalAt is startLocal on addr (a restart on the same address).
// The server is ready when it logs "listening": it has listened, set up
// its store and queues, provisioned and printed its banner, and serves
// from then on.
func startLocalAt(t *testing.T, addr string, env ...string) *localServer {
	t.Helper()
	bin, err := buildLocal()
	if err != nil {
		t.Fatal(err)
	}
	s := &localServer{t: t, base: "http://" + addr, done: make(chan error, 1), stdout: newOutput(), stderr: newOutput()}
	s.cmd = exec.Command(bin)
	s.cmd.Env = append(os.Environ(), append([]string{"PAYSVC_ADDR=" + addr}, env...)...)
	s.cmd.Stdout = s.stdout
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { s.stop() })
	s.waitOutput(s.stdout, `the "listening" log line`, func(logs string) bool { return strings.Contains(logs, `"msg":"listening"`) })
	return s
}

func (s *localServer) errText() string { return s.stderr.String() }
func (s *localServer) outText() string { return s.stdout.String() }

// stop sends SIGTERM and waits for a clean exit.
func (s *localServer) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("local server exit: %v\nstderr: %s", err, s.errText())
		}
		s.done <- err
	case <-time.After(serverWait):
		_ = s.cmd.Process.Kill()
		s.t.Error("local server did not stop on SIGTERM")
	}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (s *localServer) call(method, path, key, body string, headers ...string) reply {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	checker := repoChecker(s.t)
	resp, err := (&http.Client{Transport: checker.Transport(s.t, nil)}).Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

const seedKey = "yp_test_acmeLocalDevelopmentKey000000000000000000"

func TestLocalServerSeededEndToEndSurvivesRestart(t *testing.T) {
	data := t.TempDir()
	env := []string{"PAYSVC_DATA_DIR=" + data, "PAYSVC_SEED_FILE=../cmd/paysvc-local/seed.example.json"}
	s := startLocal(t, env...)

	cfg := s.call("GET", "/v1/ecom/config", seedKey, "")
	if cfg.status != 200 || !strings.Contains(string(cfg.body), `"clientToken":"test_ACMECLIENTKEY00000000000000000"`) {
		t.Fatalf("config: %d %s", cfg.status, cfg.body)
	}
	if cfg.header.Get("Content-Type") != "application/json" {
		t.Fatalf("config Content-Type %q", cfg.header.Get("Content-Type"))
	}
	body := `{"amount":{"value":2500,"currency":"EUR"},"returnUrl":"https://acme.example/return","reference":"order-77"}`
	first := s.call("POST", "/v1/ecom/site_acme_web/sessions", seedKey, body, "Idempotency-Key", "order-77")
	if first.status != 200 {
		t.Fatalf("sessions: %d %s", first.status, first.body)
	}
	var sess map[string]any
	if err := json.Unmarshal(first.body, &sess); err != nil || sess["id"] == "" || sess["sessionData"] == "" {
		t.Fatalf("session body %s", first.body)
	}
	bad := s.call("POST", "/v1/ecom/site_acme_web/sessions", seedKey, `{"amount":{"value":2500,"currency":"EUR"},"returnUrl":"https://acme.example/return","lineItems":[{"quantity":1},{"quantity":1,"description":"`+strings.Repeat("d", 128)+`"}]}`)
	if bad.status != 400 || !strings.Contains(string(bad.body), `"field":"lineItems[1].description"`) {
		t.Fatalf("invalid session: %d %s", bad.status, bad.body)
	}
	s.stop()

	// Restart without the seed file: keys and idempotency records persist.
	s2 := startLocal(t, "PAYSVC_DATA_DIR="+data)
	again := s2.call("POST", "/v1/ecom/site_acme_web/sessions", seedKey, body, "Idempotency-Key", "order-77")
	if again.status != 200 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after restart: %d %s (replayed=%q)", again.status, again.body, again.header.Get("Idempotent-Replayed"))
	}
	if r := s2.call("GET", "/v1/ecom/config", seedKey, ""); r.status != 200 {
		t.Fatalf("config after restart: %d %s", r.status, r.body)
	}
	if r := s2.call("GET", "/v1/ecom/config", "yp_test_wrongwrongwrongwrongwrongwrongwrongwrong", ""); r.status != 401 {
		t.Fatalf("unknown key: %d", r.status)
	}
	s2.stop()
	logs := s.outText() + s2.outText()
	if strings.Contains(logs, seedKey) || strings.Contains(logs, "whsec_") {
		t.Fatal("logs contain a secret")
	}
}

func TestLocalServerDemoTenantOnFirstStart(t *testing.T) {
	data := t.TempDir()
	s := startLocal(t, "PAYSVC_DATA_DIR="+data)
	// The banner (printed before the server is ready, on another pipe
	// than the logs) shows the demo key.
	re := regexp.MustCompile(`yp_test_[0-9A-Za-z]{43}`)
	key := re.FindString(s.waitOutput(s.stderr, "demo key in the banner", re.MatchString))
	if r := s.call("GET", "/v1/ecom/config", key, ""); r.status != 200 {
		t.Fatalf("demo config: %d %s", r.status, r.body)
	}
	r := s.call("POST", "/v1/ecom/site_demo/sessions", key, `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/return"}`)
	if r.status != 200 {
		t.Fatalf("demo session: %d %s", r.status, r.body)
	}
	if strings.Contains(s.outText(), key) {
		t.Fatal("the demo key appears in the JSON logs")
	}
}

func TestLocalServerDeliversSignedWebhooks(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	type got struct {
		header http.Header
		body   []byte
	}
	deliveries := make(chan got, 10)
	checker := repoChecker(t)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if v := checker.CheckWebhook("paymentEvent", r.Header, b); len(v) > 0 {
			t.Errorf("webhook violates docs/openapi.yaml: %v", v)
		}
		deliveries <- got{r.Header.Clone(), b}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	s := startLocal(t, "PAYSVC_DATA_DIR="+t.TempDir(), "PAYSVC_SEED_FILE="+hookedSeed(t, receiver.URL+"/hooks"), "PAYSVC_WEBHOOK_ALLOW_LOCAL=true")
	pay := s.call("POST", "/v1/ecom/site_acme_web/payments", seedKey, cardBody(4200, "order-web-1", "https://acme.example/return"))
	if pay.status != 200 {
		t.Fatalf("payment: %d %s", pay.status, pay.body)
	}
	var out map[string]any
	_ = json.Unmarshal(pay.body, &out)
	select {
	case d := <-deliveries:
		if err := verify.Verify(secret, d.header, d.body, time.Now(), 5*time.Minute); err != nil {
			t.Fatalf("signature: %v", err)
		}
		var n struct {
			Live              bool `json:"live"`
			NotificationItems []struct {
				Item struct {
					EventCode      string            `json:"eventCode"`
					PSPReference   string            `json:"pspReference"`
					Success        string            `json:"success"`
					AdditionalData map[string]string `json:"additionalData"`
				} `json:"NotificationRequestItem"`
			} `json:"notificationItems"`
		}
		if err := json.Unmarshal(d.body, &n); err != nil || len(n.NotificationItems) != 1 {
			t.Fatalf("body %s", d.body)
		}
		it := n.NotificationItems[0].Item
		if it.EventCode != "AUTHORISATION" || it.PSPReference != out["pspReference"] || it.Success != "true" || n.Live {
			t.Fatalf("item %+v", it)
		}
		if it.AdditionalData["paymentSource"] != "advanced" || it.AdditionalData["hmacSignature"] != "" || it.AdditionalData["metadata.merchantId"] != "" {
			t.Fatalf("additionalData %v", it.AdditionalData)
		}
		if d.header.Get("X-Webhook-Delivery-Attempt") != "1" || d.header.Get("X-Webhook-Payload-Version") != "1" || d.header.Get("X-Webhook-Id") == "" {
			t.Fatalf("headers %v", d.header)
		}
	case <-time.After(serverWait):
		t.Fatalf("no webhook within %s\n%s", serverWait, s.outText())
	}
}

// The same binary runs on DynamoDB (and SQS) when pointed at moto.
func TestLocalServerOnDynamoDB(t *testing.T) {
	endpoint := moto.Endpoint(t)
	table := moto.TableName(t)
	t.Cleanup(func() { // the server made it; it has stopped by now
		_, _ = moto.DynamoClient(t, endpoint).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	s := startLocal(t, "PAYSVC_STORE=dynamo", "PAYSVC_TABLE="+table, "AWS_ENDPOINT_URL="+endpoint,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION="+moto.Region,
		"PAYSVC_SEED_FILE=../cmd/paysvc-local/seed.example.json", "PAYSVC_DATA_DIR="+t.TempDir())
	// The table and queues are created (and the seed provisioned) before
	// the server is ready.
	cfg := s.call("GET", "/v1/ecom/config", seedKey, "")
	if cfg.status != 200 {
		t.Fatalf("config on DynamoDB: %d %s\n%s", cfg.status, cfg.body, s.errText())
	}
	body := `{"amount":{"value":2500,"currency":"EUR"},"returnUrl":"https://acme.example/return"}`
	first := s.call("POST", "/v1/ecom/site_acme_web/sessions", seedKey, body, "Idempotency-Key", "dyn-1")
	again := s.call("POST", "/v1/ecom/site_acme_web/sessions", seedKey, body, "Idempotency-Key", "dyn-1")
	if first.status != 200 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("sessions on DynamoDB: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
}

// On a non-loopback address the server serves none of its local routes:
// the simulator's hooks are not there, under any Host (a rebound one
// through 127.0.0.1 here), so no request from the network (or from a web
// page) changes or reads the simulator's state.
func TestLocalServerNonLoopbackServesNoSimulatorHooks(t *testing.T) {
	s := startLocalAt(t, "0.0.0.0:0", "PAYSVC_DATA_DIR="+t.TempDir(), "PAYSVC_SEED_FILE=../cmd/paysvc-local/seed.example.json")
	m := regexp.MustCompile(`"msg":"listening","addr":"http://[^"]*:(\d+)"`).FindStringSubmatch(s.outText())
	if m == nil {
		t.Fatalf("no address in the listening line:\n%s", s.outText())
	}
	s.base = "http://127.0.0.1:" + m[1]
	for _, tc := range []struct{ method, path string }{
		{"POST", "/_sim/fail?endpoint=payments&failure=500"},
		{"GET", "/_sim/notifications"},
		{"POST", "/_sim/offers/expire"},
	} {
		for _, host := range []string{"attacker.example", ""} {
			req, _ := http.NewRequest(tc.method, s.base+tc.path, nil)
			if host != "" {
				req.Host = host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s (Host %q) on 0.0.0.0: %d %s, want 404", tc.method, tc.path, host, resp.StatusCode, b)
			}
		}
	}
	pay := s.call("POST", "/v1/ecom/site_acme_web/payments", seedKey, cardBody(4200, "order-net-1", "https://acme.example/return"))
	if pay.status != 200 || !strings.Contains(string(pay.body), `"resultCode":"Authorised"`) {
		t.Fatalf("the payment after the refused hooks: %d %s", pay.status, pay.body)
	}
}
