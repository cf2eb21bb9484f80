package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/client"
	"github.com/yp/paysvc/shared/openapicheck"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// envClient is a client of an in-process service; testenv checks every
// exchange against docs/openapi.yaml.
func envClient(t *testing.T, e *testenv.Env, key string) *client.Client {
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	return client.New(srv.URL, e.Keys[key], client.WithRetries(0, 0, 0))
}

func card(number string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"scheme","encryptedCardNumber":"test_%s","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}`, number))
}

func TestClientEveryEndpoint(t *testing.T) {
	e := testenv.New(t)
	c := envClient(t, e, "A")
	ctx := context.Background()
	eur := func(v int64) client.Amount { return client.Amount{Value: v, Currency: "EUR"} }

	cfg, err := c.Config(ctx)
	if err != nil || cfg.ClientToken == "" || cfg.Environment != "test" {
		t.Fatalf("config %+v %v", cfg, err)
	}
	ses, err := c.CreateSession(ctx, testenv.SiteA, client.SessionParams{Amount: eur(1000), ReturnURL: "https://shop.example/r", Reference: "order-1"})
	if err != nil || ses.ID == "" || ses.SessionData == "" || ses.Reference != "order-1" {
		t.Fatalf("session %+v %v", ses, err)
	}
	pms, err := c.PaymentMethods(ctx, testenv.SiteA, client.PaymentMethodsParams{Amount: eur(1000), Channel: "Web"})
	if err != nil || len(pms.PaymentMethods) == 0 {
		t.Fatalf("payment methods %+v %v", pms, err)
	}
	// 3-D Secure: a challenge, its details, then Authorised.
	// A pre-authorisation, so that its amount can be updated.
	pay, err := c.CreatePayment(ctx, testenv.SiteA, client.PaymentParams{Amount: eur(1000), PaymentMethod: card("5454545454545454"), ReturnURL: "https://shop.example/r", Reference: "order-2",
		AdditionalData: map[string]string{"authorisationType": "PreAuth"}})
	if err != nil || pay.ResultCode != client.ChallengeShopper || len(pay.Action) == 0 || pay.MerchantReference != "order-2" {
		t.Fatalf("payment %+v %v", pay, err)
	}
	details, err := simulator.DetailsFor(pay.Action, true)
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.SubmitDetails(ctx, testenv.SiteA, client.DetailsParams{Details: details, Reference: pay.MerchantReference})
	if err != nil || done.ResultCode != client.Authorised || done.PSPReference == "" {
		t.Fatalf("details %+v %v", done, err)
	}
	psp := done.PSPReference
	upd, err := c.UpdateAmount(ctx, testenv.SiteA, psp, client.AmountUpdateParams{Amount: eur(800)})
	if err != nil || upd.Status != "received" || upd.PaymentPSPReference != psp {
		t.Fatalf("amount update %+v %v", upd, err)
	}
	capt, err := c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: eur(500), Reference: "cap-1"})
	if err != nil || capt.Status != "received" || capt.PaymentPSPReference != psp {
		t.Fatalf("capture %+v %v", capt, err)
	}
	rev, err := c.Reverse(ctx, testenv.SiteA, psp, client.ReversalParams{Reference: "rev-1"})
	if err != nil || rev.Status != "received" {
		t.Fatalf("reversal %+v %v", rev, err)
	}

	// Errors are typed: status, code, fields and the request id.
	_, err = c.Capture(ctx, testenv.SiteA, psp, client.CaptureParams{Amount: client.Amount{Value: 1, Currency: "eur"}})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "yp_2002" || apiErr.RequestID == "" ||
		!slices.ContainsFunc(apiErr.Fields, func(f client.FieldError) bool { return f.Field == "amount.currency" }) {
		t.Fatalf("invalid capture: %#v", err)
	}
	_, err = c.Capture(ctx, testenv.SiteA, "NOSUCHPSP", client.CaptureParams{Amount: eur(1)})
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != "yp_3006" {
		t.Fatalf("unknown payment: %v", err)
	}
	err = c.DeleteStoredPaymentMethod(ctx, testenv.SiteA, "NOSUCHTOKEN", "shopper-1")
	if !errors.As(err, &apiErr) || apiErr.Code != "yp_3006" {
		t.Fatalf("delete unknown token: %v", err)
	}
	if _, err := client.New(c2url(t, e), "yp_test_nope").Config(ctx); !errors.As(err, &apiErr) || apiErr.Status != 401 {
		t.Fatalf("bad key: %v", err)
	}
}

func c2url(t *testing.T, e *testenv.Env) string {
	srv := httptest.NewServer(e.Handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A caller's Idempotency-Key is sent as is: the second call is a replay.
func TestClientCallerIdempotencyKey(t *testing.T) {
	e := testenv.New(t)
	c := envClient(t, e, "A")
	ctx := context.Background()
	p := client.SessionParams{Amount: client.Amount{Value: 100, Currency: "EUR"}, ReturnURL: "https://shop.example/r"}
	a, err := c.CreateSession(ctx, testenv.SiteA, p, client.WithIdempotencyKey("order-77"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateSession(ctx, testenv.SiteA, p, client.WithIdempotencyKey("order-77"))
	if err != nil || a.ID != b.ID {
		t.Fatalf("replay %+v %+v %v", a, b, err)
	}
	if n := len(e.Upstream.Requests("/sessions")); n != 1 {
		t.Fatalf("%d upstream session calls", n)
	}
}

// scripted answers a fixed sequence and records the requests.
type scripted struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	keys    []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_%d", len(s.keys)))
	a(w)
}

func fail(status int, code string, hdr ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"errorCode":%q,"message":"m"}`, code)
	}
}

func captured(w http.ResponseWriter) {
	_, _ = w.Write([]byte(`{"pspReference":"CAP","status":"received","paymentPspReference":"PSP"}`))
}

func TestClientRetries(t *testing.T) {
	checker, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		answers   []func(http.ResponseWriter)
		wantCalls int
		wantErr   string // errorCode of the final error, "" = success
		wantWaits []time.Duration
	}{
		{"in flight then ok", []func(http.ResponseWriter){fail(409, "yp_2004"), captured}, 2, "", []time.Duration{100 * time.Millisecond}},
		{"payment busy then ok", []func(http.ResponseWriter){fail(409, "yp_2005"), captured}, 2, "", []time.Duration{100 * time.Millisecond}},
		{"rate limited waits Retry-After", []func(http.ResponseWriter){fail(429, "yp_9006", "Retry-After", "3"), captured}, 2, "", []time.Duration{3 * time.Second}},
		{"5xx backs off exponentially", []func(http.ResponseWriter){fail(500, "yp_9000"), fail(500, "yp_4003"), captured}, 3, "", []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"gives up after the retries", []func(http.ResponseWriter){fail(500, "yp_9000")}, 4, "yp_9000", []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"4xx is not retried", []func(http.ResponseWriter){fail(400, "yp_2002")}, 1, "yp_2002", nil},
		{"idempotency mismatch is not retried", []func(http.ResponseWriter){fail(422, "yp_2003")}, 1, "yp_2003", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{answers: tc.answers}
			srv := httptest.NewServer(s)
			defer srv.Close()
			var waits []time.Duration
			c := client.New(srv.URL, "yp_test_k",
				client.WithHTTPClient(&http.Client{Transport: checker.Transport(t, srv.Client().Transport)}),
				client.WithRetries(3, 100*time.Millisecond, time.Second),
				client.WithJitter(func(max time.Duration) time.Duration { return max }),
				client.WithSleep(func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }))
			m, err := c.Capture(context.Background(), "site_a", "PSP", client.CaptureParams{Amount: client.Amount{Value: 1, Currency: "EUR"}})
			if len(s.keys) != tc.wantCalls || !slices.Equal(waits, tc.wantWaits) {
				t.Fatalf("calls %d waits %v", len(s.keys), waits)
			}
			for _, k := range s.keys {
				if k == "" || k != s.keys[0] {
					t.Fatalf("Idempotency-Keys %v: one generated key for every attempt", s.keys)
				}
			}
			var e *client.Error
			switch {
			case tc.wantErr == "" && (err != nil || m.PSPReference != "CAP"):
				t.Fatalf("%+v %v", m, err)
			case tc.wantErr != "" && (!errors.As(err, &e) || e.Code != tc.wantErr || e.RequestID == ""):
				t.Fatalf("error %#v", err)
			}
		})
	}
}

// Two calls get two keys; a GET gets none.
func TestClientKeyPerCall(t *testing.T) {
	s := &scripted{answers: []func(http.ResponseWriter){captured}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := client.New(srv.URL, "yp_test_k")
	for range 2 {
		if _, err := c.Capture(context.Background(), "s", "PSP", client.CaptureParams{}); err != nil {
			t.Fatal(err)
		}
	}
	s.answers = []func(http.ResponseWriter){func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"clientToken":"c","environment":"test"}`)) }}
	if _, err := c.Config(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.keys[0] == "" || s.keys[0] == s.keys[1] || s.keys[2] != "" {
		t.Fatalf("keys %q", s.keys)
	}
}

// Network errors are retried; a cancelled context stops the retries.
func TestClientNetworkErrorAndCancel(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens: every attempt is a network error
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	c := client.New(url, "yp_test_k", client.WithRetries(5, time.Millisecond, time.Second),
		client.WithSleep(func(ctx context.Context, _ time.Duration) error {
			attempts++
			if attempts == 2 {
				cancel()
				return ctx.Err()
			}
			return nil
		}))
	_, err := c.Config(ctx)
	if !errors.Is(err, context.Canceled) || attempts != 2 {
		t.Fatalf("attempts %d err %v", attempts, err)
	}
}
