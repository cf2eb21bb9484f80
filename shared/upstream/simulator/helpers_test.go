package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
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

// env is a simulator behind an HTTP server with a client.
type env struct {
	sim    *Simulator
	srv    *httptest.Server
	client *upstream.Client
	rec    *recorder
	clock  *clock.Fake
}

func newEnv(t *testing.T, mutate ...func(*Options)) *env {
	t.Helper()
	rec := &recorder{}
	fc := clock.NewFake(testStart)
	seed := [32]byte{1, 2, 3}
	opts := Options{
		APIKey: testAPIKey, HMACKeyHex: testHMACKey, Notifier: rec, Clock: fc,
		Rand: rand.NewChaCha8(seed), HangTimeout: 5 * time.Second,
	}
	for _, m := range mutate {
		m(&opts)
	}
	sim, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		srv.Close()
		sim.Close()
	})
	c := upstream.New(upstream.Config{BaseURL: srv.URL + sim.BasePath(), APIKey: opts.APIKey, Timeout: 5 * time.Second})
	return &env{sim: sim, srv: srv, client: c, rec: rec, clock: fc}
}

// flush waits for queued notifications.
func (e *env) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.sim.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// raw sends a request and returns status, body and headers.
func (e *env) raw(t *testing.T, method, path, apiKey, idemKey, body string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if apiKey != "" {
		req.Header.Set("X-API-Key", apiKey)
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
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
	if err != nil {
		t.Fatal(err)
	}
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
