package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/testenv"
)

// The idempotency suite (issue 7) runs on both store adapters.
func TestIdempotencyEmbedded(t *testing.T) { idempotencySuite(t, false) }
func TestIdempotencyDynamo(t *testing.T)   { idempotencySuite(t, true) }

const payPath = "/v1/ecom/" + testenv.SiteA + "/payments"

// cardBody is a card payment request of value (EUR cents) with reference ref.
func cardBody(value int, ref, returnURL string) string {
	return fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"},"reference":%q,"returnUrl":%q,"paymentMethod":%s}`, value, ref, returnURL, e2eCard)
}

func cardPayment(value int) string { return cardBody(value, "order-1", "https://shop.example/r") }

// idempotencyCases are the suite's cases, each run on both stores.
var idempotencyCases = []struct {
	name string
	run  func(t *testing.T, dyn bool)
}{
	{"concurrent identical requests charge once", concurrentIdenticalRequests},
	{"same key different request is 422", sameKeyDifferentRequest},
	{"upstream 500 then retry succeeds once", upstream500ThenRetry},
	{"crash after the upstream call, before storing the result", crashBeforeStoringResult},
	{"the upstream's own 400 is stored and replayed", upstream400Replayed},
	{"merchants have separate key spaces", separateKeySpaces},
	{"a key reused after the service forgot it", keyReusedAfterExpiry},
}

func idempotencySuite(t *testing.T, dyn bool) {
	for _, tc := range idempotencyCases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, dyn) })
	}
}

// concurrentIdenticalRequests: 50 concurrent requests with one key make one upstream payment; the others get 409 yp_2004 and a later retry replays.
func concurrentIdenticalRequests(t *testing.T, dyn bool) {
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
	srv := httptest.NewServer(e.Handler)
	defer srv.Close()
	const n = 50
	type result struct {
		status int
		body   string
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", srv.URL+payPath, strings.NewReader(cardPayment(1000)))
			req.Header.Set("Authorization", "Bearer "+e.Keys["A"])
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "concurrent-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			results[i] = result{resp.StatusCode, string(b)}
		}(i)
	}
	close(start)
	wg.Wait()
	var okBody string
	oks := 0
	for _, r := range results {
		switch r.status {
		case 200:
			if okBody != "" && r.body != okBody {
				t.Fatalf("two different 200 bodies:\n%s\n%s", okBody, r.body)
			}
			okBody = r.body
			oks++
		case 409:
			if !strings.Contains(r.body, `"errorCode":"yp_2004"`) {
				t.Fatalf("409 body %s", r.body)
			}
		default:
			t.Fatalf("unexpected %d %s", r.status, r.body)
		}
	}
	if oks == 0 {
		t.Fatal("no request succeeded")
	}
	if got := e.Sim.PaymentCount(); got != 1 {
		t.Fatalf("%d upstream payments, want exactly 1", got)
	}
	later := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "concurrent-1")
	if later.Status != 200 || string(later.Body) != okBody || later.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("later retry: %d %s", later.Status, later.Body)
	}
}

// sameKeyDifferentRequest: the key reused with another body, path or site is 422 yp_2003 and never reaches the upstream.
func sameKeyDifferentRequest(t *testing.T, dyn bool) {
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
	if r := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "k"); r.Status != 200 {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", payPath, cardPayment(1001)},
		{"POST", "/v1/ecom/" + testenv.SiteA + "/sessions", `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`},
		{"POST", "/v1/ecom/" + testenv.SiteAAdvanced + "/payments", cardPayment(1000)},
	} {
		r := e.Do(tc.method, tc.path, "A", tc.body, "Idempotency-Key", "k")
		if r.Status != 422 || !strings.Contains(string(r.Body), "yp_2003") {
			t.Fatalf("%s: %d %s", tc.path, r.Status, r.Body)
		}
	}
	if e.Sim.PaymentCount() != 1 {
		t.Fatal("a mismatched request reached the upstream")
	}
}

// upstream500ThenRetry: a 500 from the upstream (it did nothing, or acted and the answer was lost) releases the key; the retry succeeds once with the same derived upstream key.
func upstream500ThenRetry(t *testing.T, dyn bool) {
	for _, forward := range []bool{false, true} { // the upstream did nothing / acted but the answer was lost
		e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
		var calls atomic.Int32
		e.Upstream.Inject(func(path string) testenv.Fault {
			if strings.HasSuffix(path, "/payments") && calls.Add(1) == 1 {
				return testenv.Fault{Status: 500, Forward: forward}
			}
			return testenv.Fault{}
		})
		first := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "retry-500")
		if first.Status != 500 || !strings.Contains(string(first.Body), "yp_4006") {
			t.Fatalf("first: %d %s", first.Status, first.Body)
		}
		second := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "retry-500")
		if second.Status != 200 || second.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry: %d %s", second.Status, second.Body)
		}
		if got := e.Sim.PaymentCount(); got != 1 {
			t.Fatalf("forward=%v: %d payments", forward, got)
		}
		keys := e.Upstream.Requests("/payments")
		if len(keys) != 2 || keys[0].Header.Get("Idempotency-Key") != keys[1].Header.Get("Idempotency-Key") {
			t.Fatal("the retry did not reuse the derived upstream key")
		}
	}
}

// crashBeforeStoringResult: the result could not be stored after the upstream call: the lease holds the key, then a retry re-runs against the upstream's idempotency and is stored.
func crashBeforeStoringResult(t *testing.T, dyn bool) {
	var failComplete atomic.Bool
	failComplete.Store(true)
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn, WrapIdem: func(s idempotency.Store) idempotency.Store {
		return &flakyIdem{Store: s, fail: &failComplete}
	}})
	first := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "crash-1")
	if first.Status != 200 {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	var firstOut map[string]any
	_ = json.Unmarshal(first.Body, &firstOut)
	failComplete.Store(false)
	// The lease still holds the key: a retry within it is told to wait.
	if r := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "crash-1"); r.Status != 409 {
		t.Fatalf("within the lease: %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(idempotency.DefaultLease + time.Second)
	retry := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "crash-1")
	var retryOut map[string]any
	_ = json.Unmarshal(retry.Body, &retryOut)
	if retry.Status != 200 || retryOut["pspReference"] != firstOut["pspReference"] {
		t.Fatalf("retry after the lease: %d %s (first %s)", retry.Status, retry.Body, first.Body)
	}
	if got := e.Sim.PaymentCount(); got != 1 {
		t.Fatalf("%d payments", got)
	}
	// Now stored: the next retry replays.
	if r := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "crash-1"); r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, retry.Body) {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
}

// upstream400Replayed: the upstream's own 400 is stored and replayed without a second upstream call.
func upstream400Replayed(t *testing.T, dyn bool) {
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
	unknownToken := `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","paymentMethod":{"type":"scheme","storedPaymentMethodId":"NOPE"},` +
		`"shopperInteraction":"ContAuth","shopperReference":"guest-123","recurringProcessingModel":"UnscheduledCardOnFile","industryUsage":"noShow"}`
	first := e.Do("POST", payPath, "A", unknownToken, "Idempotency-Key", "upstream-400")
	if first.Status != 400 {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	again := e.Do("POST", payPath, "A", unknownToken, "Idempotency-Key", "upstream-400")
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("upstream 400 not replayed: %d %s", again.Status, again.Body)
	}
	if n := len(e.Upstream.Requests("/payments")); n != 1 {
		t.Fatalf("upstream called %d times", n)
	}
}

// separateKeySpaces: two merchants using the same key do not see each other's results.
func separateKeySpaces(t *testing.T, dyn bool) {
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn})
	a := e.Do("POST", payPath, "A", cardPayment(1000), "Idempotency-Key", "shared-key")
	b := e.Do("POST", "/v1/ecom/"+testenv.SiteB+"/payments", "B", cardPayment(1000), "Idempotency-Key", "shared-key")
	if a.Status != 200 || b.Status != 200 || b.Header.Get("Idempotent-Replayed") != "" || e.Sim.PaymentCount() != 2 {
		t.Fatalf("A %d, B %d %s, payments %d", a.Status, b.Status, b.Body, e.Sim.PaymentCount())
	}
}

// flakyIdem fails Complete while fail is set, as if the process died after
// the upstream answered and before the result was stored.
type flakyIdem struct {
	idempotency.Store
	fail *atomic.Bool
}

func (f *flakyIdem) Complete(ctx context.Context, scope, key, token string, resp idempotency.Response, exp time.Time) error {
	if f.fail.Load() {
		return errors.New("injected: store unavailable")
	}
	return f.Store.Complete(ctx, scope, key, token, resp, exp)
}

// keyReusedAfterExpiry: the service has forgotten a key the upstream still
// remembers (the service here keeps keys 7 days; the upstream, 31). The
// key reused for another request reaches the upstream as another derived
// key: a new payment, never the first one's answer replayed. Reused for
// the same request, the upstream replays the first answer and the service
// records no new operation.
func keyReusedAfterExpiry(t *testing.T, dyn bool) {
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn, IdemRetention: 7 * 24 * time.Hour})
	pay := func(key string, value int) (string, testenv.Response) {
		t.Helper()
		r := e.Do("POST", payPath, "A", cardPayment(value), "Idempotency-Key", key)
		if r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%s: %d %s", key, r.Status, r.Body)
		}
		return r.JSON(t)["pspReference"].(string), r
	}
	same, _ := pay("reused-same", 1000)
	other, _ := pay("reused-other", 1000)
	e.Clock.Advance(8 * 24 * time.Hour)

	if again, _ := pay("reused-same", 1000); again != same {
		t.Fatalf("same request after expiry: payment %s, want the upstream's replay of %s", again, same)
	}
	if got := e.Sim.PaymentCount(); got != 2 {
		t.Fatalf("same request after expiry: %d payments upstream, want 2", got)
	}
	timeline := e.Do("GET", payPath+"/"+same+"/timeline", "A", "")
	if timeline.Status != 200 || strings.Count(string(timeline.Body), `"kind":"payment"`) != 1 {
		t.Fatalf("the replay recorded a second payment: %d %s", timeline.Status, timeline.Body)
	}

	if changed, _ := pay("reused-other", 2000); changed == other {
		t.Fatalf("another request after expiry got payment %s, the first request's", changed)
	}
	if got := e.Sim.PaymentCount(); got != 3 {
		t.Fatalf("another request after expiry: %d payments upstream, want 3", got)
	}
}
