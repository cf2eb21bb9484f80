package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/tests/lambdaharness"
)

// TestMain stops the moto_server this package may start and removes the
// bootstraps built by lambdaharness.
func TestMain(m *testing.M) {
	code := moto.Run(m)
	lambdaharness.CleanupBuilds()
	os.Exit(code)
}

// The events' demo payment (events/README.md); each test payment replaces it.
const samplePSP = "QFQTPCQ8HXSKGK82"

// Notification credentials of events/README.md (local/test only).
const (
	sampleNotifyUser     = "paysvc-notify"
	sampleNotifyPassword = "notify-test-password"
)

// proxyResponse is an API Gateway REST proxy response.
type proxyResponse struct {
	StatusCode        int                 `json:"statusCode"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

// header returns a response header from either header map.
func (r proxyResponse) header(name string) string {
	for k, v := range r.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	for k, v := range r.MultiValueHeaders {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (r proxyResponse) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// lambdaEnv is the AWS side of the test: DynamoDB, Secrets Manager on moto,
// the upstream simulator, the seeded tenant and a fake X-Ray daemon.
type lambdaEnv struct {
	endpoint  string
	table     string
	secretARN string
	sim       *simulator.Simulator
	simURL    string
	daemon    *xrayDaemon
	// secrets that must never appear in any log
	secrets map[string]string

	traceSeq atomic.Int64
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func newLambdaEnv(t *testing.T) *lambdaEnv {
	t.Helper()
	ctx := context.Background()
	e := &lambdaEnv{endpoint: moto.Endpoint(t), table: moto.TableName(t), daemon: newXrayDaemon(t)}

	// DynamoDB table.
	ddb := moto.DynamoClient(t, e.endpoint)
	if err := dynamo.CreateTable(ctx, ddb, e.table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(e.table)})
	})

	// The upstream secret, as deployed (JSON in Secrets Manager).
	upstreamKey := "sim_it_" + randomHex(t, 16)
	secretJSON, _ := json.Marshal(map[string]string{
		"apiKey": upstreamKey, "hmacKey": sampleHMACKey,
		"notificationUsername": sampleNotifyUser, "notificationPassword": sampleNotifyPassword,
	})
	sm := secretsmanager.NewFromConfig(aws.Config{
		Region:       moto.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(e.endpoint),
	})
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String("paysvc/it/" + e.table), SecretString: aws.String(string(secretJSON)),
	})
	if err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	e.secretARN = aws.ToString(out.ARN)
	t.Cleanup(func() {
		_, _ = sm.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{
			SecretId: out.ARN, ForceDeleteWithoutRecovery: aws.Bool(true),
		})
	})

	// The upstream simulator, accepting only the secret's API key.
	e.sim, err = simulator.New(simulator.Options{
		APIKey: upstreamKey, HMACKeyHex: sampleHMACKey, MerchantAccounts: []string{"DemoShopECOM"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.sim.Close() })
	srv := httptest.NewServer(e.sim)
	t.Cleanup(srv.Close)
	e.simURL = srv.URL + e.sim.BasePath()

	// The events' tenant (events/README.md), through the provisioning code
	// and the DynamoDB store, with a webhook subscription.
	webhookSecret := "whsec_" + randomHex(t, 24)
	demo, err := provision.Demo(tenant.EnvTest)
	if err != nil {
		t.Fatal(err)
	}
	demo.APIKeys[0].Key = sampleAPIKey
	demo.Subscriptions = []provision.SeedSub{{
		ID: "sub_demo", MerchantID: "m_demo", URL: "https://shop.example.com/webhooks", Secret: webhookSecret,
	}}
	prov := &provision.Provisioner{Store: dynamo.New(ddb, e.table, clock.System{}), Env: tenant.EnvTest, Clock: clock.System{}}
	if err := prov.ApplySeed(ctx, demo); err != nil {
		t.Fatalf("seed: %v", err)
	}

	e.secrets = map[string]string{
		"merchant API key":                  sampleAPIKey,
		"merchant API key (without prefix)": strings.TrimPrefix(sampleAPIKey, "yp_test_"),
		"upstream API key":                  upstreamKey,
		"upstream HMAC key":                 sampleHMACKey,
		"notification password":             sampleNotifyPassword,
		"webhook secret":                    webhookSecret,
		"webhook secret (without prefix)":   strings.TrimPrefix(webhookSecret, "whsec_"),
	}
	return e
}

// envFor is the environment of a function: every variable the template sets
// for it, with this test's values, plus the AWS plumbing (moto endpoint and
// credentials, the X-Ray daemon).
func (e *lambdaEnv) envFor(t *testing.T, logicalID string) map[string]string {
	t.Helper()
	values := map[string]string{
		"PAYSVC_ENVIRONMENT":         "test",
		"PAYSVC_STORE":               "dynamo",
		"PAYSVC_TABLE":               e.table,
		"PAYSVC_LOG_LEVEL":           "debug", // the most verbose: the secrets check covers every line
		"PAYSVC_UPSTREAM_URL":        e.simURL,
		"PAYSVC_UPSTREAM_SECRET_ARN": e.secretARN,
		"PAYSVC_UPSTREAM_TIMEOUT":    "10s",
		"PAYSVC_RATE_PER_SECOND":     "100",
		"PAYSVC_RATE_BURST":          "200",
		"PAYSVC_QUEUE_URL":           e.endpoint + "/123456789012/unused-deliveries",
		"PAYSVC_DLQ_URL":             e.endpoint + "/123456789012/unused-deliveries-dlq",
	}
	tpl := loadTemplate(t)
	fn, ok := tpl.functions()[logicalID]
	if !ok {
		t.Fatalf("no function %s in template.yaml", logicalID)
	}
	env := map[string]string{
		"AWS_ENDPOINT_URL":        e.endpoint,
		"AWS_ACCESS_KEY_ID":       "test",
		"AWS_SECRET_ACCESS_KEY":   "test",
		"AWS_XRAY_DAEMON_ADDRESS": e.daemon.addr(),
	}
	for k := range tpl.envVars(fn) {
		v, ok := values[k]
		if !ok {
			t.Fatalf("template sets %s for %s: give it a test value in envFor", k, logicalID)
		}
		env[k] = v
	}
	return env
}

// function is one started bootstrap.
type function struct {
	name string // functions/<name>
	h    *lambdaharness.Harness
	e    *lambdaEnv
}

func (e *lambdaEnv) start(t *testing.T, logicalID string) *function {
	t.Helper()
	name := wantFunctions[logicalID]
	bin := lambdaharness.BuildBootstrap(t, name)
	h := lambdaharness.StartWithOptions(t, bin, e.envFor(t, logicalID), lambdaharness.Options{
		FunctionName: "paysvc-it-" + logicalID,
		Region:       moto.Region,
		Timeout:      15 * time.Second,
		InitTimeout:  20 * time.Second,
	})
	return &function{name: name, h: h, e: e}
}

// invocation is one proxy event sent and its outcome.
type invocation struct {
	event     apiEvent
	resp      proxyResponse
	traceRoot string
}

// invoke sends the raw API Gateway event and decodes the proxy response.
func (f *function) invoke(t *testing.T, raw []byte) invocation {
	t.Helper()
	var ev apiEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("event: %v", err)
	}
	seq := f.e.traceSeq.Add(1)
	root := fmt.Sprintf("1-%08x-%024x", time.Now().Unix(), seq)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.h.Do(ctx, raw, lambdaharness.WithTraceID(fmt.Sprintf("Root=%s;Parent=%016x;Sampled=1", root, seq)))
	if err != nil {
		t.Fatalf("%s: invoke: %v", f.name, err)
	}
	if res.Err != nil {
		t.Fatalf("%s: function error: %v", f.name, res.Err)
	}
	var resp proxyResponse
	if err := json.Unmarshal(res.Payload, &resp); err != nil {
		t.Fatalf("%s: response is not a proxy response: %v: %s", f.name, err, res.Payload)
	}
	inv := invocation{event: ev, resp: resp, traceRoot: root}
	checkProxyResponse(t, inv)
	return inv
}

// checkProxyResponse asserts what every API response has: a JSON body, the
// JSON content type and the request id of API Gateway's requestContext.
func checkProxyResponse(t *testing.T, inv invocation) {
	t.Helper()
	r := inv.resp
	if r.IsBase64Encoded {
		t.Errorf("%s: base64 body", inv.event.Path)
	}
	if ct := r.header("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q", inv.event.HTTPMethod, inv.event.Path, ct)
	}
	if id := r.header("X-Request-Id"); id != inv.event.RequestContext.RequestID || id == "" {
		t.Errorf("%s %s: X-Request-Id %q, want the requestContext.requestId %q", inv.event.HTTPMethod, inv.event.Path, id, inv.event.RequestContext.RequestID)
	}
	if !json.Valid([]byte(r.Body)) {
		t.Errorf("%s %s: body is not JSON: %s", inv.event.HTTPMethod, inv.event.Path, r.Body)
	}
}

func wantStatus(t *testing.T, inv invocation, want int) map[string]any {
	t.Helper()
	if inv.resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", inv.event.HTTPMethod, inv.event.Path, inv.resp.StatusCode, want, inv.resp.Body)
	}
	return inv.resp.json(t)
}

// sampleEvent reads events/<name>.json.
func sampleEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(repoRoot + "/events/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// editEvent decodes an event, lets edit change it, and encodes it again.
func editEvent(t *testing.T, raw []byte, edit func(ev map[string]any)) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	edit(ev)
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// setHeader sets a header in both header maps of an event.
func setHeader(ev map[string]any, k, v string) {
	ev["headers"].(map[string]any)[k] = v
	if mv, ok := ev["multiValueHeaders"].(map[string]any); ok {
		mv[k] = []any{v}
	}
}

// variant is a sample event with its own request id and Idempotency-Key
// (so it is a new request), and every occurrence of the demo payment's
// pspReference replaced by psp when psp is not empty.
func variant(t *testing.T, raw []byte, tag, psp string) []byte {
	t.Helper()
	if psp != "" {
		raw = bytes.ReplaceAll(raw, []byte(samplePSP), []byte(psp))
	}
	return editEvent(t, raw, func(ev map[string]any) {
		rc := ev["requestContext"].(map[string]any)
		rc["requestId"] = fmt.Sprintf("%s-%s", rc["requestId"], tag)
		if k, ok := ev["headers"].(map[string]any)["Idempotency-Key"].(string); ok {
			setHeader(ev, "Idempotency-Key", k+"-"+tag)
		}
	})
}

// withBody replaces an event's body (a JSON object).
func withBody(t *testing.T, raw []byte, body map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return editEvent(t, raw, func(ev map[string]any) { ev["body"] = string(b) })
}

func eventBody(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var ev apiEvent
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Body == nil {
		t.Fatalf("event without body: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(*ev.Body), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var errorCodeRE = regexp.MustCompile(`^yp_[0-9]{4}$`)

// TestLambdaFunctionsServeSampleEvents runs each function's real bootstrap
// under the Lambda Runtime API harness against DynamoDB and Secrets Manager
// on moto and the upstream simulator, feeds it the events/ samples, and
// checks the proxy responses, the request logs, the EMF metrics, the X-Ray
// segments and that no secret reaches a log.
func TestLambdaFunctionsServeSampleEvents(t *testing.T) {
	e := newLambdaEnv(t)

	// Start every function first: their cold starts overlap.
	fns := map[string]*function{}
	for _, id := range []string{"ConfigFunction", "SessionsFunction", "PaymentsFunction", "ModificationsFunction"} {
		fns[id] = e.start(t, id)
	}
	// TODO(issue 5): NotificationsFunction (events/notification-*.json: 2xx
	// "[accepted]" for valid HMAC + basic auth, 401 for notification-bad-hmac,
	// one delivery enqueued on SQS per subscription) and
	// WebhookDispatcherFunction (events/sqs-deliveries.json: batchItemFailures)
	// join this test once functions/notifications and functions/dispatcher
	// exist; TestLambdaFunctionsPendingNotificationsAndDispatcher fails as a
	// reminder until then.

	var allInvocations []invocation
	record := func(inv invocation) invocation {
		allInvocations = append(allInvocations, inv)
		return inv
	}

	t.Run("config", func(t *testing.T) {
		inv := record(fns["ConfigFunction"].invoke(t, sampleEvent(t, "config")))
		body := wantStatus(t, inv, http.StatusOK)
		if body["clientToken"] != "test_DEMOCLIENTKEY0000000000000000" || body["environment"] != "test" {
			t.Errorf("config body %v", body)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		raw := sampleEvent(t, "sessions")
		inv := record(fns["SessionsFunction"].invoke(t, raw))
		body := wantStatus(t, inv, http.StatusOK)
		if id, _ := body["id"].(string); id == "" || body["sessionData"] == "" || body["reference"] != "order-1001" || body["expiresAt"] == nil {
			t.Errorf("session body %v", body)
		}
		if _, ok := e.sim.Session(body["id"].(string)); !ok {
			t.Errorf("the simulator has no session %v", body["id"])
		}
		// The same event again is an idempotent replay.
		again := record(fns["SessionsFunction"].invoke(t, raw))
		if again.resp.StatusCode != http.StatusOK || again.resp.Body != inv.resp.Body || again.resp.header("Idempotency-Replayed") != "true" {
			t.Errorf("replay: %d %s (Idempotency-Replayed %q)", again.resp.StatusCode, again.resp.Body, again.resp.header("Idempotency-Replayed"))
		}
	})

	payments := fns["PaymentsFunction"]
	// pay creates an authorised (not captured: manual capture) payment with
	// the payments sample and returns its pspReference.
	pay := func(t *testing.T, tag string) string {
		t.Helper()
		inv := record(payments.invoke(t, variant(t, sampleEvent(t, "payments"), tag, "")))
		body := wantStatus(t, inv, http.StatusOK)
		psp, _ := body["pspReference"].(string)
		if body["resultCode"] != "Authorised" || psp == "" || body["merchantReference"] != "order-1002" {
			t.Fatalf("payment %s: %v", tag, body)
		}
		return psp
	}

	t.Run("payment-methods", func(t *testing.T) {
		inv := record(payments.invoke(t, sampleEvent(t, "payment-methods")))
		body := wantStatus(t, inv, http.StatusOK)
		methods, _ := body["paymentMethods"].([]any)
		if len(methods) == 0 {
			t.Errorf("no payment methods: %v", body)
		}
	})

	t.Run("payments", func(t *testing.T) {
		inv := record(payments.invoke(t, sampleEvent(t, "payments")))
		body := wantStatus(t, inv, http.StatusOK)
		psp, _ := body["pspReference"].(string)
		if body["resultCode"] != "Authorised" || psp == "" {
			t.Fatalf("payment: %v", body)
		}
		if p, ok := e.sim.Payment(psp); !ok || p.MerchantAccount != "DemoShopECOM" {
			t.Errorf("simulator payment %s: %+v (found %v)", psp, p, ok)
		}
	})

	t.Run("payments-details", func(t *testing.T) {
		// A 3-D Secure challenge, then the details sample carrying the
		// challenge's result.
		start := eventBody(t, sampleEvent(t, "payments"))
		pm := start["paymentMethod"].(map[string]any)
		pm["encryptedCardNumber"] = "test_5454545454545454"
		delete(pm, "holderName")
		start["reference"] = "order-1002-3ds"
		inv := record(payments.invoke(t, withBody(t, variant(t, sampleEvent(t, "payments"), "3ds", ""), start)))
		body := wantStatus(t, inv, http.StatusOK)
		action, _ := json.Marshal(body["action"])
		if body["resultCode"] != "ChallengeShopper" || body["action"] == nil {
			t.Fatalf("3DS payment: %v", body)
		}
		details, err := simulator.DetailsFor(action, true)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(details, &d); err != nil {
			t.Fatal(err)
		}
		raw := withBody(t, sampleEvent(t, "payments-details"), map[string]any{"details": d})
		inv = record(payments.invoke(t, raw))
		body = wantStatus(t, inv, http.StatusOK)
		if body["resultCode"] != "Authorised" || body["pspReference"] == "" {
			t.Errorf("details: %v", body)
		}

		// The sample as it is (a threeDSResult for no payment of the
		// simulator) is refused with a service error.
		inv = record(payments.invoke(t, variant(t, sampleEvent(t, "payments-details"), "asis", "")))
		if inv.resp.StatusCode < 400 {
			t.Fatalf("sample details without a challenge: %d %s", inv.resp.StatusCode, inv.resp.Body)
		}
		if code, _ := inv.resp.json(t)["errorCode"].(string); !errorCodeRE.MatchString(code) {
			t.Errorf("error body %s", inv.resp.Body)
		}
	})

	t.Run("stored-payment-methods", func(t *testing.T) {
		// Store a card for the sample's shopper, then delete it with the
		// sample (its id replaced by the stored one).
		const shopper = "guest-7f3a9c"
		start := eventBody(t, sampleEvent(t, "payments"))
		start["shopperReference"] = shopper
		start["storePaymentMethod"] = true
		start["reference"] = "order-1002-store"
		inv := record(payments.invoke(t, withBody(t, variant(t, sampleEvent(t, "payments"), "store", ""), start)))
		wantStatus(t, inv, http.StatusOK)
		ids := e.sim.StoredPaymentMethods("DemoShopECOM", shopper)
		if len(ids) != 1 {
			t.Fatalf("stored methods of %s: %v", shopper, ids)
		}
		raw := bytes.ReplaceAll(sampleEvent(t, "stored-payment-methods-delete"), []byte("M5N7TQ4TG5PFWR50"), []byte(ids[0]))
		inv = record(payments.invoke(t, raw))
		body := wantStatus(t, inv, http.StatusOK)
		if body["storedPaymentMethodId"] != ids[0] || body["status"] != "deleted" {
			t.Errorf("delete: %v", body)
		}
		if left := e.sim.StoredPaymentMethods("DemoShopECOM", shopper); len(left) != 0 {
			t.Errorf("still stored: %v", left)
		}
	})

	mods := fns["ModificationsFunction"]
	modification := func(t *testing.T, event, tag string, check func(psp string)) {
		t.Helper()
		psp := pay(t, tag)
		inv := record(mods.invoke(t, variant(t, sampleEvent(t, event), tag, psp)))
		body := wantStatus(t, inv, http.StatusOK)
		if body["paymentPspReference"] != psp || body["status"] != "received" || body["pspReference"] == "" || body["pspReference"] == psp {
			t.Errorf("%s: %v", event, body)
		}
		check(psp)
	}
	t.Run("captures", func(t *testing.T) {
		modification(t, "captures", "cap", func(psp string) {
			if p, _ := e.sim.Payment(psp); p.CapturedValue != 1000 {
				t.Errorf("simulator: captured %d, want 1000", p.CapturedValue)
			}
		})
	})
	t.Run("amount-updates", func(t *testing.T) {
		modification(t, "amount-updates", "upd", func(psp string) {
			if p, _ := e.sim.Payment(psp); p.Amount.Value != 1500 {
				t.Errorf("simulator: amount %d, want 1500", p.Amount.Value)
			}
		})
	})
	t.Run("reversals", func(t *testing.T) {
		modification(t, "reversals", "rev", func(psp string) {
			if p, _ := e.sim.Payment(psp); p.State == simulator.StateAuthorised {
				t.Errorf("simulator: still %s after the reversal", p.State)
			}
		})
		// The sample as it is names a payment this deployment does not know.
		inv := record(mods.invoke(t, variant(t, sampleEvent(t, "reversals"), "unknown", "")))
		body := wantStatus(t, inv, http.StatusNotFound)
		if body["errorCode"] != "yp_3006" {
			t.Errorf("unknown payment: %v", body)
		}
	})

	t.Run("init-duration", func(t *testing.T) {
		for id, f := range fns {
			if d := f.h.InitDuration(); d <= 0 {
				t.Errorf("%s: no init duration", id)
			}
			init := logLines(t, f.h.Logs(), func(l map[string]any) bool { return l["msg"] == "init" })
			if len(init) != 1 {
				t.Errorf("%s: %d init log lines, want 1", id, len(init))
			} else if ms, _ := init[0]["initDurationMs"].(float64); ms <= 0 || init[0]["tracing"] != true {
				t.Errorf("%s: init line %v", id, init[0])
			}
			cold := emfLines(f.h.Logs(), "InitDuration")
			if len(cold) != 1 || cold[0]["ColdStarts"] != float64(1) {
				t.Errorf("%s: EMF InitDuration documents %v", id, cold)
			}
		}
	})

	t.Run("request-logs-and-metrics", func(t *testing.T) {
		byTrace := map[string]invocation{}
		for _, inv := range allInvocations {
			byTrace[inv.traceRoot] = inv
		}
		seen := 0
		for id, f := range fns {
			fnName := "paysvc-it-" + id
			for _, l := range logLines(t, f.h.Logs(), func(l map[string]any) bool { return l["msg"] == "request" }) {
				tr, _ := l["traceId"].(string)
				inv, ok := byTrace[tr]
				if !ok {
					t.Errorf("%s: request log traceId %q is not an invocation's trace (the Lambda trace header wins over the event's)", id, tr)
					continue
				}
				seen++
				if l["requestId"] != inv.event.RequestContext.RequestID || l["status"] != float64(inv.resp.StatusCode) {
					t.Errorf("%s: log %v for response %d of %s", id, l, inv.resp.StatusCode, inv.event.RequestContext.RequestID)
				}
				if inv.event.PathParameters["siteId"] != "" && (l["site"] != "site_demo" || l["merchant"] != "m_demo") {
					t.Errorf("%s: log without site/merchant: %v", id, l)
				}
			}
			reqs := emfLines(f.h.Logs(), "Requests")
			if len(reqs) == 0 {
				t.Errorf("%s: no EMF Requests metric", id)
			}
			for _, m := range reqs {
				if m["Service"] != "paysvc" || m["Function"] != fnName {
					t.Errorf("%s: EMF dimensions %v", id, m)
				}
			}
			up := emfLines(f.h.Logs(), "UpstreamRequests")
			if (id == "ConfigFunction") != (len(up) == 0) {
				t.Errorf("%s: %d EMF UpstreamRequests documents", id, len(up))
			}
			for _, m := range up {
				if m["Function"] != fnName || m["UpstreamErrors"] != float64(0) {
					t.Errorf("%s: upstream metric %v", id, m)
				}
			}
		}
		if seen != len(allInvocations) {
			t.Errorf("%d request log lines for %d invocations", seen, len(allInvocations))
		}
	})

	t.Run("x-ray", func(t *testing.T) {
		// Every sampled invocation sent its request subsegment with the
		// DynamoDB and (but for config) upstream subsegments under it.
		segs := e.daemon.waitFor(t, len(allInvocations), 10*time.Second)
		byTrace := map[string]xraySegment{}
		for _, s := range segs {
			if s.Type == "subsegment" && s.ParentID != "" {
				byTrace[s.TraceID] = s
			}
		}
		for _, inv := range allInvocations {
			s, ok := byTrace[inv.traceRoot]
			if !ok {
				t.Errorf("no segment for %s %s (trace %s)", inv.event.HTTPMethod, inv.event.Path, inv.traceRoot)
				continue
			}
			var dynamoOps, upstreamCalls int
			for _, c := range s.flatten(t)[1:] {
				if c.Name == "DynamoDB" && c.Namespace == "aws" {
					dynamoOps++
				}
				if c.Namespace == "remote" && c.HTTP != nil && strings.HasPrefix(c.HTTP.Request.URL, e.simURL) {
					upstreamCalls++
				}
			}
			if dynamoOps == 0 {
				t.Errorf("%s %s: no DynamoDB subsegment", inv.event.HTTPMethod, inv.event.Path)
			}
			callsUpstream := inv.event.Resource != "/v1/ecom/config" && !inv.resp.isReplay() && inv.resp.StatusCode != http.StatusNotFound
			if callsUpstream && upstreamCalls == 0 {
				t.Errorf("%s %s: no upstream subsegment", inv.event.HTTPMethod, inv.event.Path)
			}
			if s.Annotations["status"] != float64(inv.resp.StatusCode) || (inv.event.PathParameters["siteId"] != "" && s.Annotations["siteId"] != "site_demo") {
				t.Errorf("%s %s: annotations %v", inv.event.HTTPMethod, inv.event.Path, s.Annotations)
			}
			body := inv.resp.json(t)
			if rc, _ := body["resultCode"].(string); rc != "" && s.Annotations["resultCode"] != rc {
				t.Errorf("%s: resultCode annotation %v, want %s", inv.event.Path, s.Annotations["resultCode"], rc)
			}
			if ec, _ := body["errorCode"].(string); ec != "" && s.Annotations["errorCode"] != ec {
				t.Errorf("%s: errorCode annotation %v, want %s", inv.event.Path, s.Annotations["errorCode"], ec)
			}
			if psp, _ := body["pspReference"].(string); psp != "" && s.Annotations["pspReference"] == nil {
				t.Errorf("%s: no pspReference annotation: %v", inv.event.Path, s.Annotations)
			}
		}
	})

	// Last: every line every function wrote.
	t.Run("no-secrets-in-logs", func(t *testing.T) {
		for id, f := range fns {
			logs := f.h.Logs()
			if !strings.Contains(logs, `"msg":"request"`) {
				t.Fatalf("%s: no request logs captured", id)
			}
			for what, secret := range e.secrets {
				if strings.Contains(logs, secret) {
					t.Errorf("%s: the %s appears in the logs", id, what)
				}
			}
			// Every line is JSON (structured logs and EMF alike).
			sc := bufio.NewScanner(strings.NewReader(logs))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if !json.Valid(sc.Bytes()) {
					t.Errorf("%s: log line is not JSON: %q", id, sc.Text())
				}
			}
		}
	})
}

// TestLambdaFunctionsPendingNotificationsAndDispatcher is the reminder for
// the two functions that do not exist yet.
func TestLambdaFunctionsPendingNotificationsAndDispatcher(t *testing.T) {
	for _, name := range []string{"notifications", "dispatcher"} {
		if _, err := os.Stat(repoRoot + "/functions/" + name + "/main.go"); err == nil {
			t.Errorf("functions/%s exists now: add its sample events to TestLambdaFunctionsServeSampleEvents (see the TODO there) and remove it from this test", name)
		}
	}
}

func (r proxyResponse) isReplay() bool { return r.header("Idempotency-Replayed") == "true" }

// logLines returns the JSON log lines that match.
func logLines(t *testing.T, logs string, match func(map[string]any) bool) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && match(l) {
			out = append(out, l)
		}
	}
	return out
}

// emfLines returns the EMF documents that declare metric.
func emfLines(logs, metric string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var doc struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string     `json:"Namespace"`
					Dimensions [][]string `json:"Dimensions"`
					Metrics    []struct {
						Name string `json:"Name"`
					} `json:"Metrics"`
				} `json:"CloudWatchMetrics"`
			} `json:"_aws"`
		}
		if json.Unmarshal(sc.Bytes(), &doc) != nil {
			continue
		}
		for _, d := range doc.AWS.CloudWatchMetrics {
			for _, m := range d.Metrics {
				// The template's alarms read namespace PaySvc, dimensions [Service, Function].
				if m.Name == metric && d.Namespace == "PaySvc" && len(d.Dimensions) > 0 &&
					strings.Join(d.Dimensions[0], ",") == "Service,Function" {
					var l map[string]any
					_ = json.Unmarshal(sc.Bytes(), &l)
					out = append(out, l)
				}
			}
		}
	}
	return out
}

// xraySegment is the part of an X-Ray segment document the test reads.
type xraySegment struct {
	Name        string            `json:"name"`
	TraceID     string            `json:"trace_id"`
	ParentID    string            `json:"parent_id"`
	Type        string            `json:"type"`
	Namespace   string            `json:"namespace"`
	Annotations map[string]any    `json:"annotations"`
	HTTP        *xrayHTTP         `json:"http"`
	Subsegments []json.RawMessage `json:"subsegments"`
}

type xrayHTTP struct {
	Request struct {
		URL string `json:"url"`
	} `json:"request"`
}

func (s xraySegment) flatten(t *testing.T) []xraySegment {
	t.Helper()
	out := []xraySegment{s}
	for _, raw := range s.Subsegments {
		var c xraySegment
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c.flatten(t)...)
	}
	return out
}

// xrayDaemon is a fake X-Ray daemon: a UDP listener on 127.0.0.1.
type xrayDaemon struct {
	conn *net.UDPConn
	mu   sync.Mutex
	segs []xraySegment
	bad  []string
}

func newXrayDaemon(t *testing.T) *xrayDaemon {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	d := &xrayDaemon{conn: conn}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			_, body, ok := bytes.Cut(buf[:n], []byte("\n"))
			var s xraySegment
			d.mu.Lock()
			if !ok || json.Unmarshal(body, &s) != nil {
				d.bad = append(d.bad, string(buf[:n]))
			} else {
				d.segs = append(d.segs, s)
			}
			d.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return d
}

func (d *xrayDaemon) addr() string { return d.conn.LocalAddr().String() }

// waitFor waits until at least n segment documents arrived (UDP from other
// processes: give them a moment) and returns them.
func (d *xrayDaemon) waitFor(t *testing.T, n int, timeout time.Duration) []xraySegment {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d.mu.Lock()
		segs, bad := append([]xraySegment(nil), d.segs...), len(d.bad)
		d.mu.Unlock()
		if bad > 0 {
			t.Errorf("%d packets were not daemon-protocol segments", bad)
		}
		if len(segs) >= n || time.Now().After(deadline) {
			return segs
		}
		time.Sleep(20 * time.Millisecond)
	}
}
