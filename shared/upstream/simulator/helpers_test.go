package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

const (
	testAPIKey   = "sim-test-api-key"
	testHMACKey  = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	testMerchant = "TestMerchantECOM"
	testReturn   = "https://shop.example/return?order=1"
)

var testStart = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// recorder is a Notifier that keeps every body it receives.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	fail   error
}

func (r *recorder) Notify(_ context.Context, body []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, bytes.Clone(body))
	return r.fail
}

// items decodes the received bodies (each must hold exactly one item).
func (r *recorder) items(t *testing.T) []upstream.NotificationRequestItem {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]upstream.NotificationRequestItem, 0, len(r.bodies))
	for _, b := range r.bodies {
		var n upstream.Notification
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatalf("notification body: %v: %s", err, b)
		}
		if n.Live != "false" || len(n.NotificationItems) != 1 {
			t.Fatalf("notification envelope = %s", b)
		}
		out = append(out, n.NotificationItems[0].Item)
	}
	return out
}

// signals counts named events reported by the simulator's test hooks, so
// a test waits for one instead of polling.
type signals struct {
	mu      sync.Mutex
	seen    map[string]int
	changed chan struct{} // closed (and replaced) at every event
}

func newSignals() *signals { return &signals{seen: map[string]int{}, changed: make(chan struct{})} }

func (s *signals) add(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[name]++
	close(s.changed)
	s.changed = make(chan struct{})
}

// count returns how often name happened and a channel closed at the next event.
func (s *signals) count(name string) (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[name], s.changed
}

// waitTimeout bounds every wait for a signal: it only turns a missing
// signal into a failure, no test passes by it.
const waitTimeout = 30 * time.Second

// wait waits until name happened n times in all.
func (s *signals) wait(t *testing.T, name string, n int) {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		got, changed := s.count(name)
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("%q happened %d times, want %d", name, got, n)
		}
	}
}

// env is a simulator behind an HTTP server with a client.
type env struct {
	sim    *Simulator
	srv    *httptest.Server
	client *upstream.Client
	rec    *recorder
	clock  *clock.Fake
	// held counts requests held by endpoint, settled the Idempotency-Keys
	// a request finished with, delivered the notification deliveries
	// counted in the stats (under "notification").
	held, settled, delivered *signals
}

func newEnv(t *testing.T, mutate ...func(*Options)) *env {
	t.Helper()
	rec := &recorder{}
	fc := clock.NewFake(testStart)
	seed := [32]byte{1, 2, 3}
	held, settled, delivered := newSignals(), newSignals(), newSignals()
	opts := Options{
		APIKey: testAPIKey, HMACKeyHex: testHMACKey, Notifier: rec, Clock: fc,
		Rand: rand.NewChaCha8(seed),
		// The tests' requests state no capture mode: the account holds
		// them for capture (TestCaptureDecidedByTheRequest covers the rest).
		ManualCaptureAccounts: []string{testMerchant},
		// Captures continue to the authorised amount
		// (TestPartialCaptureReleasesTheRest: an account without).
		MultiplePartialCaptureAccounts: []string{testMerchant},
		// A held request ends when its client gives up, never by the clock.
		HangTimeout: time.Hour,
		hooks: testHooks{
			holding:    held.add,
			keySettled: settled.add,
			delivered:  func() { delivered.add("notification") },
		},
	}
	for _, m := range mutate {
		m(&opts)
	}
	sim, err := New(opts)
	must(t, err)
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		srv.Close()
		sim.Close()
	})
	c := upstream.New(upstream.Config{BaseURL: srv.URL + sim.BasePath(), APIKey: opts.APIKey, Timeout: waitTimeout})
	return &env{sim: sim, srv: srv, client: c, rec: rec, clock: fc, held: held, settled: settled, delivered: delivered}
}

// abandonHeld runs call (a request to endpoint that the simulator holds:
// the hang behaviour, an injected timeout) with a context that is
// cancelled once the simulator holds the request and whileHeld (when not
// nil) returned: the client gives up then, whatever the machine's speed.
// It returns call's error.
func (e *env) abandonHeld(t *testing.T, endpoint string, call func(ctx context.Context) error, whileHeld func()) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before, _ := e.held.count(endpoint)
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		n, changed := e.held.count(endpoint)
		if n > before {
			break
		}
		select {
		case <-changed:
		case err := <-done:
			t.Fatalf("the request to %s was answered (err %v) instead of held", endpoint, err)
		case <-timeout.C:
			t.Fatalf("the request to %s was not held", endpoint)
		}
	}
	if whileHeld != nil {
		whileHeld()
	}
	cancel()
	select {
	case err := <-done:
		return err
	case <-timeout.C:
		t.Fatalf("the request to %s did not end when its client gave up", endpoint)
		return nil
	}
}

// payHeld runs pay; with held (the hang behaviour) its client gives up
// once the simulator holds the request.
func (e *env) payHeld(t *testing.T, held bool, pay func(context.Context) (upstream.PaymentResponse, error)) (upstream.PaymentResponse, error) {
	t.Helper()
	if !held {
		return pay(context.Background())
	}
	var r upstream.PaymentResponse
	err := e.abandonHeld(t, "payments", func(ctx context.Context) (err error) { r, err = pay(ctx); return err }, nil)
	return r, err
}

// flush waits for queued notifications.
func (e *env) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := e.sim.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// raw sends a request and returns status, body and headers.
func (e *env) raw(t *testing.T, method, path, apiKey, idemKey, body string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewBufferString(body))
	must(t, err)
	if apiKey != "" {
		req.Header.Set("X-API-Key", apiKey)
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// capture, refund, reverse and cancel send a modification of psp (of v
// EUR cents) for testMerchant and return its error.
func (e *env) capture(psp string, v int64, li ...upstream.LineItem) error {
	_, err := e.client.Capture(context.Background(), psp, upstream.CaptureRequest{MerchantAccount: testMerchant, Amount: eur(v), LineItems: li}, "")
	return err
}

func (e *env) refund(psp string, v int64, li ...upstream.LineItem) error {
	_, err := e.client.Refund(context.Background(), psp, upstream.RefundRequest{MerchantAccount: testMerchant, Amount: eur(v), LineItems: li}, "")
	return err
}

func (e *env) reverse(psp string) error {
	_, err := e.client.Reverse(context.Background(), psp, upstream.ReversalRequest{MerchantAccount: testMerchant}, "")
	return err
}

func (e *env) cancel(psp string) error {
	_, err := e.client.Cancel(context.Background(), psp, upstream.CancelRequest{MerchantAccount: testMerchant}, "")
	return err
}

// wantPayments fails the test unless the simulator created n payments
// (why, when given, says when).
func (e *env) wantPayments(t *testing.T, n int, why ...string) {
	t.Helper()
	if got := e.sim.PaymentCount(); got != n {
		t.Fatalf("PaymentCount = %d, want %d %s", got, n, strings.Join(why, ""))
	}
}

// must fails the test at once on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func eur(v int64) money.Amount { return money.Amount{Value: v, Currency: "EUR"} }

// cardMethod returns a scheme paymentMethod with test_ encrypted values.
func cardMethod(number, cvc, holder string) json.RawMessage {
	m := map[string]string{
		"type": "scheme", "encryptedCardNumber": "test_" + number,
		"encryptedExpiryMonth": "test_03", "encryptedExpiryYear": "test_2030",
	}
	if cvc != "" {
		m["encryptedSecurityCode"] = "test_" + cvc
	}
	if holder != "" {
		m["holderName"] = holder
	}
	b, _ := json.Marshal(m)
	return b
}

func paymentReq(amount int64, pm json.RawMessage) upstream.PaymentRequest {
	return upstream.PaymentRequest{
		MerchantAccount: testMerchant, Amount: eur(amount), Reference: "order-1", ReturnURL: testReturn,
		PaymentMethod: pm, Metadata: map[string]string{"siteId": "site-1", "merchantId": "m-1"},
	}
}

// pay authorises a card payment and returns its response.
func (e *env) pay(t *testing.T, amount int64, holder string) upstream.PaymentResponse {
	t.Helper()
	r, err := e.client.Payments(context.Background(), paymentReq(amount, cardMethod("4111111111111111", "737", holder)), "")
	must(t, err)
	return r
}

func apiErr(t *testing.T, err error) *upstream.Error {
	t.Helper()
	ue, ok := upstream.AsError(err)
	if !ok {
		t.Fatalf("err = %v (%T), want *upstream.Error", err, err)
	}
	return ue
}

func eventCodes(items []upstream.NotificationRequestItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.EventCode
	}
	return out
}
