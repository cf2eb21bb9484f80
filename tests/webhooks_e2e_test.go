package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// End-to-end tests of notifications in and webhooks out (docs/webhooks.md): the
// service as the local server wires it (app, embedded store, local queue,
// real HTTP) with the upstream simulator posting its HMAC-signed
// notifications to the service's endpoint over HTTP, and merchants'
// receivers on httptest servers. The clock is fake (near the wall clock so
// Standard Webhooks timestamps verify); the local queue is driven with
// RunDue, so retries are walked through without waiting. The tests whose
// behaviour depends on the store and the queue (deliveries, retries,
// redrives, the dead-letter queue, the self-service) run on DynamoDB and SQS
// too (onBothStores, webhooks_e2e_stores_test.go), with the wait before a
// retry counted on the same fake clock.

const (
	e2eSimKey     = "sim_e2e_api_key"
	e2eNotifyUser = "paysvc-notify"
	e2eNotifyPass = "e2e-notify-password"
	e2eMerchant   = "m_e2e"
	e2eSite       = "site_e2e"
	e2eAccount    = "E2EShopECOM"
	e2eCard       = `{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}`
)

// hookReceiver is a merchant's webhook endpoint.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []hookRequest
	answer func(n int) int // status of the n-th request (1-based); nil: 200
	hold   chan struct{}   // when set, requests wait on it (or their context)
}

type hookRequest struct {
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	checker := repoChecker(t)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Every webhook is held to the document's webhooks section: a
		// service event (paysvc.…) to serviceEvent, the others to
		// paymentEvent.
		name := "paymentEvent"
		if bytes.Contains(body, []byte(`"eventCode":"paysvc.`)) {
			name = "serviceEvent"
		}
		if v := checker.CheckWebhook(name, r.Header, body); len(v) > 0 {
			t.Errorf("webhook violates docs/openapi.yaml: %s\n  body: %s", strings.Join(v, "\n  "), body)
		}
		h.mu.Lock()
		h.got = append(h.got, hookRequest{r.Header.Clone(), body})
		n, answer, hold := len(h.got), h.answer, h.hold
		h.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		status := http.StatusOK
		if answer != nil {
			status = answer(n)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(func() {
		h.release()
		h.srv.Close()
	})
	return h
}

// release lets the requests held on hold go on, and the later ones pass.
func (h *hookReceiver) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hold != nil {
		close(h.hold)
		h.hold = nil
	}
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// codesOf lists, comma-separated, the event codes delivered about payment psp.
func (h *hookReceiver) codesOf(t *testing.T, psp string) string {
	t.Helper()
	var codes []string
	for _, r := range h.requests() {
		if it := r.item(t); it["originalReference"] == psp || it["pspReference"] == psp {
			codes = append(codes, it["eventCode"].(string))
		}
	}
	return strings.Join(codes, ",")
}

// item decodes the single notification item of a delivery body.
func (r hookRequest) item(t *testing.T) map[string]any {
	t.Helper()
	var p struct {
		Live  *bool `json:"live"`
		Items []struct {
			Item map[string]any `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || p.Live == nil || len(p.Items) != 1 {
		t.Fatalf("delivery body %s: %v", r.body, err)
	}
	return p.Items[0].Item
}

// whEnv is a running service with the simulator and one merchant.
type whEnv struct {
	t      *testing.T
	store  whStore
	ctx    context.Context
	clk    *clock.Fake
	a      *app.App
	sim    *simulator.Simulator
	queues *app.Queues
	disp   *webhooks.Dispatcher
	admin  *webhooks.Admin
	base   string
	key    string
	secret string
	logs   *bytes.Buffer
	hooks  *hookReceiver
	aws    *awsWH // the DynamoDB variant's dispatch; nil on the embedded store
}

type whOptions struct {
	// store is the variant (default embedded; onBothStores sets it).
	store      whStore
	allowLocal bool
	timeout    time.Duration
	// sim sets the simulator's platform-like options (PublishedShapes,
	// WebThreeDS2, PlatformRules, …); keys, clock and notifier are set here.
	sim simulator.Options
	// simHandler wraps the simulator's HTTP handler (nil: none).
	simHandler func(http.Handler) http.Handler
	// onNotify sees every notification body before it is posted.
	onNotify func(body []byte)
}

func newWHEnv(t *testing.T, o whOptions) *whEnv {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	logs := &bytes.Buffer{}
	log := app.NewLogger(&lockedWriter{mu: &sync.Mutex{}, w: logs}, slog.LevelDebug)

	var handler atomic.Pointer[http.Handler]
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	t.Cleanup(svc.Close)
	backoff := make([]time.Duration, 20)
	for i := range backoff {
		backoff[i] = 20 * time.Millisecond
	}
	notifier, err := simulator.NewHTTPNotifier(simulator.HTTPNotifierConfig{
		URL: svc.URL + httpapi.NotificationsPath, Username: e2eNotifyUser, Password: e2eNotifyPass,
		Backoff: backoff, Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	simOpts := o.sim
	simOpts.APIKey, simOpts.HMACKeyHex, simOpts.Clock, simOpts.Notifier = e2eSimKey, sampleHMACKey, clk, notifier
	if o.onNotify != nil {
		simOpts.Notifier = simulator.NotifierFunc(func(ctx context.Context, body []byte) error {
			o.onNotify(body)
			return notifier.Notify(ctx, body)
		})
	}
	sim, err := simulator.New(simOpts)
	if err != nil {
		t.Fatal(err)
	}
	var simHandler http.Handler = sim
	if o.simHandler != nil {
		simHandler = o.simHandler(sim)
	}
	simSrv := httptest.NewServer(simHandler)
	t.Cleanup(func() { simSrv.Close(); _ = sim.Close() })

	env := map[string]string{
		"PAYSVC_DATA_DIR": t.TempDir(), "PAYSVC_UPSTREAM_URL": simSrv.URL + sim.BasePath(),
		"PAYSVC_UPSTREAM_API_KEY": e2eSimKey, "PAYSVC_UPSTREAM_HMAC_KEY": sampleHMACKey,
		"PAYSVC_NOTIFICATION_USERNAME": e2eNotifyUser, "PAYSVC_NOTIFICATION_PASSWORD": e2eNotifyPass,
		"PAYSVC_AUTH_CACHE_TTL": "0s", "PAYSVC_RATE_PER_SECOND": "1000", "PAYSVC_RATE_BURST": "2000",
	}
	if o.allowLocal {
		env["PAYSVC_WEBHOOK_ALLOW_LOCAL"] = "true"
	}
	if o.store == whDynamo {
		maps.Copy(env, dynamoSetup(t))
	}
	cfg, err := config.FromEnv(func(k string) string { return env[k] }, config.StoreEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, log, clk, app.WithDynamoOptions(dynamo.WithDeliveryShards(e2eDeliveryShards)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The simulator's notifications and the service's requests end
		// before the stores close.
		simSrv.Close()
		_ = sim.Close()
		svc.Close()
		_ = a.Stores.Close()
	})
	queues, err := app.OpenQueues(ctx, a.Config, a.Stores, clk, log)
	if err != nil {
		t.Fatal(err)
	}
	recv, err := app.NewInbox(a, queues.Queue)
	if err != nil {
		t.Fatal(err)
	}
	if o.timeout == 0 {
		o.timeout = 5 * time.Second
	}
	disp := app.NewDispatcher(a, app.DispatcherOptions{Timeout: o.timeout, Rand: func() float64 { return 0.5 }})
	admin, err := app.NewWebhookAdmin(ctx, a.Config, a.Stores, clk, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.WireWebhookSelfService(ctx, a, queues.Queue, nil); err != nil {
		t.Fatal(err)
	}
	api := httpapi.NewHandler(a.Deps, httpapi.ConfigRoutes(a.Deps), httpapi.SessionsRoutes(a.Deps),
		httpapi.PaymentsRoutes(a.Deps), httpapi.ModificationsRoutes(a.Deps), httpapi.LookupsRoutes(a.Deps),
		httpapi.WebhooksRoutes(a.Deps))
	// Every exchange with the service (the merchant's API calls and the
	// simulator's notifications) is checked against docs/openapi.yaml.
	checker := repoChecker(t)
	h := checker.Handler(t, httpapi.Notifications(a.Deps, recv, app.NotificationAuth(a.Secrets), api))
	handler.Store(&h)

	e := &whEnv{t: t, store: o.store, ctx: ctx, clk: clk, a: a, sim: sim, queues: queues, disp: disp, admin: admin, base: svc.URL, logs: logs,
		hooks: newHookReceiver(t)}
	if queues.SQS != nil {
		e.aws = newAWSWH(t, ctx, queues, disp.Process, clk, a)
	}
	e.seed()
	return e
}

// seedMulti provisions m_multi, a merchant (and platform account,
// MultiShopECOM) with multiple partial captures, on site_multi; it returns
// its API key.
func (e *whEnv) seedMulti() string {
	e.t.Helper()
	key, _ := e.seedMerchant(tenant.Merchant{ID: "m_multi", Name: "Multi Shop", Country: "NL", Active: true,
		CaptureMode: tenant.CaptureManual, MultiplePartialCaptures: true, Ecommerce: true, UpstreamAccount: "MultiShopECOM",
		ClientKey: "test_MULTICLIENT", SplitAccount: "BA_multi"}, "site_multi", "sub_multi", newHookReceiver(e.t))
	return key
}

func (e *whEnv) seed() {
	e.key, e.secret = e.seedMerchant(tenant.Merchant{ID: e2eMerchant, Name: "E2E Shop", Country: "NL", Active: true,
		CaptureMode: tenant.CaptureManual, Ecommerce: true, UpstreamAccount: e2eAccount, ClientKey: "test_E2ECLIENT",
		SplitAccount: "BA_e2e"}, e2eSite, "sub_e2e", e.hooks)
}

// seedMerchant provisions m with the site, an API key with every
// permission and the subscription to hooks; it returns the key and the
// subscription's secret.
func (e *whEnv) seedMerchant(m tenant.Merchant, site, subscription string, hooks *hookReceiver) (key, secret string) {
	t := e.t
	t.Helper()
	p := &provision.Provisioner{Store: e.a.Stores.Tenants, Env: tenant.EnvTest, Clock: e.clk}
	if _, err := p.PutMerchant(e.ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PutSite(e.ctx, tenant.Site{ID: site, MerchantID: m.ID}); err != nil {
		t.Fatal(err)
	}
	_, key, err := p.CreateAPIKey(e.ctx, provision.KeySpec{MerchantID: m.ID})
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err = p.PutSubscription(e.ctx, provision.SubscriptionSpec{ID: subscription, MerchantID: m.ID, URL: hooks.srv.URL + "/webhooks", AllowLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	return key, secret
}

// api POSTs to the service's API under the merchant's site (with the
// headers, in pairs) and decodes the JSON answer.
func (e *whEnv) api(path, body string, want int, headers ...string) map[string]any {
	e.t.Helper()
	return e.callAs(e.key, http.MethodPost, "/v1/ecom/"+e2eSite+path, body, want, headers...)
}

// pay starts an authorised card payment and returns its pspReference.
func (e *whEnv) pay(value int, holder string) string {
	e.t.Helper()
	return e.payWith(value, holder, "")
}

// payWith is pay with more top-level fields (raw JSON, each followed by a comma).
func (e *whEnv) payWith(value int, holder, extra string) string {
	e.t.Helper()
	return e.payAs(e.key, e2eSite, value, holder, extra)
}

// payAs is payWith with the key and site of any merchant.
func (e *whEnv) payAs(key, site string, value int, holder, extra string) string {
	e.t.Helper()
	pm := e2eCard
	if holder != "" {
		pm = strings.Replace(pm, `"type":"scheme"`, `"type":"scheme","holderName":"`+holder+`"`, 1)
	}
	out := e.callAs(key, http.MethodPost, "/v1/ecom/"+site+"/payments",
		fmt.Sprintf(`{%s"amount":{"value":%d,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"order-e2e","paymentMethod":%s}`, extra, value, pm), 200)
	psp, _ := out["pspReference"].(string)
	if out["resultCode"] != "Authorised" || psp == "" {
		e.t.Fatalf("payment: %v", out)
	}
	return psp
}

// payCaptured is pay of 1000 captured in full, its notifications delivered.
func (e *whEnv) payCaptured(holder string) string {
	e.t.Helper()
	psp := e.pay(1000, holder)
	e.settle()
	e.api("/payments/"+psp+"/captures", `{"amount":{"value":1000,"currency":"EUR"}}`, 200)
	e.settle()
	return psp
}

// settle waits until the simulator has delivered its notifications (each
// answered [accepted] by the service) and runs the due deliveries.
func (e *whEnv) settle() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, serverWait) // a failure bound only
	defer cancel()
	if err := e.sim.Flush(ctx); err != nil {
		e.t.Fatalf("flush notifications: %v", err)
	}
	e.runDue()
}

// runDue runs the deliveries due on the fake clock: the local queue's due
// jobs, or the SQS messages received by the dispatcher's Lambda handler.
func (e *whEnv) runDue() int {
	e.t.Helper()
	if e.aws != nil {
		return e.aws.runDue(e.t, e.ctx, e.queues.SQS, e.a)
	}
	n, err := e.queues.Local.RunDue(e.ctx, e.disp.Process)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// payment is payment psp's head.
func (e *whEnv) payment(psp string) payments.Head {
	e.t.Helper()
	p, err := e.a.Stores.Payments.GetPayment(e.ctx, psp)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// timeline is payment psp's whole timeline, read a page at a time.
func (e *whEnv) timeline(psp string) []payments.Fact {
	e.t.Helper()
	var all []payments.Fact
	cursor := ""
	for {
		page, next, err := e.a.Stores.Payments.Timeline(e.ctx, psp, cursor, 100)
		if err != nil {
			e.t.Fatal(err)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

func (e *whEnv) deliveries(status webhooks.Status) []webhooks.Delivery {
	e.t.Helper()
	ds, err := e.admin.ListDeliveries(e.ctx, e2eMerchant, status, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return ds
}

// TestWebhooksE2EPaymentNotificationsSignedAndVerifiable: authorise,
// capture and refund a payment through the API; each notification reaches
// the merchant signed (our helper and the official Standard Webhooks
// library verify it), stripped of internal data, with paymentSource.
func TestWebhooksE2EPaymentNotificationsSignedAndVerifiable(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		psp := e.payCaptured("")
		e.api("/payments/"+psp+"/reversals", `{}`, 200)
		e.settle()

		reqs := e.hooks.requests()
		var codes []string
		wh, err := standardwebhooks.NewWebhook(e.secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if err := verify.Verify(e.secret, r.header, r.body, e.clk.Now(), 0); err != nil {
				t.Fatalf("verify helper: %v", err)
			}
			if err := wh.Verify(r.body, r.header); err != nil {
				t.Fatalf("standard webhooks library: %v", err)
			}
			if r.header.Get("X-Webhook-Delivery-Attempt") != "1" || r.header.Get("X-Webhook-Payload-Version") != "1" ||
				r.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.header.Get("X-Webhook-Id"), "msg_") {
				t.Fatalf("headers: %v", r.header)
			}
			it := r.item(t)
			codes = append(codes, it["eventCode"].(string))
			ad, _ := it["additionalData"].(map[string]any)
			if ad["paymentSource"] != "advanced" || ad["hmacSignature"] != nil || ad["metadata.merchantId"] != nil || ad["metadata.siteId"] != nil {
				t.Fatalf("additionalData: %v", ad)
			}
			if it["success"] != "true" || (it["pspReference"] != psp && it["originalReference"] != psp) {
				t.Fatalf("item: %v", it)
			}
		}
		if strings.Join(codes, ",") != "AUTHORISATION,CAPTURE,REFUND" {
			t.Fatalf("delivered %v", codes)
		}
		if v := e.payment(psp).View(); v.State != payments.StateRefunded || v.Captured != 1000 || v.Refunded != 1000 {
			t.Fatalf("payment record: %+v", v)
		}
		if strings.Contains(e.logs.String(), e.secret) || strings.Contains(e.logs.String(), sampleHMACKey) || strings.Contains(e.logs.String(), e2eNotifyPass) {
			t.Fatal("a secret reached the logs")
		}
	})
}

// failFirst answers 503 to the first n requests, then 200.
func failFirst(n int) func(int) int {
	return func(i int) int {
		if i <= n {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
}

// TestWebhooksE2EFailTwiceThenSucceed: attempts 1, 2 and 3 carry one
// X-Webhook-Id and arrive on the schedule (immediately, 5 s, 5 min).
func TestWebhooksE2EFailTwiceThenSucceed(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		e.hooks.answer = failFirst(2)
		e.pay(1000, "")
		e.settle()
		for _, wait := range []time.Duration{5 * time.Second, 5 * time.Minute} {
			e.clk.Advance(wait - time.Millisecond)
			if e.runDue() != 0 {
				t.Fatalf("an attempt ran before its %s wait", wait)
			}
			e.clk.Advance(time.Millisecond)
			if e.runDue() != 1 {
				t.Fatalf("no attempt after %s", wait)
			}
		}
		reqs := e.hooks.requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3", len(reqs))
		}
		id := reqs[0].header.Get("X-Webhook-Id")
		for i, r := range reqs {
			if r.header.Get("X-Webhook-Id") != id || r.header.Get("X-Webhook-Delivery-Attempt") != fmt.Sprint(i+1) {
				t.Fatalf("request %d: id %s attempt %s", i+1, r.header.Get("X-Webhook-Id"), r.header.Get("X-Webhook-Delivery-Attempt"))
			}
			if err := verify.Verify(e.secret, r.header, r.body, e.clk.Now(), 10*time.Minute); err != nil {
				t.Fatalf("request %d: %v", i+1, err)
			}
		}
		ds := e.deliveries(webhooks.StatusDelivered)
		if len(ds) != 1 || ds[0].Attempts != 3 || ds[0].ID != id {
			t.Fatalf("delivered: %+v", ds)
		}
		// The delivery kept its three attempts, each with its signature
		// as sent and its answer.
		if h := ds[0].History; len(h) != 3 {
			t.Fatalf("history: %+v", h)
		}
		for i, a := range ds[0].History {
			ok := a.StatusCode >= 200 && a.StatusCode < 300
			if a.Number != i+1 || a.Signature != reqs[i].header.Get(webhooks.HeaderSignature) || ok != (i == 2) || (a.Error == "") != ok {
				t.Fatalf("attempt %d kept as %+v", i+1, a)
			}
		}
	})
}

// TestWebhooksE2ELongWait: the 30 min wait before attempt 4 is longer
// than SQS delays a message (15 min). On SQS the production handler
// carries it in a hop — the retry's message, shown after 15 min, is sent
// on for the 15 min left without an attempt — and on both stores attempt
// 4 runs when due, not before.
func TestWebhooksE2ELongWait(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		e.hooks.answer = failFirst(3)
		e.pay(1000, "")
		e.settle()
		for _, wait := range []time.Duration{5 * time.Second, 5 * time.Minute} {
			e.clk.Advance(wait)
			e.runDue()
		}
		if n := len(e.hooks.requests()); n != 3 {
			t.Fatalf("%d requests after 5 min 5 s, want 3", n)
		}
		e.clk.Advance(20 * time.Minute)
		n := e.runDue()
		if got := len(e.hooks.requests()); got != 3 {
			t.Fatalf("attempt 4 ran after 20 of its 30 minutes (%d requests)", got)
		}
		if want := map[bool]int{true: 1, false: 0}[e.aws != nil]; n != want {
			t.Fatalf("%d messages handled 20 minutes into the wait, want %d (SQS: one hop)", n, want)
		}
		e.clk.Advance(10*time.Minute - time.Millisecond)
		if e.runDue(); len(e.hooks.requests()) != 3 {
			t.Fatal("attempt 4 ran before its 30 minutes")
		}
		e.clk.Advance(time.Millisecond)
		if n := e.runDue(); n != 1 {
			t.Fatalf("%d messages handled when attempt 4 was due, want 1", n)
		}
		reqs := e.hooks.requests()
		if len(reqs) != 4 || reqs[3].header.Get("X-Webhook-Delivery-Attempt") != "4" {
			t.Fatalf("%d requests, last attempt header %s", len(reqs), reqs[len(reqs)-1].header.Get("X-Webhook-Delivery-Attempt"))
		}
		if ds := e.deliveries(webhooks.StatusDelivered); len(ds) != 1 || ds[0].Attempts != 4 {
			t.Fatalf("delivered: %+v", ds)
		}
	})
}

// TestWebhooksE2ENeverSucceedsThenRedrive: ten failed attempts over the
// schedule end in failed + dead letter; the admin redrive delivers it.
func TestWebhooksE2ENeverSucceedsThenRedrive(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		e.hooks.answer = func(int) int { return http.StatusInternalServerError }
		e.pay(1000, "")
		e.settle()
		for attempt := 2; attempt <= webhooks.MaxAttempts; attempt++ {
			e.clk.Advance(webhooks.NominalDelay(attempt))
			if e.runDue() != 1 {
				t.Fatalf("attempt %d not made", attempt)
			}
		}
		failed := e.deliveries(webhooks.StatusFailed)
		if len(failed) != 1 || failed[0].Attempts != webhooks.MaxAttempts || failed[0].LastError != "HTTP 500 Internal Server Error" {
			t.Fatalf("failed deliveries: %+v", failed)
		}
		dead, err := e.queues.DeadLetters.ReceiveDeadLetters(e.ctx, 10)
		if err != nil || len(dead) != 1 || dead[0].Job.DeliveryID != failed[0].ID {
			t.Fatalf("dead letters: %+v, %v", dead, err)
		}
		if e.aws != nil {
			e.aws.showDeadLetters(t, e.ctx, dead)
		}
		e.clk.Advance(24 * time.Hour)
		if e.runDue() != 0 {
			t.Fatal("a failed delivery was attempted again")
		}

		e.hooks.answer = nil
		ids, err := e.admin.RedriveDeliveries(e.ctx, e2eMerchant, webhooks.RedriveOptions{})
		if err != nil || len(ids) != 1 || ids[0] != failed[0].ID {
			t.Fatalf("redrive: %v, %v", ids, err)
		}
		if e.runDue() != 1 {
			t.Fatal("the redriven delivery was not attempted")
		}
		if ds := e.deliveries(webhooks.StatusDelivered); len(ds) != 1 || ds[0].Redrives != 1 {
			t.Fatalf("after redrive: %+v", ds)
		}
		// Its dead letter is now stale: redriving the DLQ drops it.
		res, err := e.admin.RedriveDeadLetterQueue(e.ctx)
		if err != nil || res.Dropped != 1 || len(res.Redriven) != 0 {
			t.Fatalf("DLQ redrive: %+v, %v", res, err)
		}
		reqs := e.hooks.requests()
		if last := reqs[len(reqs)-1]; len(reqs) != webhooks.MaxAttempts+1 || last.header.Get("X-Webhook-Delivery-Attempt") != "1" {
			t.Fatalf("%d requests; last attempt header %s", len(reqs), last.header.Get("X-Webhook-Delivery-Attempt"))
		}
	})
}

// TestWebhooksE2ESlowReceiverTimesOut: a receiver that does not answer
// within the (injected, short) timeout counts as a failed attempt.
func TestWebhooksE2ESlowReceiverTimesOut(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true, timeout: 200 * time.Millisecond}, func(t *testing.T, e *whEnv) {
		// The receiver answers only when released: at the end, or after
		// serverWait (a failure bound: a dispatcher that did not time out
		// then gets its answer, delivered, and fails the test).
		e.hooks.hold = make(chan struct{})
		watchdog := time.AfterFunc(serverWait, e.hooks.release)
		defer watchdog.Stop()
		e.pay(1000, "")
		e.settle()
		ds := e.deliveries(webhooks.StatusPending)
		if len(ds) != 1 || ds[0].Attempts != 1 || !strings.Contains(ds[0].LastError, "timeout") || ds[0].NextAttemptAt == nil {
			t.Fatalf("after a slow receiver: %+v", ds)
		}
	})
}

// TestWebhooksE2ELoopbackRefusedWithoutDevSetting: without
// PAYSVC_WEBHOOK_ALLOW_LOCAL a loopback target gets nothing, and the
// delivery fails at once with the reason (no retries that cannot pass).
func TestWebhooksE2ELoopbackRefusedWithoutDevSetting(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: false}, func(t *testing.T, e *whEnv) {
		e.pay(1000, "")
		e.settle()
		if n := len(e.hooks.requests()); n != 0 {
			t.Fatalf("the loopback receiver got %d requests", n)
		}
		ds := e.deliveries(webhooks.StatusFailed)
		if len(ds) != 1 || !strings.Contains(ds[0].LastError, "target refused") || ds[0].Attempts != 1 || ds[0].NextAttemptAt != nil {
			t.Fatalf("delivery: %+v", ds)
		}
	})
}

// TestWebhooksE2EDuplicateAndReorderedNotifications: the simulator sends
// every notification twice and in reverse order; the payment record ends
// right and each event is delivered once.
func TestWebhooksE2EDuplicateAndReorderedNotifications(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		e.sim.SetFaults(simulator.Faults{Duplicate: 1, Reorder: 3})
		psp := e.payWith(1000, "", `"additionalData":{"authorisationType":"PreAuth"},`)
		e.api("/payments/"+psp+"/amount-updates", `{"pspReference":"`+psp+`","amount":{"value":1500,"currency":"EUR"}}`, 200)
		e.api("/payments/"+psp+"/captures", `{"amount":{"value":600,"currency":"EUR"}}`, 200)
		e.settle()
		// The merchant takes one capture: it released the rest.
		if v := e.payment(psp).View(); v.State != payments.StateCaptured || v.Authorised != 1500 || v.Captured != 600 || v.Capturable != 0 {
			t.Fatalf("payment record: %+v", v)
		}
		notes := map[string]int{}
		for _, f := range e.timeline(psp) {
			if f.Origin == payments.OriginNotification {
				notes[f.Kind]++
			}
		}
		if notes["AUTHORISATION"] != 1 || notes["AUTHORISATION_ADJUSTMENT"] != 1 || notes["CAPTURE"] != 1 {
			t.Fatalf("notifications in the timeline: %v", notes)
		}
		var codes []string
		for _, r := range e.hooks.requests() {
			codes = append(codes, r.item(t)["eventCode"].(string))
		}
		if len(codes) != 3 {
			t.Fatalf("delivered %v, want each of the 3 events once", codes)
		}
	})
}

// TestWebhooksE2ECaptureFailed: the upstream confirms a capture, then
// reports it failed; the record ends authorised with nothing captured.
func TestWebhooksE2ECaptureFailed(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		psp := e.payCaptured("capture failed")
		if v := e.payment(psp).View(); v.State != payments.StateAuthorised || v.Captured != 0 || v.CapturesInFlight != 0 {
			t.Fatalf("payment record: %+v", v)
		}
		var codes []string
		for _, r := range e.hooks.requests() {
			codes = append(codes, r.item(t)["eventCode"].(string))
		}
		slices.Sort(codes[1:]) // CAPTURE and CAPTURE_FAILED are delivered concurrently
		if strings.Join(codes, ",") != "AUTHORISATION,CAPTURE,CAPTURE_FAILED" {
			t.Fatalf("delivered %v", codes)
		}
	})
}

// TestWebhooksE2ECardOnFile: a zero-amount session stores the card; its
// AUTHORISATION (first seen by the service in the notification) creates the
// payment record, carries the token to the merchant, and the merchant's
// no-show charge with the token is authorised.
func TestWebhooksE2ECardOnFile(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		ses := e.api("/sessions", `{"amount":{"value":0,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"cof-1",
			"shopperReference":"guest-e2e","storePaymentMethod":true,"recurringProcessingModel":"UnscheduledCardOnFile"}`, 200)
		res, err := e.sim.PaySession(e.ctx, ses["id"].(string), simulator.SessionPayment{})
		if err != nil || res.ResultCode != "Authorised" || res.StoredPaymentMethodID == "" {
			t.Fatalf("session payment: %+v, %v", res, err)
		}
		e.settle()
		p := e.payment(res.PSPReference)
		if p.Source != payments.SourceSessions || p.MerchantID != e2eMerchant || p.SiteID != e2eSite || p.StoredMethodID != res.StoredPaymentMethodID ||
			p.View().State != payments.StateAuthorised || p.Reference != "cof-1" {
			t.Fatalf("record from the notification: %+v", p)
		}
		reqs := e.hooks.requests()
		if len(reqs) != 1 {
			t.Fatalf("%d deliveries, want the AUTHORISATION", len(reqs))
		}
		it := reqs[0].item(t)
		ad, _ := it["additionalData"].(map[string]any)
		token, _ := ad["tokenization.storedPaymentMethodId"].(string)
		if it["eventCode"] != "AUTHORISATION" || token != res.StoredPaymentMethodID || ad["paymentSource"] != "sessions" {
			t.Fatalf("forwarded item: %v", it)
		}
		charge := e.api("/payments", fmt.Sprintf(`{"amount":{"value":8000,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"noshow-1",
			"paymentMethod":{"type":"scheme","storedPaymentMethodId":%q},"shopperInteraction":"ContAuth","shopperReference":"guest-e2e",
			"recurringProcessingModel":"UnscheduledCardOnFile","industryUsage":"noShow"}`, token), 200)
		if charge["resultCode"] != "Authorised" {
			t.Fatalf("stored-card charge: %v", charge)
		}
		e.settle()
		if v := e.payment(charge["pspReference"].(string)).View(); v.State != payments.StateAuthorised || v.Authorised != 8000 {
			t.Fatalf("charge record: %+v", v)
		}
	})
}
