package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/yp/paysvc/shared/openapicheck"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// localServer is cmd/paysvc-local running as a process.
type localServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	mu     sync.Mutex
	stderr bytes.Buffer
	stdout bytes.Buffer
	done   chan error
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

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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

// startLocal starts the local server with env (KEY=VALUE) and waits until
// it accepts connections.
func startLocal(t *testing.T, env ...string) *localServer {
	t.Helper()
	return startLocalAt(t, freeAddr(t), env...)
}

// startLocalAt is startLocal on addr (a restart on the same address).
func startLocalAt(t *testing.T, addr string, env ...string) *localServer {
	t.Helper()
	bin, err := buildLocal()
	if err != nil {
		t.Fatal(err)
	}
	s := &localServer{t: t, base: "http://" + addr, done: make(chan error, 1)}
	s.cmd = exec.Command(bin)
	s.cmd.Env = append(os.Environ(), append([]string{"PAYSVC_ADDR=" + addr}, env...)...)
	s.cmd.Stdout = lockedWriter{&s.mu, &s.stdout}
	s.cmd.Stderr = lockedWriter{&s.mu, &s.stderr}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { s.stop() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case err := <-s.done:
			t.Fatalf("local server exited: %v\nstderr: %s\nstdout: %s", err, s.errText(), s.outText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("local server did not listen within 30 s\nstderr: %s", s.errText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *localServer) errText() string { s.mu.Lock(); defer s.mu.Unlock(); return s.stderr.String() }
func (s *localServer) outText() string { s.mu.Lock(); defer s.mu.Unlock(); return s.stdout.String() }

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
	case <-time.After(15 * time.Second):
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
	checker, err := openapicheck.Repository()
	if err != nil {
		s.t.Fatal(err)
	}
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
	var key string
	deadline := time.Now().Add(10 * time.Second)
	re := regexp.MustCompile(`yp_test_[0-9A-Za-z]{43}`)
	for key == "" && time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(s.errText()))
		for sc.Scan() {
			if m := re.FindString(sc.Text()); m != "" {
				key = m
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if key == "" {
		t.Fatalf("no demo key printed: %s", s.errText())
	}
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
	checker, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if v := checker.CheckWebhook("paymentEvent", r.Header, b); len(v) > 0 {
			t.Errorf("webhook violates docs/openapi.yaml: %v", v)
		}
		deliveries <- got{r.Header.Clone(), b}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	seed, err := os.ReadFile("../cmd/paysvc-local/seed.example.json")
	if err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(t.TempDir(), "seed.json")
	patched := strings.Replace(string(seed), "http://127.0.0.1:4000/webhooks", receiver.URL+"/hooks", 1)
	if err := os.WriteFile(seedFile, []byte(patched), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startLocal(t, "PAYSVC_DATA_DIR="+t.TempDir(), "PAYSVC_SEED_FILE="+seedFile, "PAYSVC_WEBHOOK_ALLOW_LOCAL=true")
	pay := s.call("POST", "/v1/ecom/site_acme_web/payments", seedKey, `{"amount":{"value":4200,"currency":"EUR"},"reference":"order-web-1",
		"returnUrl":"https://acme.example/return","paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111",
		"encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`)
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
	case <-time.After(20 * time.Second):
		t.Fatalf("no webhook within 20 s\n%s", s.outText())
	}
}

// The same binary runs on DynamoDB (and SQS) when pointed at moto.
func TestLocalServerOnDynamoDB(t *testing.T) {
	endpoint := moto.Endpoint(t)
	table := moto.TableName(t)
	s := startLocal(t, "PAYSVC_STORE=dynamo", "PAYSVC_TABLE="+table, "AWS_ENDPOINT_URL="+endpoint,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION="+moto.Region,
		"PAYSVC_SEED_FILE=../cmd/paysvc-local/seed.example.json", "PAYSVC_DATA_DIR="+t.TempDir())
	deadline := time.Now().Add(20 * time.Second)
	var cfg reply
	for { // the table and queues are created at start
		cfg = s.call("GET", "/v1/ecom/config", seedKey, "")
		if cfg.status == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
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
