package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yp/paysvc/shared/money"
)

const testAPIKey = "AQE-secret-api-key-do-not-leak"

// recorded is one request seen by the test server.
type recorded struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// fakeUpstream answers every request with status and body and records it.
type fakeUpstream struct {
	mu       sync.Mutex
	requests []recorded
	status   int
	body     string
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b})
	status, body := f.status, f.body
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fakeUpstream) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeUpstream) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		t.Fatal("no request reached the server")
	}
	return f.requests[len(f.requests)-1]
}

func newTestClient(t *testing.T, status int, body string) (*Client, *fakeUpstream) {
	t.Helper()
	f := &fakeUpstream{status: status, body: body}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return New(Config{BaseURL: srv.URL + "/v71/", APIKey: testAPIKey}), f
}

func TestHeadersAndPaths(t *testing.T) {
	ctx := context.Background()
	amount := money.Amount{Value: 1000, Currency: "EUR"}
	tests := []struct {
		name       string
		status     int
		body       string
		call       func(c *Client) error
		wantMethod string
		wantPath   string
		wantQuery  string
		wantKey    string
		wantBody   bool
	}{
		{"sessions", 201, `{"id":"CS1","sessionData":"Ab02","amount":{"value":1000,"currency":"EUR"},"expiresAt":"2030-01-01T10:00:00+01:00"}`,
			func(c *Client) error {
				r, err := c.CreateSession(ctx, SessionRequest{MerchantAccount: "M", Amount: amount, Reference: "r", ReturnURL: "https://x"}, "key-1")
				if err == nil && (r.ID != "CS1" || r.SessionData != "Ab02" || r.ExpiresAt.IsZero() || len(r.Raw) == 0) {
					t.Errorf("session response = %+v", r)
				}
				return err
			}, "POST", "/v71/sessions", "", "key-1", true},
		{"paymentMethods", 200, `{"paymentMethods":[{"type":"scheme","brands":["visa"]}]}`,
			func(c *Client) error {
				r, err := c.PaymentMethods(ctx, PaymentMethodsRequest{MerchantAccount: "M"}, "")
				if err == nil && (len(r.PaymentMethods) != 1 || string(r.PaymentMethods[0]) != `{"type":"scheme","brands":["visa"]}`) {
					t.Errorf("payment methods = %s", r.PaymentMethods)
				}
				return err
			}, "POST", "/v71/paymentMethods", "", "", true},
		{"payments", 200, `{"resultCode":"Authorised","pspReference":"PSP1","merchantReference":"r","paymentMethod":{"type":"scheme","brand":"visa"},"additionalData":{"a":"b"}}`,
			func(c *Client) error {
				r, err := c.Payments(ctx, PaymentRequest{MerchantAccount: "M", Amount: amount, Reference: "r", ReturnURL: "https://x", PaymentMethod: json.RawMessage(`{"type":"scheme"}`)}, "key-2")
				if err == nil && (r.ResultCode != ResultAuthorised || r.PSPReference != "PSP1" || r.PaymentMethod.Brand != "visa" || r.AdditionalData["a"] != "b") {
					t.Errorf("payment response = %+v", r)
				}
				return err
			}, "POST", "/v71/payments", "", "key-2", true},
		{"details", 200, `{"resultCode":"Refused","pspReference":"PSP1","refusalReason":"Refused","refusalReasonCode":"2"}`,
			func(c *Client) error {
				r, err := c.PaymentDetails(ctx, DetailsRequest{Details: json.RawMessage(`{"redirectResult":"x"}`)}, "key-3")
				if err == nil && (r.ResultCode != ResultRefused || r.RefusalReasonCode != "2") {
					t.Errorf("details response = %+v", r)
				}
				return err
			}, "POST", "/v71/payments/details", "", "key-3", true},
		{"captures", 201, `{"pspReference":"MOD1","paymentPspReference":"PSP/1","status":"received","amount":{"value":500,"currency":"EUR"}}`,
			func(c *Client) error {
				r, err := c.Capture(ctx, "PSP/1", CaptureRequest{MerchantAccount: "M", Amount: amount}, "key-4")
				if err == nil && (r.Status != StatusReceived || r.PSPReference != "MOD1" || r.Amount.Value != 500) {
					t.Errorf("capture response = %+v", r)
				}
				return err
			}, "POST", "/v71/payments/PSP/1/captures", "", "key-4", true},
		{"reversals", 201, `{"pspReference":"MOD2","paymentPspReference":"PSP1","status":"received"}`,
			func(c *Client) error {
				_, err := c.Reverse(ctx, "PSP1", ReversalRequest{MerchantAccount: "M"}, "key-5")
				return err
			}, "POST", "/v71/payments/PSP1/reversals", "", "key-5", true},
		{"amountUpdates", 201, `{"pspReference":"MOD3","paymentPspReference":"PSP1","status":"received"}`,
			func(c *Client) error {
				_, err := c.UpdateAmount(ctx, "PSP1", AmountUpdateRequest{MerchantAccount: "M", Amount: amount, IndustryUsage: "noShow"}, "key-6")
				return err
			}, "POST", "/v71/payments/PSP1/amountUpdates", "", "key-6", true},
		{"delete stored", 204, ``,
			func(c *Client) error {
				return c.DeleteStoredPaymentMethod(ctx, DeleteStoredPaymentMethodRequest{StoredPaymentMethodID: "T1", MerchantAccount: "M&1", ShopperReference: "shopper 1"})
			}, "DELETE", "/v71/storedPaymentMethods/T1", "merchantAccount=M%261&shopperReference=shopper+1", "", false},
		{"delete stored 200", 200, `{}`,
			func(c *Client) error {
				return c.DeleteStoredPaymentMethod(ctx, DeleteStoredPaymentMethodRequest{StoredPaymentMethodID: "T1", MerchantAccount: "M", ShopperReference: "s1"})
			}, "DELETE", "/v71/storedPaymentMethods/T1", "merchantAccount=M&shopperReference=s1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newTestClient(t, tt.status, tt.body)
			if err := tt.call(c); err != nil {
				t.Fatalf("call: %v", err)
			}
			r := f.last(t)
			if r.method != tt.wantMethod || r.path != tt.wantPath || r.query != tt.wantQuery {
				t.Errorf("request = %s %s?%s, want %s %s?%s", r.method, r.path, r.query, tt.wantMethod, tt.wantPath, tt.wantQuery)
			}
			if got := r.header.Get("X-API-Key"); got != testAPIKey {
				t.Errorf("X-API-Key = %q", got)
			}
			if got, ok := r.header["Idempotency-Key"]; tt.wantKey == "" && ok || tt.wantKey != "" && (len(got) != 1 || got[0] != tt.wantKey) {
				t.Errorf("Idempotency-Key = %q, want %q", got, tt.wantKey)
			}
			if ct := r.header.Get("Content-Type"); tt.wantBody && ct != "application/json" || !tt.wantBody && ct != "" {
				t.Errorf("Content-Type = %q", ct)
			}
			if tt.wantBody && !json.Valid(r.body) || !tt.wantBody && len(r.body) != 0 {
				t.Errorf("body = %q", r.body)
			}
		})
	}
}

func TestRequestJSONNames(t *testing.T) {
	c, f := newTestClient(t, 201, `{"id":"CS1","sessionData":"x","expiresAt":"2030-01-01T10:00:00Z"}`)
	store := true
	_, err := c.CreateSession(context.Background(), SessionRequest{
		MerchantAccount: "M", Amount: money.Amount{Value: 0, Currency: "EUR"}, Reference: "r", ReturnURL: "https://x",
		CountryCode: "NL", ShopperInteraction: ShopperInteractionEcommerce, BlockedPaymentMethods: []string{"bacs"},
		Splits:   []Split{{Account: "BA1", Amount: &SplitAmount{Value: 0}, Type: SplitBalanceAccount, Reference: "s1"}},
		Metadata: map[string]string{"siteId": "s"}, ShopperReference: "shopper-1", StorePaymentMethod: &store,
		StorePaymentMethodMode: "enabled", RecurringProcessingModel: "UnscheduledCardOnFile", Mode: "embedded",
		ShopperName: &Name{FirstName: "A"}, LineItems: []LineItem{{Quantity: 1, Description: "d"}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(f.last(t).body, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"merchantAccount", "amount", "reference", "returnUrl", "countryCode", "shopperInteraction",
		"blockedPaymentMethods", "splits", "metadata", "shopperReference", "storePaymentMethod", "storePaymentMethodMode",
		"recurringProcessingModel", "mode", "shopperName", "lineItems"} {
		if _, ok := m[k]; !ok {
			t.Errorf("session request lacks %q: %s", k, f.last(t).body)
		}
	}
	for _, k := range []string{"shopperEmail", "telephoneNumber", "channel", "expiresAt", "allowedPaymentMethods"} {
		if _, ok := m[k]; ok {
			t.Errorf("empty %q not omitted", k)
		}
	}
	split := m["splits"].([]any)[0].(map[string]any)
	if split["account"] != "BA1" || split["type"] != "BalanceAccount" || split["amount"].(map[string]any)["value"] != 0.0 {
		t.Errorf("split = %v", split)
	}
	if _, ok := split["amount"].(map[string]any)["currency"]; ok {
		t.Errorf("empty split currency not omitted: %v", split)
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		unavailable bool
		inFlight    bool
		code        string
		message     string
	}{
		{"422 validation", 422, `{"status":422,"errorCode":"101","message":"Invalid card number","errorType":"validation","pspReference":"P1"}`, false, false, "101", "Invalid card number"},
		{"400", 400, `{"status":400,"errorCode":"702","message":"Unexpected input","errorType":"validation"}`, false, false, "702", "Unexpected input"},
		{"401", 401, `{"status":401,"errorCode":"000","message":"HTTP Status Response - Unauthorized","errorType":"security"}`, false, false, "000", "HTTP Status Response - Unauthorized"},
		{"403 no body", 403, ``, false, false, "", "Forbidden"},
		{"409 704", 409, `{"status":409,"errorCode":"704","message":"request already processed or in progress","errorType":"validation"}`, false, true, "704", "request already processed or in progress"},
		{"409 other", 409, `{"status":409,"errorCode":"123","message":"conflict","errorType":"validation"}`, false, false, "123", "conflict"},
		{"429", 429, `{"status":429,"errorCode":"000","message":"Too many requests","errorType":"throttling"}`, true, false, "000", "Too many requests"},
		{"500 json", 500, `{"status":500,"errorCode":"905","message":"Payment details are not supported","errorType":"configuration"}`, true, false, "905", "Payment details are not supported"},
		{"502 html", 502, "<html>\nBad gateway</html>", true, false, "", "<html> Bad gateway</html>"},
		{"503 empty", 503, ``, true, false, "", "Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newTestClient(t, tt.status, tt.body)
			_, err := c.Payments(context.Background(), PaymentRequest{MerchantAccount: "M"}, "k")
			if err == nil {
				t.Fatal("no error")
			}
			e, ok := AsError(err)
			if !ok {
				t.Fatalf("not an *Error: %T %v", err, err)
			}
			if e.HTTPStatus != tt.status || e.ErrorCode != tt.code || e.Message != tt.message {
				t.Errorf("Error = %+v", e)
			}
			if e.Temporary() != tt.unavailable || IsUnavailable(err) != tt.unavailable {
				t.Errorf("Temporary = %v, IsUnavailable = %v, want %v", e.Temporary(), IsUnavailable(err), tt.unavailable)
			}
			if IsInFlight(err) != tt.inFlight || errors.Is(err, ErrInFlight) != tt.inFlight {
				t.Errorf("IsInFlight = %v, want %v", IsInFlight(err), tt.inFlight)
			}
			if strings.Contains(err.Error(), testAPIKey) {
				t.Errorf("error leaks the API key: %v", err)
			}
			if f.count() != 1 {
				t.Errorf("requests = %d, want 1 (no retry)", f.count())
			}
		})
	}
}

func TestPSPReferenceInError(t *testing.T) {
	c, _ := newTestClient(t, 422, `{"status":422,"errorCode":"167","message":"Original pspReference required for this operation","errorType":"validation","pspReference":"X1"}`)
	_, err := c.Capture(context.Background(), "UNKNOWN", CaptureRequest{MerchantAccount: "M", Amount: money.Amount{Value: 1, Currency: "EUR"}}, "")
	e, ok := AsError(err)
	if !ok || e.PSPReference != "X1" || e.ErrorType != "validation" || !strings.Contains(err.Error(), "errorCode 167") {
		t.Fatalf("err = %v", err)
	}
}

func TestUndecodableSuccessIsUnavailable(t *testing.T) {
	c, _ := newTestClient(t, 200, `{"resultCode":`)
	_, err := c.Payments(context.Background(), PaymentRequest{}, "k")
	if !IsUnavailable(err) {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if _, ok := AsError(err); ok {
		t.Fatal("decode failure should not be an *Error")
	}
}

// pipeListener is a net.Listener whose connections are net.Pipes made by
// its dial: an HTTP server and client wholly in memory, so that they can
// run in a synctest bubble (on its fake clock).
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestTimeoutIsUnavailableAndNotRetried(t *testing.T) {
	// In a synctest bubble the timeout runs on the fake clock, which moves
	// only once the request has reached the server and everything waits.
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int32
		ln := newPipeListener()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			io.ReadAll(r.Body)   // the server notices a closed connection only once the body is read
			<-r.Context().Done() // hang until the client gives up
		})}
		go srv.Serve(ln)
		defer srv.Close()
		tr := &http.Transport{DialContext: ln.dial}
		defer tr.CloseIdleConnections()
		c := New(Config{BaseURL: "http://upstream.test", APIKey: testAPIKey, Timeout: 50 * time.Millisecond,
			HTTPClient: &http.Client{Transport: tr}})
		start := time.Now()
		_, err := c.Payments(context.Background(), PaymentRequest{MerchantAccount: "M"}, "k")
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrUnavailable wrapping DeadlineExceeded", err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Fatalf("took %v, want the timeout", d)
		}
		if n := hits.Load(); n != 1 {
			t.Fatalf("requests = %d, want 1", n)
		}
		if strings.Contains(err.Error(), testAPIKey) {
			t.Fatalf("error leaks the API key: %v", err)
		}
	})
}

func TestCallerCancellationIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		cancel() // the caller gives up once the request has arrived
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := New(Config{BaseURL: srv.URL, APIKey: testAPIKey})
	_, err := c.Payments(ctx, PaymentRequest{}, "")
	if !IsUnavailable(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestNoRetryAfter5xx(t *testing.T) {
	c, f := newTestClient(t, 500, `{"status":500,"errorCode":"000","message":"boom","errorType":"internal"}`)
	_, err := c.Capture(context.Background(), "P", CaptureRequest{}, "k")
	if !IsUnavailable(err) {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 1 {
		t.Fatalf("requests = %d, want 1", f.count())
	}
}

func TestNoRetryAfterConnectionDropAfterSend(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // request fully sent, no answer
		}
	}))
	defer srv.Close()
	c := New(Config{BaseURL: srv.URL, APIKey: testAPIKey}) // the timeout only bounds a failure
	_, err := c.Payments(context.Background(), PaymentRequest{}, "")
	if !IsUnavailable(err) {
		t.Fatalf("err = %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("requests = %d, want 1", n)
	}
}

// dialFailer fails the first n dials with a connection-refused error, then
// dials the real address.
func dialFailer(n int32, dials *atomic.Int32) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) <= n {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return d.DialContext(ctx, network, addr)
	}
}

func TestDialErrorRetriedOnce(t *testing.T) {
	c0, f := newTestClient(t, 200, `{"resultCode":"Authorised","pspReference":"P"}`)
	var dials atomic.Int32
	c := New(Config{BaseURL: c0.baseURL, APIKey: testAPIKey, HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dialFailer(1, &dials)}}})
	r, err := c.Payments(context.Background(), PaymentRequest{MerchantAccount: "M"}, "k")
	if err != nil || r.PSPReference != "P" {
		t.Fatalf("r = %+v, err = %v", r, err)
	}
	if dials.Load() != 2 || f.count() != 1 {
		t.Fatalf("dials = %d, requests = %d; want 2 and 1", dials.Load(), f.count())
	}
	if got := f.last(t).header.Get("Idempotency-Key"); got != "k" {
		t.Fatalf("retried request lost its Idempotency-Key: %q", got)
	}

	var dials2 atomic.Int32
	c2 := New(Config{BaseURL: c0.baseURL, APIKey: testAPIKey, HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dialFailer(5, &dials2)}}})
	_, err = c2.Payments(context.Background(), PaymentRequest{}, "k")
	if !IsUnavailable(err) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v", err)
	}
	if dials2.Load() != 2 {
		t.Fatalf("dials = %d, want 2 (one retry)", dials2.Load())
	}
}

func TestRealConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := New(Config{BaseURL: "http://" + addr, APIKey: testAPIKey, Timeout: 2 * time.Second})
	_, err = c.PaymentMethods(context.Background(), PaymentMethodsRequest{}, "")
	if !IsUnavailable(err) || strings.Contains(err.Error(), testAPIKey) {
		t.Fatalf("err = %v", err)
	}
}

func TestIdempotencyKeyChecks(t *testing.T) {
	c, f := newTestClient(t, 200, `{"resultCode":"Authorised"}`)
	for _, k := range []string{strings.Repeat("a", 65), "bad\nkey", "é"} {
		if _, err := c.Payments(context.Background(), PaymentRequest{}, k); err == nil || IsUnavailable(err) {
			t.Errorf("key %q: err = %v", k, err)
		}
	}
	if f.count() != 0 {
		t.Fatalf("requests = %d, want 0", f.count())
	}
	if _, err := c.Payments(context.Background(), PaymentRequest{}, strings.Repeat("a", 64)); err != nil {
		t.Fatalf("64-char key: %v", err)
	}
}

func TestArgumentChecks(t *testing.T) {
	c, f := newTestClient(t, 201, `{}`)
	ctx := context.Background()
	if _, err := c.Capture(ctx, "", CaptureRequest{}, ""); err == nil {
		t.Error("empty pspReference accepted")
	}
	if _, err := c.PaymentDetails(ctx, DetailsRequest{}, ""); err == nil {
		t.Error("empty details accepted")
	}
	if err := c.DeleteStoredPaymentMethod(ctx, DeleteStoredPaymentMethodRequest{StoredPaymentMethodID: "x"}); err == nil {
		t.Error("delete without merchantAccount accepted")
	}
	if _, err := New(Config{}).Payments(ctx, PaymentRequest{}, ""); err == nil {
		t.Error("empty base URL accepted")
	}
	if f.count() != 0 {
		t.Fatalf("requests = %d", f.count())
	}
	if s := c.String(); strings.Contains(s, testAPIKey) {
		t.Fatalf("String leaks the key: %s", s)
	}
}

func TestDefaultClientDoesNotFollowRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.invalid/", http.StatusFound)
	}))
	defer srv.Close()
	_, err := New(Config{BaseURL: srv.URL, APIKey: testAPIKey}).Payments(context.Background(), PaymentRequest{}, "")
	e, ok := AsError(err)
	if !ok || e.HTTPStatus != http.StatusFound || IsUnavailable(err) {
		t.Fatalf("err = %v", err)
	}
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The transport must not be able to replay a request body on its own.
func TestTransportCannotReplayBodies(t *testing.T) {
	var sawGetBody atomic.Bool
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sawGetBody.Store(r.GetBody != nil)
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{"resultCode":"Authorised"}`)), Header: http.Header{}}, nil
	})
	c := New(Config{BaseURL: "http://upstream.invalid/v71", APIKey: testAPIKey, HTTPClient: &http.Client{Transport: rt}})
	if _, err := c.Payments(context.Background(), PaymentRequest{}, "key"); err != nil {
		t.Fatal(err)
	}
	if sawGetBody.Load() {
		t.Fatal("request has GetBody: net/http could replay it after it was sent")
	}
}

// TestFixedPathURLsBuiltOnce: the paths without a variable part are built
// once, as the general path builds them; a query or another path is built
// per call.
func TestFixedPathURLsBuiltOnce(t *testing.T) {
	c := New(Config{BaseURL: "https://checkout.example/checkout/v71/", APIKey: testAPIKey})
	general := &Client{base: c.base, baseURL: c.baseURL}
	for _, p := range fixedPaths {
		a, err := c.target(p, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, _ := c.target(p, nil)
		want, _ := general.target(p, nil)
		if a != b || a.String() != want.String() || a.String() != "https://checkout.example/checkout/v71"+p {
			t.Errorf("%s: %s (shared %v), want %s", p, a, a == b, want)
		}
	}
	q, _ := c.target("/payments", url.Values{"a": []string{"1"}})
	if q.String() != "https://checkout.example/checkout/v71/payments?a=1" || q == c.fixed["/payments"] {
		t.Errorf("with a query: %s", q)
	}
}
