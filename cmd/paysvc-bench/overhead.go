package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/yp/paysvc/internal/bodies"
	"github.com/yp/paysvc/shared/localserver"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// Upstream secrets of the benchmark's simulator (test values, loopback only).
const (
	benchSimAPIKey  = "sim_bench_api_key"
	benchSimHMACKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
	benchSite       = "site_demo"    // the local server's demo tenant
	benchAccount    = "DemoShopECOM" // its upstream merchant account
)

// Request bodies of the overhead runs: testenv's typical Drop-in payment
// (state data included) and sessions request; reference is filled per request.
const (
	payBodyFmt     = bodies.PaymentBodyFmt
	sessionBodyFmt = bodies.SessionBodyFmt
	captureBody    = `{"amount":{"value":12950,"currency":"EUR"}}`
)

// overheadEndpoints are the endpoints of item 1, in report order.
var overheadEndpoints = []string{"config", "sessions", "payments", "captures"}

// overheadRow is one endpoint at one upstream latency: the service and the
// direct call, measured in interleaved rounds.
type overheadRow struct {
	Endpoint    string
	Latency     time.Duration
	Concurrency int
	Requests    int // per side
	Service     stats
	Direct      stats
	// DirectNote says what "direct" is when the endpoint makes no upstream call.
	DirectNote string
	Skipped    string
}

// overheadResult is item 1.
type overheadResult struct {
	Rows []overheadRow
}

// recorded is an upstream request the service made, replayed by the
// direct runs so both sides send the same request.
type recorded struct {
	Method, Path string
	Body         []byte
}

// simFront serves the simulator on loopback and, while recording, keeps
// the last request of each upstream operation.
type simFront struct {
	Sim *simulator.Simulator
	URL string // http://127.0.0.1:port (without the API base path)
	srv *http.Server

	mu        sync.Mutex
	recording bool
	last      map[string]recorded
}

// startSimFront starts a simulator with latency lat on a loopback port.
func startSimFront(lat time.Duration, published bool) (*simFront, error) {
	sim, err := simulator.New(simulator.Options{APIKey: benchSimAPIKey, HMACKeyHex: benchSimHMACKey, Latency: lat, PublishedShapes: published})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = sim.Close()
		return nil, err
	}
	f := &simFront{Sim: sim, URL: "http://" + ln.Addr().String(), last: map[string]recorded{}}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// ServeHTTP records (when recording) and passes the request to the simulator.
func (f *simFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	rec := f.recording
	f.mu.Unlock()
	if rec {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		op := upstreamOp(r.URL.Path)
		f.mu.Lock()
		f.last[op] = recorded{Method: r.Method, Path: r.URL.Path, Body: body}
		f.mu.Unlock()
	}
	f.Sim.ServeHTTP(w, r)
}

// upstreamOp names an upstream path: "payments", "sessions", "captures", …
func upstreamOp(path string) string {
	for _, op := range []string{"captures", "refunds", "reversals", "amountUpdates", "payments/details", "sessions", "payments", "paymentMethods"} {
		if strings.HasSuffix(path, "/"+op) {
			return op
		}
	}
	if strings.Contains(path, "/storedPaymentMethods/") {
		return "storedPaymentMethods" // DELETE of one: its id aside
	}
	return path
}

// record turns recording of upstream requests on or off.
func (f *simFront) record(on bool) {
	f.mu.Lock()
	f.recording = on
	f.mu.Unlock()
}

// recorded returns the last recorded request of upstream operation op.
func (f *simFront) recorded(op string) (recorded, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.last[op]
	return r, ok
}

// close stops the server and the simulator.
func (f *simFront) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
	_ = f.Sim.Close()
}

// localService is the local server (shared/localserver: every route, the
// embedded store) running in this process against a simFront.
type localService struct {
	URL  string
	Key  string
	stop func() error
}

// startLocalService runs localserver.Run on a free loopback port with its
// embedded store in dataDir, the upstream at sim and rate limits out of
// the way (the load would otherwise be limited to 100/s per key).
func startLocalService(ctx context.Context, dataDir string, sim *simFront) (*localService, error) {
	var lastErr error
	for range 3 { // a free port can be taken between probe and bind
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		env := map[string]string{
			"PAYSVC_ENVIRONMENT":       "test",
			"PAYSVC_STORE":             "embedded",
			"PAYSVC_DATA_DIR":          dataDir,
			"PAYSVC_ADDR":              fmt.Sprintf("127.0.0.1:%d", port),
			"PAYSVC_UPSTREAM_URL":      sim.URL + sim.Sim.BasePath(),
			"PAYSVC_UPSTREAM_API_KEY":  benchSimAPIKey,
			"PAYSVC_UPSTREAM_HMAC_KEY": benchSimHMACKey,
			"PAYSVC_UPSTREAM_TIMEOUT":  "20s",
			"PAYSVC_RATE_PER_SECOND":   "1000000000",
			"PAYSVC_RATE_BURST":        "1000000000",
			"PAYSVC_LOG_LEVEL":         "info",
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- localserver.Run(runCtx, func(k string) string { return env[k] }, io.Discard, io.Discard)
		}()
		svc := &localService{URL: "http://" + env["PAYSVC_ADDR"], stop: func() error {
			cancel()
			select {
			case err := <-done:
				return err
			case <-time.After(15 * time.Second):
				return errors.New("local server did not stop within 15 s")
			}
		}}
		key, err := waitLocalService(runCtx, svc, dataDir, done)
		if err == nil {
			svc.Key = key
			return svc, nil
		}
		cancel()
		lastErr = err
	}
	return nil, lastErr
}

// waitLocalService waits until the server answers with its demo key.
func waitLocalService(ctx context.Context, svc *localService, dataDir string, done <-chan error) (string, error) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return "", fmt.Errorf("local server stopped: %v", err)
		default:
		}
		b, err := os.ReadFile(filepath.Join(dataDir, "demo-key.txt"))
		if key := strings.TrimSpace(string(b)); err == nil && key != "" {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, svc.URL+"/v1/ecom/config", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return key, nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", errors.New("local server not ready within 20 s")
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// loadClient is the load generator's HTTP client: keep-alive connections,
// enough idle ones for the concurrency.
func loadClient(conc int) *http.Client {
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        4 * conc,
			MaxIdleConnsPerHost: 4 * conc,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// send makes one request and returns the answer's body when the status is
// want (0: any 2xx).
func send(ctx context.Context, c *http.Client, method, url string, body []byte, header map[string]string, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if (want == 0 && (resp.StatusCode < 200 || resp.StatusCode > 299)) || (want != 0 && resp.StatusCode != want) {
		return b, fmt.Errorf("%s %s: status %d: %.200s", method, url, resp.StatusCode, b)
	}
	return b, nil
}

// overheadPhase is the service and the simulator at one upstream latency.
type overheadPhase struct {
	cfg    *config
	lat    time.Duration
	conc   int // concurrency of the current runs
	sim    *simFront
	svc    *localService
	client *http.Client
	tag    string // makes references and keys unique to the phase
}

// svcHeader are the headers of a request to the service.
func (p *overheadPhase) svcHeader(idemKey string, body bool) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + p.svc.Key}
	if body {
		h["Content-Type"] = "application/json"
	}
	if idemKey != "" {
		h["Idempotency-Key"] = idemKey
	}
	return h
}

// directHeader are the headers of a request straight to the simulator
// (what the service's upstream client sends).
func (p *overheadPhase) directHeader(idemKey string) map[string]string {
	return map[string]string{"X-API-Key": benchSimAPIKey, "Content-Type": "application/json", "Idempotency-Key": idemKey}
}

// createPayments starts n authorised payments through the service (setup
// of the captures runs) and returns their pspReferences.
func (p *overheadPhase) createPayments(ctx context.Context, prefix string, n int) ([]string, error) {
	psps := make([]string, n)
	s := runLoad(ctx, n, max(p.conc, 32), func(ctx context.Context, i int) error {
		ref := fmt.Sprintf("%s-%s-%d", p.tag, prefix, i)
		b, err := send(ctx, p.client, http.MethodPost, p.svc.URL+"/v1/ecom/"+benchSite+"/payments",
			[]byte(fmt.Sprintf(payBodyFmt, ref)), p.svcHeader(ref, true), http.StatusOK)
		if err != nil {
			return err
		}
		var out struct{ ResultCode, PSPReference string }
		if err := json.Unmarshal(b, &out); err != nil || out.ResultCode != "Authorised" || out.PSPReference == "" {
			return fmt.Errorf("setup payment: %s", b)
		}
		psps[i] = out.PSPReference
		return nil
	})
	if s.Errors > 0 {
		return nil, fmt.Errorf("creating %d payments for the captures run: %d failed: %s", n, s.Errors, s.FirstErr)
	}
	return psps, nil
}

// requesters returns the service and direct request functions of an
// endpoint; request i is unique (reference, Idempotency-Key, payment).
func (p *overheadPhase) requesters(ctx context.Context, ep string, n int) (svc, direct func(context.Context, int) error, note string, err error) {
	// Record what the service sends upstream for this endpoint.
	p.sim.record(true)
	defer p.sim.record(false)
	switch ep {
	case "config":
		svc = func(ctx context.Context, i int) error {
			_, err := send(ctx, p.client, http.MethodGet, p.svc.URL+"/v1/ecom/config", nil, p.svcHeader("", false), http.StatusOK)
			return err
		}
		// No upstream call: "direct" is one loopback HTTP exchange with the
		// simulator's server (its 404 for an unknown path).
		direct = func(ctx context.Context, i int) error {
			_, err := send(ctx, p.client, http.MethodGet, p.sim.URL+"/_bench/ping", nil, nil, http.StatusNotFound)
			return err
		}
		return svc, direct, "no upstream call: direct = one loopback HTTP exchange with the simulator's server", nil
	case "sessions", "payments":
		bodyFmt := sessionBodyFmt
		if ep == "payments" {
			bodyFmt = payBodyFmt
		}
		path := p.svc.URL + "/v1/ecom/" + benchSite + "/" + ep
		svc, direct, err = p.replayed(ctx, ep, func(int) string { return path }, func(k string) []byte { return []byte(fmt.Sprintf(bodyFmt, k)) }, nil)
		return svc, direct, "", err
	case "captures":
		svc, direct, err = p.captureRequesters(ctx, n)
		return svc, direct, "", err
	}
	return nil, nil, "", fmt.Errorf("unknown endpoint %s", ep)
}

// replayed are the service and direct request functions of a POST
// endpoint whose service request i goes to path(i) with body(its
// Idempotency-Key): a warm-up request (i = -1) records what the service
// sends upstream, which the direct side replays on directPath(the
// recorded path, i) (nil: the recorded path).
func (p *overheadPhase) replayed(ctx context.Context, ep string, path func(i int) string, body func(key string) []byte,
	directPath func(string, int) string) (svc, direct func(context.Context, int) error, err error) {
	warmKey := p.tag + "-warm-" + ep
	if _, err := send(ctx, p.client, http.MethodPost, path(-1), body(warmKey), p.svcHeader(warmKey, true), http.StatusOK); err != nil {
		return nil, nil, err
	}
	up, ok := p.sim.recorded(ep)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the service made no upstream call to record", ep)
	}
	if directPath == nil {
		directPath = func(path string, _ int) string { return path }
	}
	svc = func(ctx context.Context, i int) error {
		k := fmt.Sprintf("%s-%s-%d", p.tag, ep, i)
		_, err := send(ctx, p.client, http.MethodPost, path(i), body(k), p.svcHeader(k, true), http.StatusOK)
		return err
	}
	direct = func(ctx context.Context, i int) error {
		k := fmt.Sprintf("%s-direct-%s-%d", p.tag, ep, i)
		_, err := send(ctx, p.client, up.Method, p.sim.URL+directPath(up.Path, i), up.Body, p.directHeader(k), 0)
		return err
	}
	return svc, direct, nil
}

// captureRequesters are the service and direct request functions of
// captures: each request captures a payment created for it in setup,
// after a warm-up capture whose upstream request is recorded.
func (p *overheadPhase) captureRequesters(ctx context.Context, n int) (svc, direct func(context.Context, int) error, err error) {
	warm := max(2, p.conc)
	start := time.Now()
	psps, err := p.createPayments(ctx, "capture-setup", 2*(n+warm)+1)
	if err != nil {
		return nil, nil, err
	}
	p.cfg.logf("overhead: latency %s: created %d payments to capture in %s", p.lat, len(psps), time.Since(start).Round(time.Millisecond))
	// Requests are numbered from 0 by each run (the recorded warm-up -1:
	// psps[0]); the run's warm-up takes the last payments, so every capture
	// is of a different payment.
	directPSP := psps[1+n+warm:]
	path := func(i int) string {
		return p.svc.URL + "/v1/ecom/" + benchSite + "/payments/" + psps[1+i] + "/captures"
	}
	return p.replayed(ctx, "captures", path, func(string) []byte { return []byte(captureBody) },
		func(up string, i int) string { return strings.Replace(up, psps[0], directPSP[i], 1) })
}

// measure runs n requests of each side in interleaved rounds (service
// first in even rounds, direct first in odd ones) after a short warm-up.
func (p *overheadPhase) measure(ctx context.Context, ep string, n int) (overheadRow, error) {
	row := overheadRow{Endpoint: ep, Latency: p.lat, Concurrency: p.conc, Requests: n}
	warm := max(2, p.conc)
	svc, direct, note, err := p.requesters(ctx, ep, n)
	if err != nil {
		return row, err
	}
	row.DirectNote = note
	// Warm-up: connections, caches; indexes n.. are reserved for it.
	for _, f := range []func(context.Context, int) error{svc, direct} {
		w := runLoad(ctx, warm, p.conc, func(ctx context.Context, i int) error { return f(ctx, n+i) })
		if w.Errors > 0 {
			return row, fmt.Errorf("%s warm-up: %s", ep, w.FirstErr)
		}
	}
	rounds := max(1, min(p.cfg.Rounds, n))
	var sSvc, sDir sample
	for r := range rounds {
		lo, hi := r*n/rounds, (r+1)*n/rounds
		run := func(f func(context.Context, int) error) sample {
			// At a slow upstream, workers are staggered over one latency
			// period, like independent clients, rather than arriving together.
			return runLoadStaggered(ctx, hi-lo, p.conc, p.lat, func(ctx context.Context, i int) error { return f(ctx, lo+i) })
		}
		if r%2 == 0 {
			sSvc.merge(run(svc))
			sDir.merge(run(direct))
		} else {
			sDir.merge(run(direct))
			sSvc.merge(run(svc))
		}
	}
	row.Service, row.Direct = sSvc.stats(), sDir.stats()
	if row.Service.Errors > 0 || row.Direct.Errors > 0 {
		return row, fmt.Errorf("%s at %s, concurrency %d: %d service and %d direct requests failed; first: %s%s", ep, p.lat, p.conc,
			row.Service.Errors, row.Direct.Errors, row.Service.FirstErr, row.Direct.FirstErr)
	}
	return row, nil
}

// runOverhead is item 1: for each upstream latency a simulator and a local
// server, then each endpoint through the service and straight to the
// simulator, side by side, at each concurrency level.
func runOverhead(ctx context.Context, cfg *config) (*overheadResult, error) {
	res := &overheadResult{}
	var errs []error
	for li, lat := range cfg.Latencies {
		n, levels := cfg.Requests, cfg.Concurrency
		if lat > 0 {
			n, levels = cfg.RequestsSlow, []int{cfg.ConcurrencySlow}
		}
		err := runSection(fmt.Sprintf("overhead-%s", lat), cfg.progress, func(t *section) error {
			sim, err := startSimFront(lat, false)
			if err != nil {
				return err
			}
			defer sim.close()
			dataDir, err := t.TempDir()
			if err != nil {
				return err
			}
			svc, err := startLocalService(ctx, dataDir, sim)
			if err != nil {
				return err
			}
			defer func() { _ = svc.stop() }()
			p := &overheadPhase{cfg: cfg, lat: lat, sim: sim, svc: svc, client: loadClient(slices.Max(levels))}
			for _, conc := range levels {
				p.conc = conc
				for _, ep := range overheadEndpoints {
					if !wanted(cfg.Endpoints, ep) {
						continue
					}
					if ep == "config" && lat > 0 {
						res.Rows = append(res.Rows, overheadRow{Endpoint: ep, Latency: lat, Concurrency: conc,
							Skipped: "no upstream call: the upstream latency does not apply"})
						continue
					}
					cfg.logf("overhead: latency %s: %s (%d requests per side, concurrency %d)", lat, ep, n, conc)
					runCtx, cancel := context.WithTimeout(ctx, loadTimeout(n, conc, lat))
					p.tag = fmt.Sprintf("b%d%d%d", li, conc, time.Now().UnixNano()%1e6)
					row, err := p.measure(runCtx, ep, n)
					cancel()
					if err != nil {
						return err
					}
					res.Rows = append(res.Rows, row)
				}
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// loadTimeout bounds one endpoint's runs generously: far above their
// expected time, so a wedged run stops by itself.
func loadTimeout(n, conc int, lat time.Duration) time.Duration {
	per := lat + 50*time.Millisecond
	return 60*time.Second + time.Duration(6*n/max(conc, 1)+6)*per
}
