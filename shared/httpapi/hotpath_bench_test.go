package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/testutil/memledger"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
)

// EnvBenchFull enables the benchmarks that need external services or take
// long (DynamoDB on moto); `make bench` sets it, CI's smoke run does not.
const EnvBenchFull = "PAYSVC_BENCH_FULL"

// Typical bodies (testenv), with fixed references.
var (
	benchPayBody     = testenv.PaymentBody("order-2026-000123")
	benchSessionBody = testenv.SessionBody("order-2026-000124")
)

// memHot keeps the per-request records (rate-limit windows, idempotency
// records) in memory (payments and sessions are in an in-memory ledger,
// memledger), so a benchmark measures the service's CPU without store
// I/O. Tenant data comes from the embedded store, read once and then
// served from the authenticator's cache.
type memHot struct {
	*embedded.Store
	mu   sync.Mutex
	rl   map[string]int
	idem map[string]idempotency.Record
}

var (
	_ idempotency.Store = (*memHot)(nil)
	_ ratelimit.Store   = (*memHot)(nil)
)

// Hit implements ratelimit.Store.
func (m *memHot) Hit(_ context.Context, bucket string, limit int, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rl[bucket] >= limit {
		return false, nil
	}
	m.rl[bucket]++
	return true, nil
}

// Claim implements idempotency.Store.
func (m *memHot) Claim(_ context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := rec.Scope + "\x00" + rec.Key
	if old, ok := m.idem[k]; ok && now.Before(old.ExpiresAt) &&
		(old.Status == idempotency.StatusCompleted || now.Before(old.LeaseUntil)) {
		return old, storeerr.ErrConflict
	}
	m.idem[k] = rec
	return rec, nil
}

// Complete implements idempotency.Store.
func (m *memHot) Complete(_ context.Context, scope, key, token string, resp idempotency.Response, exp time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := scope + "\x00" + key
	rec, ok := m.idem[k]
	if !ok || rec.LeaseToken != token {
		return storeerr.ErrConflict
	}
	rec.Status, rec.Response, rec.ExpiresAt = idempotency.StatusCompleted, &resp, exp
	m.idem[k] = rec
	return nil
}

// Release implements idempotency.Store.
func (m *memHot) Release(_ context.Context, scope, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec, ok := m.idem[scope+"\x00"+key]; ok && rec.LeaseToken == token {
		delete(m.idem, scope+"\x00"+key)
	}
	return nil
}

// cannedUpstream answers upstream calls in memory, like the simulator
// would (a fresh pspReference per call), without a network round trip.
type cannedUpstream struct{ n atomic.Int64 }

// RoundTrip implements http.RoundTripper.
func (c *cannedUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	psp := fmt.Sprintf("BENCH%011d", c.n.Add(1))
	var status int
	var body string
	switch {
	case strings.HasSuffix(r.URL.Path, "/payments"):
		status = http.StatusOK
		body = `{"additionalData":{"authCode":"058158","cardSummary":"1111","expiryDate":"3/2030"},` +
			`"pspReference":"` + psp + `","resultCode":"Authorised","amount":{"currency":"EUR","value":12950},` +
			`"merchantReference":"order-2026-000123","paymentMethod":{"brand":"visa","type":"scheme"}}`
	case strings.HasSuffix(r.URL.Path, "/sessions"):
		status = http.StatusCreated
		body = `{"amount":{"currency":"EUR","value":12950},"countryCode":"NL","expiresAt":"2026-11-23T11:00:00+00:00",` +
			`"id":"CS` + psp + `","merchantAccount":"DemoShopECOM","reference":"order-2026-000124",` +
			`"returnUrl":"https://shop.example/checkout/return?order=000124","sessionData":"Ab02b4c0!BQABAgB` + psp + `"}`
	default:
		status, body = http.StatusNotFound, `{"status":404,"errorCode":"000","message":"Not Found","errorType":"validation"}`
	}
	return &http.Response{
		StatusCode: status, Status: strconv.Itoa(status) + " " + http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json;charset=UTF-8"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r,
	}, nil
}

// processCPU is the user+system CPU time of this process so far: with
// the request's concurrent record write and garbage collection, it is the
// CPU a request really costs (ns/op is wall time on one goroutine).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchService is the service's handler with every route, production
// settings (5 s tenant cache, JSON request logs) and no I/O on the
// request path once warm.
func benchService(b *testing.B) (http.Handler, string) {
	b.Helper()
	clk := clock.System{}
	es, err := embedded.Open(filepath.Join(b.TempDir(), "paysvc.db"), embedded.WithClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = es.Close() })
	ctx := context.Background()
	demo, err := provision.Demo(tenant.EnvTest)
	if err != nil {
		b.Fatal(err)
	}
	if err := (&provision.Provisioner{Store: es, Env: tenant.EnvTest, Clock: clk}).ApplySeed(ctx, demo); err != nil {
		b.Fatal(err)
	}
	hot := &memHot{Store: es, rl: map[string]int{}, idem: map[string]idempotency.Record{}}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	up := upstream.New(upstream.Config{BaseURL: "http://upstream.invalid/v71", APIKey: "sim_bench_api_key",
		Timeout: 5 * time.Second, HTTPClient: &http.Client{Transport: &cannedUpstream{}}})
	d := &httpapi.Deps{
		Auth:     tenant.NewAuthenticator(hot, tenant.EnvTest, clk, 5*time.Second),
		Limiter:  ratelimit.New(hot, clk, 1_000_000_000, 1_000_000_000, log),
		Idem:     idempotency.New(hot, clk, 0, 0, log),
		Payments: payments.NewService(memledger.New(clk), connector.New(up), clk, log),
		Log:      log,
		Clock:    clk,
	}
	h := httpapi.NewHandler(d, httpapi.ConfigRoutes(d), httpapi.SessionsRoutes(d),
		httpapi.PaymentsRoutes(d), httpapi.ModificationsRoutes(d))
	return h, demo.APIKeys[0].Key
}

// serveBench sends one request to h and fails b unless it gets want.
func serveBench(b *testing.B, h http.Handler, method, path, key, body, idemKey string, want int) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != want {
		b.Fatalf("%s %s: status %d, want %d: %s", method, path, w.Code, want, w.Body.Bytes())
	}
}

// BenchmarkRequestCPU is the service's CPU per request, excluding I/O:
// the whole pipeline (request id, authentication and permission from the
// warm cache, rate limit, site, body, idempotency claim/complete,
// validation, upstream request encoding and response decoding, payment
// record, request log) with the store's hot records in memory and the
// upstream answered in memory. "payments" is the target's POST payments
// with a unique Idempotency-Key per request.
func BenchmarkRequestCPU(b *testing.B) {
	h, key := benchService(b)
	cases := []struct {
		name, method, path, body string
		idem                     bool
		want                     int
	}{
		{"payments", http.MethodPost, "/v1/ecom/site_demo/payments", benchPayBody, true, http.StatusOK},
		{"payments-replay", http.MethodPost, "/v1/ecom/site_demo/payments", benchPayBody, false, http.StatusOK},
		{"sessions", http.MethodPost, "/v1/ecom/site_demo/sessions", benchSessionBody, true, http.StatusOK},
		{"config", http.MethodGet, "/v1/ecom/config", "", false, http.StatusOK},
	}
	for _, bc := range cases {
		i := 0 // outside the closure: the benchmark function may run more than once, and keys must stay new
		b.Run(bc.name, func(b *testing.B) {
			// Warm the tenant cache (the target is for warm instances).
			serveBench(b, h, bc.method, bc.path, key, bc.body, "warm-"+bc.name, bc.want)
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				idem := ""
				switch {
				case bc.idem:
					i++
					idem = "bench-" + bc.name + "-" + strconv.Itoa(i)
				case bc.name == "payments-replay":
					idem = "warm-" + bc.name // replayed from the stored response
				}
				serveBench(b, h, bc.method, bc.path, key, bc.body, idem, bc.want)
			}
			if b.N > 0 {
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkPaymentsRequestStore is one idempotent POST payments through the
// in-process service with real stores and the simulator on loopback: the
// embedded store (bbolt, fsync per write) always, DynamoDB on moto with
// PAYSVC_BENCH_FULL=1. Wall time per request, I/O included; the tenant
// cache is warm as in production.
func BenchmarkPaymentsRequestStore(b *testing.B) {
	for _, dyn := range []bool{false, true} {
		name := "embedded"
		if dyn {
			name = "dynamo"
		}
		b.Run(name, func(b *testing.B) {
			if dyn && os.Getenv(EnvBenchFull) == "" {
				b.Skipf("DynamoDB (moto) variant skipped: set %s=1 to run it (make bench does)", EnvBenchFull)
			}
			e := testenv.NewWith(b, testenv.Options{Dynamo: dyn})
			// Production caches tenant data per instance (PAYSVC_AUTH_CACHE_TTL).
			e.Deps.Auth = tenant.NewAuthenticator(e.Store, tenant.EnvTest, e.Clock, 5*time.Second)
			var buf bytes.Buffer
			e.Deps.Log = slog.New(slog.NewJSONHandler(&buf, nil))
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				// Move the fake clock so rate-limit windows roll over
				// (ASlow aside, keys allow 2000 per 2 s window here).
				e.Clock.Advance(5 * time.Millisecond)
				r := e.Do(http.MethodPost, "/v1/ecom/"+testenv.SiteA+"/payments", "A", benchPayBody,
					"Idempotency-Key", "bench-store-"+strconv.Itoa(i))
				if r.Status != http.StatusOK {
					b.Fatalf("status %d: %s", r.Status, r.Body)
				}
				buf.Reset()
			}
		})
	}
}
