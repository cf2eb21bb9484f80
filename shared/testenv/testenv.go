// Package testenv builds a complete in-process service for tests: the real
// handlers, the embedded store in a temp dir, the upstream simulator behind
// a recorder, a fake clock and a seeded set of tenants covering every
// tenancy case.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/lookup"
	"github.com/yp/paysvc/shared/openapicheck"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/webhooks"
)

// Well-known ids of the seeded tenants.
const (
	MerchantA        = "m_alpha"    // ready for ecommerce, manual capture
	MerchantB        = "m_beta"     // ready for ecommerce, auto capture
	MerchantNotEcom  = "m_noecom"   // no upstream account
	MerchantInactive = "m_inactive" // deactivated
	SiteA            = "site_alpha"
	SiteAAdvanced    = "site_alpha_adv" // advanced flow only
	SiteAPOS         = "site_alpha_pos" // a point-of-sale site
	SiteB            = "site_beta"
	SiteNotEcom      = "site_noecom"
	SiteInactive     = "site_inactive"
	UpstreamAPIKey   = "sim_test_api_key"
	HMACKey          = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
)

// Start is the fixed start of the fake clock.
var Start = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// Stores are the store ports an Env runs on.
type Stores interface {
	tenant.Store
	idempotency.Store
	ratelimit.Store
	payments.Store
}

// Options choose how an Env is built.
type Options struct {
	// Dynamo runs on DynamoDB (moto) instead of the embedded store;
	// DynamoEndpoint is the moto server's URL ("": moto.Endpoint).
	Dynamo         bool
	DynamoEndpoint string
	// WrapIdem wraps the idempotency store (fault injection).
	WrapIdem func(idempotency.Store) idempotency.Store
	// IdemRetention is how long the service keeps idempotency keys (0:
	// the default, as long as the upstream keeps its own).
	IdemRetention time.Duration
	// WrapPayments wraps the payments service's store (fault injection).
	WrapPayments func(payments.Store) payments.Store
	// UpstreamTimeout bounds each upstream call; 0 means 30 s, a bound on
	// a failure only. A test of the upstream timing out sets it short: it
	// waits that long.
	UpstreamTimeout time.Duration
	// Simulator adjusts the simulator's options before it starts (a
	// seeded Rand for reproducible pspReferences, asynchronous
	// modification failures, …).
	Simulator func(*simulator.Options)
}

// Env is a running in-process service.
type Env struct {
	T       testing.TB
	Handler http.Handler
	Deps    *httpapi.Deps
	// Payments is the payments service the handlers call (Deps.Payments),
	// for tests that tune its record writes.
	Payments *payments.Service
	Clock    *clock.Fake
	Store    Stores
	// SelfService is the same store as its event history and delivery
	// store; Queue records the webhook jobs the self-service enqueues and
	// Hooks the test events it sends.
	SelfService selfServiceStores
	Queue       *MemQueue
	Hooks       *RecordingPoster
	Upstream    *Recorder
	Sim         *simulator.Simulator
	Logs        *bytes.Buffer
	// DynamoDB and DynamoTable are the client and table of an Env on
	// DynamoDB (Options.Dynamo), for tests that read raw items; nil and
	// "" on the embedded store.
	DynamoDB    *dynamodb.Client
	DynamoTable string
	// Keys by name: "A" (all permissions), "AConfigOnly", "ARestricted"
	// (SiteAAdvanced only), "ARevoked", "ALive", "ASlow" (1/s, burst 2),
	// "B", "NotEcom", "Inactive".
	Keys map[string]string

	opts     Options
	log      *slog.Logger
	dbPath   string          // the embedded store's file ("" on DynamoDB)
	embedded *embedded.Store // the embedded store open now (nil on DynamoDB)
}

// Recorder records the upstream requests and forwards them to the simulator.
type Recorder struct {
	URL     string
	mu      sync.Mutex
	reqs    []Recorded
	handler http.Handler
	inject  func(path string) Fault
	// injectReq is InjectRequest's function (consulted first).
	injectReq func(req Recorded) Fault
	// timeouts make the Env's upstream calls give up (Fault.Timeout).
	timeouts timeouts
}

// Fault is what an injected upstream fault does to one request.
type Fault struct {
	Status  int  // answer with this status and an upstream error body (0: no fault)
	Forward bool // forward to the simulator first (the upstream acted; the answer is lost)
	// Drop closes the connection without an answer: the caller's call
	// fails with a connection error. With Forward the upstream acted
	// first.
	Drop bool
	// Timeout holds the answer until the caller gives up: the caller's
	// call fails as timed out (context.DeadlineExceeded), at once, whatever
	// its timeout (Env's upstream client gives up when told to). With
	// Forward the upstream acted first.
	Timeout bool
	// After is called once the simulator has answered a forwarded request
	// (Status 0, or Forward), before the answer goes back to the caller,
	// is dropped or timed out (the caller is still waiting for it).
	After func()
}

// lost reports whether f loses the answer (an error status, Drop or
// Timeout).
func (f Fault) lost() bool { return f.Status != 0 || f.Drop || f.Timeout }

// InjectRequest sets a fault function consulted for every upstream
// request with the request itself (its headers carry the
// Idempotency-Key), before Inject's (nil clears).
func (r *Recorder) InjectRequest(f func(req Recorded) Fault) {
	r.mu.Lock()
	r.injectReq = f
	r.mu.Unlock()
}

// Inject sets a fault function consulted for every upstream request (nil clears).
func (r *Recorder) Inject(f func(path string) Fault) {
	r.mu.Lock()
	r.inject = f
	r.mu.Unlock()
}

// Recorded is one upstream request.
type Recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Requests returns the requests to paths ending in suffix.
func (r *Recorder) Requests(suffix string) []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Recorded
	for _, x := range r.reqs {
		if strings.HasSuffix(x.Path, suffix) {
			out = append(out, x)
		}
	}
	return out
}

// Last decodes the body of the last request to suffix into a map.
func (r *Recorder) Last(t testing.TB, suffix string) map[string]any {
	t.Helper()
	reqs := r.Requests(suffix)
	if len(reqs) == 0 {
		t.Fatalf("no upstream request to %s", suffix)
	}
	var m map[string]any
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &m); err != nil {
		t.Fatalf("upstream body: %v", err)
	}
	return m
}

func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, Recorded{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
	inject, injectReq := r.inject, r.injectReq
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	var f Fault
	if injectReq != nil {
		f = injectReq(Recorded{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
	}
	if !f.lost() && f.After == nil && inject != nil {
		f = inject(req.URL.Path)
	}
	if !f.lost() {
		if f.After == nil {
			r.handler.ServeHTTP(w, req)
			return
		}
		answer := httptest.NewRecorder()
		r.handler.ServeHTTP(answer, req)
		f.After()
		for k, v := range answer.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(answer.Code)
		_, _ = w.Write(answer.Body.Bytes())
		return
	}
	if f.Forward {
		r.handler.ServeHTTP(httptest.NewRecorder(), req)
		if f.After != nil {
			f.After()
		}
	}
	switch {
	case f.Timeout:
		// The caller gives up (its transport is told to); the answer is
		// held until it has.
		r.timeouts.giveUp(req.Header.Get(callHeader))
		<-req.Context().Done()
	case f.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection without an answer
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		fmt.Fprintf(w, `{"status":%d,"errorCode":"905","message":"injected fault","errorType":"internal"}`, f.Status)
	}
}

// callHeader carries the id the Env's upstream transport gives each call,
// so that a Timeout fault can tell that call to give up.
const callHeader = "X-Testenv-Call"

// timeouts are the calls of the Env's upstream client under way, each
// with the channel that makes it give up (Fault.Timeout).
type timeouts struct {
	mu    sync.Mutex
	seq   int64
	calls map[string]chan struct{}
}

// start registers a call and returns its id and its give-up channel.
func (t *timeouts) start() (string, chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls = map[string]chan struct{}{}
	}
	t.seq++
	id, ch := fmt.Sprint(t.seq), make(chan struct{})
	t.calls[id] = ch
	return id, ch
}

func (t *timeouts) end(id string) {
	t.mu.Lock()
	delete(t.calls, id)
	t.mu.Unlock()
}

// giveUp makes call id give up (an unknown id: nothing).
func (t *timeouts) giveUp(id string) {
	t.mu.Lock()
	ch := t.calls[id]
	delete(t.calls, id)
	t.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// timingOut is the Env's upstream transport: each request carries its
// call id (callHeader), and the call fails with context.DeadlineExceeded
// when the Recorder tells it to give up.
type timingOut struct {
	base http.RoundTripper
	t    *timeouts
}

func (tr timingOut) RoundTrip(req *http.Request) (*http.Response, error) {
	id, giveUp := tr.t.start()
	defer tr.t.end(id)
	ctx, cancel := context.WithCancel(req.Context())
	req = req.Clone(ctx)
	req.Header.Set(callHeader, id)
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := tr.base.RoundTrip(req)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		r.resp.Body = cancelOnClose{r.resp.Body, cancel}
		return r.resp, nil
	case <-giveUp:
		cancel()
		if r := <-done; r.err == nil {
			_ = r.resp.Body.Close()
		}
		return nil, fmt.Errorf("testenv: the upstream did not answer in time: %w", context.DeadlineExceeded)
	}
}

// cancelOnClose cancels a call's context once its answer is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// New starts an Env on the embedded store with every route mounted.
func New(t testing.TB) *Env { return NewWith(t, Options{}) }

// NewWith starts an Env as opts say.
func NewWith(t testing.TB, opts Options) *Env {
	t.Helper()
	clk := clock.NewFake(Start)
	var st Stores
	var sst selfServiceStores
	var client *dynamodb.Client
	var table string
	if opts.Dynamo {
		endpoint := opts.DynamoEndpoint
		if endpoint == "" {
			endpoint = moto.Endpoint(t)
		}
		client = moto.DynamoClient(t, endpoint)
		table = moto.TableName(t)
		if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
			t.Fatal(err)
		}
		// Deleted last, once everything started after it has stopped (a
		// test may have deleted it already): moto keeps a table's items
		// in memory for the life of the server every package shares.
		t.Cleanup(func() {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		})
		// A few shards of each listing: a page queries every shard, and
		// moto serves one query at a time (the merge is the same at any
		// count).
		ds := dynamo.New(client, table, clk, dynamo.WithDeliveryShards(8), dynamo.WithEventLogShards(4), dynamo.WithUnroutableShards(4))
		st, sst = ds, ds
	}
	e := &Env{T: t, Clock: clk, DynamoDB: client, DynamoTable: table, Keys: map[string]string{}, opts: opts,
		Queue: &MemQueue{}, Hooks: &RecordingPoster{}}
	if !opts.Dynamo {
		e.dbPath = filepath.Join(t.TempDir(), "paysvc.db")
		es := e.openEmbedded()
		t.Cleanup(func() { _ = e.embedded.Close() })
		st, sst = es, es
	}
	e.Store, e.SelfService = st, sst

	e.Sim = newSimulator(t, clk, opts.Simulator)
	rec := &Recorder{handler: e.Sim}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	e.Upstream = rec

	e.Logs = &bytes.Buffer{}
	e.log = slog.New(slog.NewJSONHandler(&syncWriter{w: e.Logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if e.opts.UpstreamTimeout == 0 {
		e.opts.UpstreamTimeout = 30 * time.Second
	}
	e.build()
	e.seed()
	return e
}

// openEmbedded opens the embedded store at e.dbPath.
func (e *Env) openEmbedded() *embedded.Store {
	es, err := embedded.Open(e.dbPath, embedded.WithClock(e.Clock))
	if err != nil {
		e.T.Fatal(err)
	}
	e.embedded = es
	return es
}

// build makes the service on e's stores: the upstream client, the
// payments service, the handlers and their ports.
func (e *Env) build() {
	st, sst, clk, log, opts := e.Store, e.SelfService, e.Clock, e.log, e.opts
	var idem idempotency.Store = st
	if opts.WrapIdem != nil {
		idem = opts.WrapIdem(st)
	}
	up := upstream.New(upstream.Config{BaseURL: e.Upstream.URL + "/v71", APIKey: UpstreamAPIKey, Timeout: opts.UpstreamTimeout,
		HTTPClient: &http.Client{Transport: timingOut{base: upstream.NewTransport(), t: &e.Upstream.timeouts}}})
	var ps payments.Store = st
	if opts.WrapPayments != nil {
		ps = opts.WrapPayments(st)
	}
	svc := payments.NewService(ps, connector.New(up), clk, log)
	d := &httpapi.Deps{
		Auth:     tenant.NewAuthenticator(st, tenant.EnvTest, clk, 0),
		Limiter:  ratelimit.New(st, clk, 1000, 2000, log),
		Idem:     idempotency.New(idem, clk, 0, opts.IdemRetention, log),
		Payments: svc,
		Lookup:   lookup.New(st, sst, sst),
		Log:      log,
		Clock:    clk,
	}
	d.Webhooks = &webhooks.SelfService{Deliveries: sst, Subscriptions: st, Queue: e.Queue, Sender: e.Hooks, Clock: clk}
	e.Deps, e.Payments = d, svc
	e.Handler = contractChecked(e.T, httpapi.NewHandler(d, httpapi.ConfigRoutes(d), httpapi.SessionsRoutes(d),
		httpapi.PaymentsRoutes(d), httpapi.ModificationsRoutes(d), httpapi.LookupsRoutes(d), httpapi.WebhooksRoutes(d)))
}

// Restart is a restart of the service after a crash: the service is built
// anew (Deps, Payments and Handler are new; the clock, the simulator, the
// upstream recorder, Queue, Hooks and the seeded tenants stay), and on the
// embedded store the store is first closed and opened again from its file
// (Store and SelfService are new). A DynamoDB table outlives any process:
// it stays. No request may be running.
func (e *Env) Restart() {
	e.T.Helper()
	if e.embedded != nil {
		if err := e.embedded.Close(); err != nil {
			e.T.Fatal(err)
		}
		es := e.openEmbedded()
		e.Store, e.SelfService = es, es
	}
	e.build()
}

// contractChecked validates every request and answer of a test against
// docs/openapi.yaml and fails the test on a violation (benchmarks measure
// the handler alone).
func contractChecked(t testing.TB, h http.Handler) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return h
	}
	c, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	return c.Handler(t, h)
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (e *Env) seed() {
	t := e.T
	ctx := context.Background()
	p := &provision.Provisioner{Store: e.Store, Env: tenant.EnvTest, Clock: e.Clock}
	ready := func(id, name, country string, mode tenant.CaptureMode) tenant.Merchant {
		return tenant.Merchant{
			ID: id, Name: name, Country: country, Active: true, CaptureMode: mode, Ecommerce: true,
			UpstreamAccount: name + "ECOM", ClientKey: "test_CLIENT_" + id, SplitAccount: "BA_" + id,
			CommissionAccount: "BA_platform", CommissionBps: 150, CommissionFixed: 10,
		}
	}
	notEcom := ready(MerchantNotEcom, "NoEcom", "DE", tenant.CaptureManual)
	notEcom.UpstreamAccount = ""
	inactive := ready(MerchantInactive, "Inactive", "FR", tenant.CaptureManual)
	inactive.Active = false
	// Merchant A takes multiple partial captures (so does its simulated
	// account, newSimulator); the others the platform's default, one.
	alpha := ready(MerchantA, "Alpha", "NL", tenant.CaptureManual)
	alpha.MultiplePartialCaptures = true
	for _, m := range []tenant.Merchant{
		alpha, ready(MerchantB, "Beta", "GB", tenant.CaptureAuto), notEcom, inactive,
	} {
		if _, err := p.PutMerchant(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []tenant.Site{
		{ID: SiteA, MerchantID: MerchantA, Type: tenant.SiteEcommerce},
		{ID: SiteAAdvanced, MerchantID: MerchantA, Type: tenant.SiteEcommerce, Flows: []tenant.Flow{tenant.FlowAdvanced}},
		{ID: SiteAPOS, MerchantID: MerchantA, Type: tenant.SitePOS},
		{ID: SiteB, MerchantID: MerchantB, Type: tenant.SiteEcommerce},
		{ID: SiteNotEcom, MerchantID: MerchantNotEcom, Type: tenant.SiteEcommerce},
		{ID: SiteInactive, MerchantID: MerchantInactive, Type: tenant.SiteEcommerce},
	} {
		if _, err := p.PutSite(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	add := func(name, merchant string, spec provision.KeySpec) tenant.APIKey {
		spec.MerchantID = merchant
		k, secret, err := p.CreateAPIKey(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		e.Keys[name] = secret
		return k
	}
	add("A", MerchantA, provision.KeySpec{})
	add("AConfigOnly", MerchantA, provision.KeySpec{Permissions: []tenant.Permission{tenant.PermConfig}})
	add("ARestricted", MerchantA, provision.KeySpec{SiteIDs: []string{SiteAAdvanced}})
	add("ASlow", MerchantA, provision.KeySpec{RatePerSecond: 1, Burst: 2})
	revoked := add("ARevoked", MerchantA, provision.KeySpec{})
	if err := p.RevokeAPIKey(ctx, MerchantA, revoked.ID); err != nil {
		t.Fatal(err)
	}
	live := provision.Provisioner{Store: e.Store, Env: tenant.EnvLive, Clock: e.Clock}
	k, secret, err := live.CreateAPIKey(ctx, provision.KeySpec{MerchantID: MerchantA})
	if err != nil || k.Environment != tenant.EnvLive {
		t.Fatal(err)
	}
	e.Keys["ALive"] = secret
	add("B", MerchantB, provision.KeySpec{})
	add("NotEcom", MerchantNotEcom, provision.KeySpec{})
	add("Inactive", MerchantInactive, provision.KeySpec{})
}

// Response is a recorded API response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response body %q: %v", r.Body, err)
	}
	return m
}

// Do sends a request with the named key ("" = no Authorization) and
// optional headers as alternating names and values.
func (e *Env) Do(method, path, keyName, body string, headers ...string) Response {
	e.T.Helper()
	return e.DoContext(context.Background(), method, path, keyName, body, headers...)
}

// DoContext is Do with the request's context ctx (a test's values for its
// own wrappers of the ports; safe for concurrent use).
func (e *Env) DoContext(ctx context.Context, method, path, keyName, body string, headers ...string) Response {
	e.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd).WithContext(ctx)
	if keyName != "" {
		key, ok := e.Keys[keyName]
		if !ok {
			key = keyName // a literal key
		}
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	e.Handler.ServeHTTP(w, req)
	return Response{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
}

// Timeline is payment psp's whole timeline as stored, read a page at a
// time.
func (e *Env) Timeline(psp string) []payments.Fact {
	e.T.Helper()
	var all []payments.Fact
	cursor := ""
	for {
		page, next, err := e.Store.Timeline(context.Background(), psp, cursor, 500)
		if err != nil {
			e.T.Fatal(err)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		cursor = next
	}
}
