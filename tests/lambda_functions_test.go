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
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/yp/paysvc/shared/app"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/openapicheck"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/verify"
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

// lambdaEnv is the AWS side of the test: DynamoDB, Secrets Manager and SQS
// on moto, the upstream simulator, the seeded tenant, the merchant's webhook
// endpoint and a fake X-Ray daemon.
type lambdaEnv struct {
	endpoint  string
	table     string
	secretARN string
	sqs       *sqs.Client
	queueURL  string
	dlqURL    string
	sim       *simulator.Simulator
	simURL    string
	daemon    *xrayDaemon
	webhooks  *webhookReceiver
	aws       *awsRecorder // each function's AWS calls, checked against its IAM role
	// canaryARN is the canary merchant's key secret of the smoke test
	// (newCanary; "" until then).
	canaryARN string
	// smokeTargets is the smoke test's PAYSVC_SMOKE_TARGETS (startSmokeTest).
	smokeTargets string
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

// motoTable creates table on moto, deleted after t.
func motoTable(t *testing.T, ddb *dynamodb.Client, table string) {
	t.Helper()
	if err := dynamo.CreateTable(context.Background(), ddb, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
}

// motoQueues creates the deliveries queue name and its DLQ on moto,
// deleted after t.
func motoQueues(t *testing.T, c *sqs.Client, name string) (url, dlq string) {
	t.Helper()
	url, dlq, err := sqsqueue.CreateQueues(context.Background(), c, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, u := range []string{url, dlq} {
			_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	return url, dlq
}

// secretsClient is a Secrets Manager client of the moto server at endpoint.
func secretsClient(endpoint string) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(aws.Config{Region: moto.Region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), BaseEndpoint: aws.String(endpoint)})
}

// motoSecret creates secret name with value on moto, deleted after t, and
// returns its ARN.
func motoSecret(t *testing.T, endpoint, name, value string) string {
	t.Helper()
	sm := secretsClient(endpoint)
	out, err := sm.CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
	if err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	t.Cleanup(func() {
		_, _ = sm.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{
			SecretId: out.ARN, ForceDeleteWithoutRecovery: aws.Bool(true),
		})
	})
	return aws.ToString(out.ARN)
}

func newLambdaEnv(t *testing.T) *lambdaEnv {
	t.Helper()
	ctx := context.Background()
	e := &lambdaEnv{endpoint: moto.Endpoint(t), table: moto.TableName(t), daemon: newXrayDaemon(t)}
	e.aws = newAWSRecorder(t, e.endpoint)
	t.Cleanup(func() { e.aws.check(t, e) })

	// DynamoDB table.
	ddb := moto.DynamoClient(t, e.endpoint)
	motoTable(t, ddb, e.table)

	// The deliveries queue and its DLQ.
	e.sqs = moto.SQSClient(t, e.endpoint)
	e.queueURL, e.dlqURL = motoQueues(t, e.sqs, e.table+"-deliveries")

	// The upstream secret, as deployed (JSON in Secrets Manager).
	upstreamKey := "sim_it_" + randomHex(t, 16)
	secretJSON, _ := json.Marshal(map[string]string{
		"apiKey": upstreamKey, "hmacKey": sampleHMACKey,
		"notificationUsername": sampleNotifyUser, "notificationPassword": sampleNotifyPassword,
	})
	e.secretARN = motoSecret(t, e.endpoint, "paysvc/it/"+e.table, string(secretJSON))

	// The upstream simulator, accepting only the secret's API key.
	var err error
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
	// and the DynamoDB store, with a webhook subscription to a local
	// endpoint (PAYSVC_WEBHOOK_ALLOW_LOCAL lets the dispatcher reach it).
	webhookSecret, err := tenant.NewWebhookSecret()
	if err != nil {
		t.Fatal(err)
	}
	e.webhooks = newWebhookReceiver(t, webhookSecret)
	demo, err := provision.Demo(tenant.EnvTest)
	if err != nil {
		t.Fatal(err)
	}
	demo.APIKeys[0].Key = sampleAPIKey
	demo.Subscriptions = []provision.SeedSub{{
		ID: "sub_demo", MerchantID: "m_demo", URL: e.webhooks.url + "/webhooks", Secret: webhookSecret, AllowInsecureLocal: true,
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
		"PAYSVC_QUEUE_URL":           e.queueURL,
		"PAYSVC_DLQ_URL":             e.dlqURL,
		"PAYSVC_EXPIRY_NOTICE":       "24h",

		"PAYSVC_SMOKE_TARGETS":     e.smokeTargets,
		"PAYSVC_CANARY_SECRET_ARN": e.canaryARN,
	}
	tpl := loadTemplate(t)
	fn, ok := tpl.functions()[logicalID]
	if !ok {
		t.Fatalf("no function %s in template.yaml", logicalID)
	}
	env := map[string]string{
		// A published version, as the live alias runs (the harness's
		// default is $LATEST): the EMF Version dimension.
		"AWS_LAMBDA_FUNCTION_VERSION": testFunctionVersion,
		"AWS_ENDPOINT_URL":            e.aws.endpointFor(t, logicalID),
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_XRAY_DAEMON_ADDRESS":     e.daemon.addr(),
	}
	if logicalID == "WebhookDispatcherFunction" {
		env["PAYSVC_WEBHOOK_ALLOW_LOCAL"] = "true" // the receiver is on 127.0.0.1
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
		// Failure bounds only (no function here waits on its deadline):
		// generous, so that a loaded machine does not time an answer out.
		Timeout:     60 * time.Second,
		InitTimeout: 60 * time.Second,
	})
	return &function{name: name, h: h, e: e}
}

// invocation is one proxy event sent and its outcome.
type invocation struct {
	event     apiEvent
	resp      proxyResponse
	traceRoot string
	// refusedFirst: refused before the site was resolved (its log has no
	// site, it calls no store and no upstream).
	refusedFirst bool
}

// invokeRaw sends any event with a fresh sampled trace header and returns
// the payload and the trace's Root id.
func (f *function) invokeRaw(t *testing.T, raw []byte) (json.RawMessage, string) {
	t.Helper()
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
	return res.Payload, root
}

// invoke sends the raw API Gateway event and decodes the proxy response.
func (f *function) invoke(t *testing.T, raw []byte) invocation {
	t.Helper()
	var ev apiEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("event: %v", err)
	}
	payload, root := f.invokeRaw(t, raw)
	var resp proxyResponse
	if err := json.Unmarshal(payload, &resp); err != nil {
		t.Fatalf("%s: response is not a proxy response: %v: %s", f.name, err, payload)
	}
	inv := invocation{event: ev, resp: resp, traceRoot: root}
	checkProxyResponse(t, inv)
	return inv
}

// accepted reports the upstream notification acknowledgement, the one
// response that is not JSON.
func (inv invocation) accepted() bool {
	return inv.event.Resource == "/v1/notifications/upstream" && inv.resp.StatusCode == http.StatusOK
}

// checkProxyResponse asserts what every API response has: a JSON body and
// content type (the notification acknowledgement: text "[accepted]") and
// the request id of API Gateway's requestContext.
func checkProxyResponse(t *testing.T, inv invocation) {
	t.Helper()
	r := inv.resp
	if r.IsBase64Encoded {
		t.Errorf("%s: base64 body", inv.event.Path)
	}
	if inv.accepted() {
		if ct := r.header("Content-Type"); !strings.HasPrefix(ct, "text/plain") || r.Body != "[accepted]" {
			t.Errorf("notification acknowledgement: Content-Type %q body %q", ct, r.Body)
		}
	} else if ct := r.header("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q", inv.event.HTTPMethod, inv.event.Path, ct)
	}
	if id := r.header("X-Request-Id"); id != inv.event.RequestContext.RequestID || id == "" {
		t.Errorf("%s %s: X-Request-Id %q, want the requestContext.requestId %q", inv.event.HTTPMethod, inv.event.Path, id, inv.event.RequestContext.RequestID)
	}
	if !inv.accepted() && !json.Valid([]byte(r.Body)) {
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
	return readFile(t, repoRoot+"/events/"+name+".json")
}

// editEvent decodes an event, lets edit change it, and encodes it again.
func editEvent(t *testing.T, raw []byte, edit func(ev map[string]any)) []byte {
	t.Helper()
	var ev map[string]any
	decodeJSON(t, raw, &ev)
	edit(ev)
	return encodeJSON(t, ev)
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
	b := encodeJSON(t, body)
	return editEvent(t, raw, func(ev map[string]any) { ev["body"] = string(b) })
}

func eventBody(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var ev apiEvent
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Body == nil {
		t.Fatalf("event without body: %v", err)
	}
	var m map[string]any
	decodeJSON(t, []byte(*ev.Body), &m)
	return m
}

var errorCodeRE = regexp.MustCompile(`^yp_[0-9]{4}$`)

// TestLambdaFunctionsServeSampleEvents runs each function's real bootstrap
// under the Lambda Runtime API harness against DynamoDB and Secrets Manager
// on moto and the upstream simulator, feeds it the events/ samples, and
// checks the proxy responses, the request logs, the EMF metrics, the X-Ray
// segments and that no secret reaches a log. The steps run in order: the
// last ones check what every earlier invocation logged and traced.
func TestLambdaFunctionsServeSampleEvents(t *testing.T) {
	r := &lambdaRun{e: newLambdaEnv(t), fns: map[string]*function{}}

	// Start every function of the template first: their cold starts
	// overlap. A function whose package does not exist yet (still being
	// written, tests/template_env_test.go pendingFunctions) is reported and
	// its events are skipped.
	for id := range loadTemplate(t).functions() {
		if id == smokeTestFunction {
			continue // it serves CodeDeploy, not events (TestLambdaSmokeTestGatesDeployments)
		}
		dir := wantFunctions[id]
		if _, err := os.Stat(repoRoot + "/functions/" + dir + "/main.go"); err != nil && pendingFunctions[dir] {
			t.Logf("pending: %s (functions/%s does not exist yet) is not exercised", id, dir)
			continue
		}
		r.fns[id] = r.e.start(t, id)
	}
	for _, step := range lambdaSteps {
		t.Run(step.name, func(t *testing.T) { step.run(r, t) })
	}
}

// lambdaSteps are the steps of TestLambdaFunctionsServeSampleEvents, in order.
var lambdaSteps = []struct {
	name string
	run  func(r *lambdaRun, t *testing.T)
}{
	{"config", (*lambdaRun).config},
	{"sessions", (*lambdaRun).sessions},
	{"payment-methods", (*lambdaRun).paymentMethods},
	{"payments", (*lambdaRun).payments},
	{"payments-details", (*lambdaRun).paymentsDetails},
	{"stored-payment-methods", (*lambdaRun).storedPaymentMethods},
	{"captures", (*lambdaRun).captures},
	{"amount-updates", (*lambdaRun).amountUpdates},
	{"reversals", (*lambdaRun).reversals},
	{"notifications", (*lambdaRun).notifications},
	{"dispatcher", (*lambdaRun).dispatcher},
	{"refunds", (*lambdaRun).refunds},
	{"lookups", (*lambdaRun).lookups},
	{"webhooks", (*lambdaRun).webhooks},
	{"repeated-headers", (*lambdaRun).repeatedHeaders},
	{"optional-bodies", (*lambdaRun).optionalBodies},
	{"scheduler", (*lambdaRun).scheduler},
	{"init-duration", (*lambdaRun).initDuration},
	{"contract", (*lambdaRun).contract},
	{"request-logs-and-metrics", (*lambdaRun).requestLogsAndMetrics},
	{"x-ray", (*lambdaRun).xRay},
	{"no-secrets-in-logs", (*lambdaRun).noSecretsInLogs},
}

// lambdaRun is the state the steps share: the environment, the running
// functions and every invocation made so far.
type lambdaRun struct {
	e           *lambdaEnv
	fns         map[string]*function
	invocations []invocation
}

// need returns the function id, skipping the step while it is pending.
func (r *lambdaRun) need(t *testing.T, id string) *function {
	t.Helper()
	if r.fns[id] == nil {
		t.Skipf("%s does not exist yet (pending)", id)
	}
	return r.fns[id]
}

// record keeps inv for the steps that check every invocation.
func (r *lambdaRun) record(inv invocation) invocation {
	r.invocations = append(r.invocations, inv)
	return inv
}

// pay creates an authorised (not captured: manual capture) payment with
// the payments sample and returns its pspReference.
func (r *lambdaRun) pay(t *testing.T, tag string) string {
	t.Helper()
	inv := r.record(r.fns["PaymentsFunction"].invoke(t, variant(t, sampleEvent(t, "payments"), tag, "")))
	body := wantStatus(t, inv, http.StatusOK)
	psp, _ := body["pspReference"].(string)
	if body["resultCode"] != "Authorised" || psp == "" || body["merchantReference"] != "order-1002" {
		t.Fatalf("payment %s: %v", tag, body)
	}
	return psp
}

// modification applies the sample event to a fresh payment and checks
// the simulator received the modification (kind, amount).
func (r *lambdaRun) modification(t *testing.T, event, tag, kind string, value int64) {
	t.Helper()
	psp := r.pay(t, tag)
	inv := r.record(r.fns["ModificationsFunction"].invoke(t, variant(t, sampleEvent(t, event), tag, psp)))
	body := wantStatus(t, inv, http.StatusOK)
	modPSP, _ := body["pspReference"].(string)
	if body["paymentPspReference"] != psp || body["status"] != "received" || modPSP == "" || modPSP == psp {
		t.Errorf("%s: %v", event, body)
	}
	p, _ := r.e.sim.Payment(psp)
	for _, m := range p.Modifications {
		if m.PSPReference == modPSP {
			if m.Kind != kind || (value != 0 && m.Amount.Value != value) {
				t.Errorf("simulator: modification %+v, want %s of %d", m, kind, value)
			}
			return
		}
	}
	t.Errorf("simulator: payment %s has no modification %s: %+v", psp, modPSP, p.Modifications)
}

func (r *lambdaRun) config(t *testing.T) {
	inv := r.record(r.fns["ConfigFunction"].invoke(t, sampleEvent(t, "config")))
	body := wantStatus(t, inv, http.StatusOK)
	if body["clientToken"] != "test_DEMOCLIENTKEY0000000000000000" || body["environment"] != "test" {
		t.Errorf("config body %v", body)
	}
}

func (r *lambdaRun) sessions(t *testing.T) {
	raw := sampleEvent(t, "sessions")
	inv := r.record(r.fns["SessionsFunction"].invoke(t, raw))
	body := wantStatus(t, inv, http.StatusOK)
	if id, _ := body["id"].(string); id == "" || body["sessionData"] == "" || body["reference"] != "order-1001" || body["expiresAt"] == nil {
		t.Errorf("session body %v", body)
	}
	if _, ok := r.e.sim.Session(body["id"].(string)); !ok {
		t.Errorf("the simulator has no session %v", body["id"])
	}
	// The same event again is an idempotent replay.
	again := r.record(r.fns["SessionsFunction"].invoke(t, raw))
	if again.resp.StatusCode != http.StatusOK || again.resp.Body != inv.resp.Body || !again.resp.isReplay() {
		t.Errorf("replay: %d %s (Idempotent-Replayed %q)", again.resp.StatusCode, again.resp.Body, again.resp.header("Idempotent-Replayed"))
	}
}

func (r *lambdaRun) paymentMethods(t *testing.T) {
	inv := r.record(r.fns["PaymentsFunction"].invoke(t, sampleEvent(t, "payment-methods")))
	body := wantStatus(t, inv, http.StatusOK)
	methods, _ := body["paymentMethods"].([]any)
	if len(methods) == 0 {
		t.Errorf("no payment methods: %v", body)
	}
}

func (r *lambdaRun) payments(t *testing.T) {
	inv := r.record(r.fns["PaymentsFunction"].invoke(t, sampleEvent(t, "payments")))
	body := wantStatus(t, inv, http.StatusOK)
	psp, _ := body["pspReference"].(string)
	if body["resultCode"] != "Authorised" || psp == "" {
		t.Fatalf("payment: %v", body)
	}
	if p, ok := r.e.sim.Payment(psp); !ok || p.MerchantAccount != "DemoShopECOM" {
		t.Errorf("simulator payment %s: %+v (found %v)", psp, p, ok)
	}
}

func (r *lambdaRun) paymentsDetails(t *testing.T) {
	// A 3-D Secure challenge, then the details sample carrying the
	// challenge's result.
	start := eventBody(t, sampleEvent(t, "payments"))
	pm := start["paymentMethod"].(map[string]any)
	pm["encryptedCardNumber"] = "test_5454545454545454"
	delete(pm, "holderName")
	start["reference"] = "order-1002-3ds"
	inv := r.record(r.fns["PaymentsFunction"].invoke(t, withBody(t, variant(t, sampleEvent(t, "payments"), "3ds", ""), start)))
	body := wantStatus(t, inv, http.StatusOK)
	action, _ := json.Marshal(body["action"])
	if body["resultCode"] != "ChallengeShopper" || body["action"] == nil {
		t.Fatalf("3DS payment: %v", body)
	}
	details := detailsFor(t, action, true)
	var d map[string]any
	decodeJSON(t, details, &d)
	raw := withBody(t, sampleEvent(t, "payments-details"), map[string]any{"details": d})
	inv = r.record(r.fns["PaymentsFunction"].invoke(t, raw))
	body = wantStatus(t, inv, http.StatusOK)
	if body["resultCode"] != "Authorised" || body["pspReference"] == "" {
		t.Errorf("details: %v", body)
	}

	// The sample as it is (a threeDSResult for no payment of the
	// simulator) is refused with a service error.
	inv = r.record(r.fns["PaymentsFunction"].invoke(t, variant(t, sampleEvent(t, "payments-details"), "asis", "")))
	if inv.resp.StatusCode < 400 {
		t.Fatalf("sample details without a challenge: %d %s", inv.resp.StatusCode, inv.resp.Body)
	}
	if code, _ := inv.resp.json(t)["errorCode"].(string); !errorCodeRE.MatchString(code) {
		t.Errorf("error body %s", inv.resp.Body)
	}
}

func (r *lambdaRun) storedPaymentMethods(t *testing.T) {
	// Store a card for the sample's shopper, then delete it with the
	// sample (its id replaced by the stored one).
	const shopper = "guest-7f3a9c"
	start := eventBody(t, sampleEvent(t, "payments"))
	start["shopperReference"] = shopper
	start["storePaymentMethod"] = true
	start["recurringProcessingModel"] = "CardOnFile"
	start["reference"] = "order-1002-store"
	inv := r.record(r.fns["PaymentsFunction"].invoke(t, withBody(t, variant(t, sampleEvent(t, "payments"), "store", ""), start)))
	wantStatus(t, inv, http.StatusOK)
	ids := r.e.sim.StoredPaymentMethods("DemoShopECOM", shopper)
	if len(ids) != 1 {
		t.Fatalf("stored methods of %s: %v", shopper, ids)
	}
	raw := bytes.ReplaceAll(sampleEvent(t, "stored-payment-methods-delete"), []byte("M5N7TQ4TG5PFWR50"), []byte(ids[0]))
	inv = r.record(r.fns["PaymentsFunction"].invoke(t, raw))
	body := wantStatus(t, inv, http.StatusOK)
	if body["storedPaymentMethodId"] != ids[0] || body["status"] != "deleted" {
		t.Errorf("delete: %v", body)
	}
	if left := r.e.sim.StoredPaymentMethods("DemoShopECOM", shopper); len(left) != 0 {
		t.Errorf("still stored: %v", left)
	}
}

func (r *lambdaRun) captures(t *testing.T) {
	r.modification(t, "captures", "cap", simulator.ModCapture, 1000)
}

func (r *lambdaRun) amountUpdates(t *testing.T) {
	r.modification(t, "amount-updates", "upd", simulator.ModAmountUpdate, 1500)
}

func (r *lambdaRun) reversals(t *testing.T) {
	r.modification(t, "reversals", "rev", simulator.ModCancel, 0)
	// The sample as it is names a payment this deployment does not know.
	inv := r.record(r.fns["ModificationsFunction"].invoke(t, variant(t, sampleEvent(t, "reversals"), "unknown", "")))
	body := wantStatus(t, inv, http.StatusNotFound)
	if body["errorCode"] != "yp_3006" {
		t.Errorf("unknown payment: %v", body)
	}
}

func (r *lambdaRun) refunds(t *testing.T) {
	mods := r.fns["ModificationsFunction"]
	psp := r.pay(t, "rfd")
	wantStatus(t, r.record(mods.invoke(t, variant(t, sampleEvent(t, "captures"), "rfd", psp))), http.StatusOK)
	modification := func(tag string) map[string]any {
		return wantStatus(t, r.record(mods.invoke(t, variant(t, sampleEvent(t, "refunds"), tag, psp))), http.StatusOK)
	}
	body := modification("rfd")
	refund, _ := body["pspReference"].(string)
	if body["paymentPspReference"] != psp || body["status"] != "received" || refund == "" || refund == psp {
		t.Errorf("refund: %v", body)
	}
	if p, _ := r.e.sim.Payment(psp); p.RefundedValue != 400 {
		t.Errorf("simulator refunded %d, want 400", p.RefundedValue)
	}
	modification("rfd2")
	// 1000 captured, 800 refunded or in flight: 400 more is refused.
	over := wantStatus(t, r.record(mods.invoke(t, variant(t, sampleEvent(t, "refunds"), "rfd3", psp))), http.StatusBadRequest)
	if over["errorCode"] != "yp_2002" {
		t.Errorf("over-refund: %v", over)
	}
}

func (r *lambdaRun) lookups(t *testing.T) {
	f := r.need(t, "LookupsFunction")
	psp := r.pay(t, "look")
	body := wantStatus(t, r.record(f.invoke(t, variant(t, sampleEvent(t, "payment-lookup"), "look", psp))), http.StatusOK)
	if body["pspReference"] != psp || body["state"] != "Authorised" || len(body["timeline"].([]any)) == 0 {
		t.Errorf("lookup: %v", body)
	}
	// The sample's payment exists once its sample notifications (the
	// notifications step) created its record; another merchant's
	// payment is 404 yp_3006.
	if r.fns["NotificationsFunction"] != nil {
		b := wantStatus(t, r.record(f.invoke(t, sampleEvent(t, "payment-lookup"))), http.StatusOK)
		if b["state"] != "Captured" || timeline(b) != "AUTHORISATION CAPTURE" {
			t.Errorf("the sample payment: %v", b)
		}
	}
	other := variant(t, sampleEvent(t, "payment-lookup"), "other", "NOSUCHPAYMENT000")
	if b := wantStatus(t, r.record(f.invoke(t, other)), http.StatusNotFound); b["errorCode"] != "yp_3006" {
		t.Errorf("unknown payment: %v", b)
	}
	// The notifications step routed the sample payment's events to m_demo.
	events := wantStatus(t, r.record(f.invoke(t, sampleEvent(t, "events"))), http.StatusOK)
	if data, _ := events["data"].([]any); r.fns["NotificationsFunction"] != nil && len(data) != 2 {
		t.Errorf("events: %v", events)
	}
	deliveries := wantStatus(t, r.record(f.invoke(t, sampleEvent(t, "webhook-deliveries"))), http.StatusOK)
	if _, ok := deliveries["data"].([]any); !ok {
		t.Errorf("deliveries: %v", deliveries)
	}
}

func (r *lambdaRun) webhooks(t *testing.T) {
	f := r.need(t, "WebhooksFunction")
	e := r.e
	// The sample names a delivery this deployment does not have.
	if b := wantStatus(t, r.record(f.invoke(t, sampleEvent(t, "webhook-delivery-retry"))), http.StatusNotFound); b["errorCode"] != "yp_3007" {
		t.Errorf("unknown delivery: %v", b)
	}
	// The demo subscription is on 127.0.0.1: a deployed function refuses
	// it (SSRF rules) and says so, sending nothing.
	before := len(e.webhooks.received())
	body := wantStatus(t, r.record(f.invoke(t, sampleEvent(t, "webhooks-test"))), http.StatusOK)
	results, _ := body["results"].([]any)
	if body["eventCode"] != "paysvc.webhook.test" || len(results) != 1 {
		t.Fatalf("webhook test: %v", body)
	}
	res := results[0].(map[string]any)
	if res["subscriptionId"] != "sub_demo" || res["delivered"] != false || !strings.Contains(fmt.Sprint(res["error"]), "refused") {
		t.Errorf("webhook test of a loopback target: %v", res)
	}
	if len(e.webhooks.received()) != before {
		t.Error("a refused target received the test event")
	}
	// A real delivery (the dispatcher step delivered it), failed after its
	// attempt: the merchant's retry queues the next attempt.
	if r.fns["NotificationsFunction"] == nil || r.fns["WebhookDispatcherFunction"] == nil {
		t.Skip("no notifications or dispatcher function: no real delivery to retry")
	}
	st := dynamo.New(moto.DynamoClient(t, e.endpoint), e.table, clock.System{})
	ds, err := st.ListDeliveryPage(context.Background(), "m_demo", webhooks.DeliveryQuery{Status: webhooks.StatusDelivered, Limit: 1})
	if err != nil || len(ds) != 1 {
		t.Fatalf("delivered deliveries: %v, %v", ds, err)
	}
	id := ds[0].ID
	if _, err := webhooks.MutateDelivery(context.Background(), st, id, func(d *webhooks.Delivery) error {
		d.Status = webhooks.StatusFailed
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	raw := bytes.ReplaceAll(sampleEvent(t, "webhook-delivery-retry"), []byte(sampleDeliveryID), []byte(id))
	body = wantStatus(t, r.record(f.invoke(t, raw)), http.StatusOK)
	if body["id"] != id || body["status"] != "pending" || body["nextAttempt"] != float64(ds[0].Attempts+1) {
		t.Errorf("retry: %v", body)
	}
	msgs := e.receiveDeliveries(t, 1)
	if !strings.Contains(aws.ToString(msgs[0].Body), id) {
		t.Errorf("queued %s, want a job of %s", aws.ToString(msgs[0].Body), id)
	}
}

// repeatedHeaders: behind API Gateway a header sent twice arrives as two
// values of multiValueHeaders (headers holds the last). A request carrying
// Authorization, Idempotency-Key or Content-Type more than once is refused
// with 400 yp_2002 naming it, whichever value comes first: the demo key
// followed by another was served as the demo merchant.
func (r *lambdaRun) repeatedHeaders(t *testing.T) {
	const otherKey = "Bearer yp_test_otherKey00000000000000000000000000000000000"
	demoKey := "Bearer " + sampleAPIKey
	payments := r.e.sim.PaymentCount()
	for i, c := range []struct {
		fn, event, header string
		values            []any
	}{
		{"PaymentsFunction", "payments", "Authorization", []any{demoKey, otherKey}},
		{"PaymentsFunction", "payments", "Authorization", []any{otherKey, demoKey}},
		{"ConfigFunction", "config", "Authorization", []any{demoKey, demoKey}},
		{"WebhooksFunction", "webhooks-test", "Idempotency-Key", []any{"twice-1", "twice-2"}},
		{"WebhooksFunction", "webhooks-test", "Content-Type", []any{"application/json", "application/json"}},
	} {
		f := r.need(t, c.fn)
		raw := editEvent(t, variant(t, sampleEvent(t, c.event), fmt.Sprintf("twice-%d", i), ""), func(ev map[string]any) {
			ev["headers"].(map[string]any)[c.header] = c.values[len(c.values)-1]
			ev["multiValueHeaders"].(map[string]any)[c.header] = c.values
		})
		inv := f.invoke(t, raw)
		inv.refusedFirst = true
		body := wantStatus(t, r.record(inv), http.StatusBadRequest)
		fields, _ := body["fields"].([]any)
		if body["errorCode"] != "yp_2002" || len(fields) != 1 || fields[0].(map[string]any)["field"] != c.header {
			t.Errorf("%s with %s %v: %v, want 400 yp_2002 naming %s", c.event, c.header, c.values, body, c.header)
		}
	}
	if n := r.e.sim.PaymentCount(); n != payments {
		t.Errorf("the upstream got %d payments", n-payments)
	}
}

// optionalBodies: the two webhook operations whose body docs/openapi.yaml
// makes optional take an event without body and Content-Type.
func (r *lambdaRun) optionalBodies(t *testing.T) {
	f := r.need(t, "WebhooksFunction")
	bare := func(event string) []byte {
		return editEvent(t, variant(t, sampleEvent(t, event), "bare", ""), func(ev map[string]any) {
			ev["body"] = nil
			delete(ev["headers"].(map[string]any), "Content-Type")
			delete(ev["multiValueHeaders"].(map[string]any), "Content-Type")
		})
	}
	body := wantStatus(t, r.record(f.invoke(t, bare("webhooks-test"))), http.StatusOK)
	if results, _ := body["results"].([]any); body["eventCode"] != "paysvc.webhook.test" || len(results) != 1 {
		t.Errorf("webhook test without a body: %v", body)
	}
	if b := wantStatus(t, r.record(f.invoke(t, bare("webhook-delivery-retry"))), http.StatusNotFound); b["errorCode"] != "yp_3007" {
		t.Errorf("retry of the unknown sample delivery without a body: %v", b)
	}
}

func (r *lambdaRun) notifications(t *testing.T) {
	f := r.need(t, "NotificationsFunction")
	for _, name := range []string{"notification-authorisation", "notification-capture"} {
		inv := r.record(f.invoke(t, sampleEvent(t, name)))
		if inv.resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", name, inv.resp.StatusCode, inv.resp.Body)
		}
	}
	inv := r.record(f.invoke(t, sampleEvent(t, "notification-bad-hmac")))
	body := wantStatus(t, inv, http.StatusUnauthorized)
	if code, _ := body["errorCode"].(string); !errorCodeRE.MatchString(code) {
		t.Errorf("bad HMAC: %v", body)
	}
	// Wrong basic auth is refused before the signature is looked at.
	raw := editEvent(t, variant(t, sampleEvent(t, "notification-authorisation"), "badauth", ""), func(ev map[string]any) {
		setHeader(ev, "Authorization", "Basic cGF5c3ZjLW5vdGlmeTp3cm9uZw==") // paysvc-notify:wrong
	})
	wantStatus(t, r.record(f.invoke(t, raw)), http.StatusUnauthorized)
}

func (r *lambdaRun) dispatcher(t *testing.T) {
	f := r.need(t, "WebhookDispatcherFunction")
	// The sample batch names deliveries that do not exist: dropped, so
	// no item failure (nothing to retry).
	payload, _ := f.invokeRaw(t, sampleEvent(t, "sqs-deliveries"))
	var resp struct {
		BatchItemFailures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(payload, &resp); err != nil || resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("sample batch: %s (%v)", payload, err)
	}
	if r.fns["NotificationsFunction"] == nil {
		t.Skip("no notifications function: no real deliveries to dispatch")
	}
	// The deliveries the notifications enqueued, as the event source
	// mapping would pass them (the sample's shape, real messages).
	recs := r.e.receiveDeliveries(t, 2)
	raw := editEvent(t, sampleEvent(t, "sqs-deliveries"), func(ev map[string]any) {
		tmpl := ev["Records"].([]any)[0].(map[string]any)
		var out []any
		for _, m := range recs {
			r := map[string]any{}
			for k, v := range tmpl {
				r[k] = v
			}
			r["messageId"], r["receiptHandle"], r["body"], r["md5OfBody"] = aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle), aws.ToString(m.Body), aws.ToString(m.MD5OfBody)
			r["attributes"] = map[string]any{"ApproximateReceiveCount": m.Attributes["ApproximateReceiveCount"]}
			out = append(out, r)
		}
		ev["Records"] = out
	})
	payload, _ = f.invokeRaw(t, raw)
	if err := json.Unmarshal(payload, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("batch of real deliveries: %s (%v)", payload, err)
	}
	got := r.e.webhooks.received()
	if len(got) != 2 {
		t.Fatalf("the merchant endpoint received %d webhooks, want 2 (AUTHORISATION, CAPTURE)", len(got))
	}
	for _, w := range got {
		if w.err != nil {
			t.Errorf("webhook signature: %v", w.err)
		}
	}
	metrics := emfLines(f.h.Logs(), "WebhookDeliveries")
	var delivered, failures float64
	for _, m := range metrics {
		delivered += m["WebhookDeliveries"].(float64)
		failures += m["WebhookFailures"].(float64)
	}
	if delivered != 2 || failures != 0 {
		t.Errorf("EMF: %v deliveries, %v failures; want 2 and 0", delivered, failures)
	}
	// A retry received before it is due is sent on to the deliveries queue
	// (a hop, delayed by at most 15 minutes), which the function's role
	// must allow (the recorder checks every call against it).
	body, err := queue.Job{DeliveryID: "msg_not_due", Attempt: 2, NotBefore: time.Now().Add(time.Hour)}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	raw = editEvent(t, sampleEvent(t, "sqs-deliveries"), func(ev map[string]any) {
		rec := ev["Records"].([]any)[0].(map[string]any)
		rec["body"], rec["md5OfBody"] = body, ""
		ev["Records"] = []any{rec}
	})
	payload, _ = f.invokeRaw(t, raw)
	if err := json.Unmarshal(payload, &resp); err != nil || resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("a retry not due yet: %s (%v), want it sent on and deleted", payload, err)
	}
	if n := r.e.delayedDeliveries(t); n != 1 {
		t.Errorf("%d delayed messages in the deliveries queue, want the hop", n)
	}
}

// scheduler: the scheduler function's sample event (its schedule's input)
// runs a pass.
func (r *lambdaRun) scheduler(t *testing.T) { r.schedulerPass(t, r.need(t, "SchedulerFunction")) }

// schedulerPass: the scheduled event runs one pass of the timed jobs. A
// capture of the sample payment whose answer was lost ten minutes ago (its
// request in the ledger, awaiting its answer) gets its call repeated with
// its key, and the platform's definitive answer is recorded: nothing
// awaits an answer after. A manual-capture card payment authorised 27 days
// and an hour ago (it expires within the 24 h lead) gets its pre-expiry
// notice, once.
func (r *lambdaRun) schedulerPass(t *testing.T, f *function) {
	t.Helper()
	ctx := context.Background()
	st := dynamo.New(moto.DynamoClient(t, r.e.endpoint), r.e.table, clock.NewFake(time.Now().Add(-10*time.Minute)))
	const psp = "QFQTPCQ8HXSKGK82" // the sample payment (events/generate.py)
	e := payments.Entry{Ref: "op_lambda-recovery-key-00000000000000000000", Kind: payments.OpCapture, Version: 1,
		Requested: &payments.Request{Amount: money.Amount{Value: 100, Currency: "EUR"}, Account: "DemoShopECOM",
			UpstreamKey: "lambda-recovery-key-00000000000000000000", At: time.Now().Add(-10 * time.Minute)}}
	if err := st.Write(ctx, payments.Write{PSP: psp, Delta: e.Contribution(), Entries: []payments.Entry{e}, At: e.Requested.At}); err != nil {
		t.Fatalf("the lost capture's request: %v", err)
	}
	yes := true
	authorised := time.Now().Add(-27*24*time.Hour - time.Hour).UTC()
	due := payments.Head{PSPReference: "LAMBDAEXPIRY0001", MerchantID: "m_demo", SiteID: "site_demo", Reference: "order-expiring",
		Source: payments.SourceAdvanced, Amount: money.Amount{Value: 500, Currency: "EUR"}, CaptureMode: "manual", PaymentMethod: "visa",
		Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Authorised: 500, AuthorisedAt: authorised,
		CreatedAt: authorised, UpdatedAt: authorised, Version: 1}
	due.Totals = payments.Fold(due, nil)
	if err := st.Write(ctx, payments.Write{PSP: due.PSPReference, Put: &due, At: authorised}); err != nil {
		t.Fatalf("the expiring payment: %v", err)
	}
	pass := func() app.Pass {
		t.Helper()
		payload, _ := f.invokeRaw(t, sampleEvent(t, "schedule-scheduler"))
		var got app.Pass
		if err := json.Unmarshal(payload, &got); err != nil {
			t.Fatalf("scheduler pass answered %s (%v)", payload, err)
		}
		return got
	}
	if got := pass(); got.Answered != 1 || got.NoticesSent != 1 {
		t.Fatalf("scheduler pass %+v, want one operation answered and one notice sent", got)
	}
	es, err := st.GetEntries(ctx, psp, e.Ref)
	if err != nil || len(es) != 1 || es[0].AwaitsAnswer() {
		t.Fatalf("the lost capture after the pass: %+v, %v", es, err)
	}
	if left, err := st.InFlight(ctx, time.Now(), 10); err != nil || len(left) != 0 {
		t.Fatalf("operations still in flight: %v, %v", left, err)
	}
	if got := pass(); got.NoticesSent != 0 {
		t.Fatalf("second pass %+v, want no notice", got)
	}
}

func (r *lambdaRun) initDuration(t *testing.T) {
	for id, f := range r.fns {
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
}

// contract checks every API invocation's request and answer, as API
// Gateway carries them, against docs/openapi.yaml.
func (r *lambdaRun) contract(t *testing.T) {
	checker := repoChecker(t)
	for _, inv := range r.invocations {
		u := url.URL{Path: inv.event.Path}
		q := url.Values{}
		for k, v := range inv.event.QueryParameters {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		x := openapicheck.Exchange{Method: inv.event.HTTPMethod, URL: u.String(), Header: http.Header{}, RespHeader: http.Header{},
			Status: inv.resp.StatusCode, RespBody: []byte(inv.resp.Body)}
		for k, v := range inv.event.Headers {
			x.Header.Set(k, v)
		}
		if inv.event.Body != nil {
			x.Body = []byte(*inv.event.Body)
		}
		for k, v := range inv.resp.Headers {
			x.RespHeader.Set(k, v)
		}
		for k, vs := range inv.resp.MultiValueHeaders {
			for _, v := range vs {
				x.RespHeader.Add(k, v)
			}
		}
		if v := checker.Check(x); len(v) > 0 {
			t.Errorf("%s %s → %d violates docs/openapi.yaml:\n  %s\n  answer: %s", x.Method, x.URL, x.Status, strings.Join(v, "\n  "), inv.resp.Body)
		}
	}
	if len(r.invocations) == 0 {
		t.Fatal("no invocation to check")
	}
}

func (r *lambdaRun) requestLogsAndMetrics(t *testing.T) {
	byTrace := map[string]invocation{}
	for _, inv := range r.invocations {
		byTrace[inv.traceRoot] = inv
	}
	seen := 0
	for id, f := range r.fns {
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
			if inv.event.PathParameters["siteId"] != "" && !inv.refusedFirst && (l["site"] != "site_demo" || l["merchant"] != "m_demo") {
				t.Errorf("%s: log without site/merchant: %v", id, l)
			}
		}
		reqs := emfLines(f.h.Logs(), "Requests")
		if len(reqs) == 0 && !notBehindAPI[id] {
			t.Errorf("%s: no EMF Requests metric", id)
		}
		for _, m := range reqs {
			if m["Service"] != "paysvc" || m["Function"] != fnName || m["Version"] != testFunctionVersion ||
				!emfHasDimensionSet(m, "Requests", "Service", "Function", "Version") ||
				!emfHasDimensionSet(m, "ServerErrors", "Service", "Function", "Version") {
				t.Errorf("%s: EMF dimensions %v (want the rollback alarms' [Service Function Version])", id, m)
			}
		}
		// The secret's readers report its age at each read (the
		// rotation policy's alarm).
		if age := emfLines(f.h.Logs(), "UpstreamSecretAgeDays"); secretReaders[id] == (len(age) == 0) {
			t.Errorf("%s: %d EMF UpstreamSecretAgeDays documents", id, len(age))
		} else if len(age) > 0 {
			if d, _ := age[0]["UpstreamSecretAgeDays"].(float64); d < 0 || d > 1 {
				t.Errorf("%s: UpstreamSecretAgeDays = %v for a secret created by this test", id, age[0]["UpstreamSecretAgeDays"])
			}
		}
		up := emfLines(f.h.Logs(), "UpstreamRequests")
		if upstreamCallers[id] == (len(up) == 0) {
			t.Errorf("%s: %d EMF UpstreamRequests documents", id, len(up))
		}
		for _, m := range up {
			if m["Function"] != fnName || m["UpstreamErrors"] != float64(0) {
				t.Errorf("%s: upstream metric %v", id, m)
			}
		}
	}
	if seen != len(r.invocations) {
		t.Errorf("%d request log lines for %d invocations", seen, len(r.invocations))
	}
}

func (r *lambdaRun) xRay(t *testing.T) {
	// Every sampled invocation sent its request subsegment with the
	// DynamoDB and (but for config) upstream subsegments under it.
	// A request with many subsegments (a listing's scatter-gather) arrives
	// in several documents: the SDK streams completed subsegments on their
	// own, each naming its parent. Wait until every invocation's documents
	// are in (a failure bound only), then check them.
	complete := func(segs []xraySegment) bool {
		for i, v := range r.xrayOf(t, segs) {
			inv := r.invocations[i]
			if !v.ok || v.root.Annotations["status"] == nil || (v.dynamoOps == 0 && inv.resp.StatusCode < 300) ||
				(inv.callsUpstream() && v.upstreamCalls == 0) {
				return false
			}
		}
		return true
	}
	segs := r.e.daemon.waitFor(t, complete, 60*time.Second)
	for i, v := range r.xrayOf(t, segs) {
		inv, s := r.invocations[i], v.root
		if !v.ok {
			t.Errorf("no segment for %s %s (trace %s)", inv.event.HTTPMethod, inv.event.Path, inv.traceRoot)
			continue
		}
		if v.dynamoOps == 0 && inv.resp.StatusCode < 300 {
			t.Errorf("%s %s: no DynamoDB subsegment", inv.event.HTTPMethod, inv.event.Path)
		}
		if inv.callsUpstream() && v.upstreamCalls == 0 {
			t.Errorf("%s %s: no upstream subsegment", inv.event.HTTPMethod, inv.event.Path)
		}
		if s.Annotations["status"] != float64(inv.resp.StatusCode) || (inv.event.PathParameters["siteId"] != "" && !inv.refusedFirst && s.Annotations["siteId"] != "site_demo") {
			t.Errorf("%s %s: annotations %v", inv.event.HTTPMethod, inv.event.Path, s.Annotations)
		}
		if inv.accepted() {
			continue
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
}

// xrayView is what the daemon got of one invocation: its request
// subsegment (ok when found) and the DynamoDB and upstream calls under it.
type xrayView struct {
	root                     xraySegment
	ok                       bool
	dynamoOps, upstreamCalls int
}

// xrayOf returns the view of each invocation (by index) in segs.
func (r *lambdaRun) xrayOf(t *testing.T, segs []xraySegment) []xrayView {
	byTrace := map[string][]xraySegment{}
	for _, s := range segs {
		if s.Type == "subsegment" && s.ParentID != "" {
			byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
		}
	}
	out := make([]xrayView, len(r.invocations))
	for i, inv := range r.invocations {
		root, children, ok := requestSubsegment(t, byTrace[inv.traceRoot])
		v := xrayView{root: root, ok: ok}
		for _, c := range children {
			if c.Name == "DynamoDB" && c.Namespace == "aws" {
				v.dynamoOps++
			}
			if c.Namespace == "remote" && c.HTTP != nil && strings.HasPrefix(c.HTTP.Request.URL, r.e.simURL) {
				v.upstreamCalls++
			}
		}
		out[i] = v
	}
	return out
}

// callsUpstream reports whether the invocation called the upstream:
// lookups never do, and a refund over what is left is refused before it.
func (inv invocation) callsUpstream() bool {
	refusedRefund := strings.HasSuffix(inv.event.Resource, "/refunds") && inv.resp.StatusCode == http.StatusBadRequest
	return strings.HasPrefix(inv.event.Resource, "/v1/ecom/{siteId}/") && !inv.resp.isReplay() &&
		inv.resp.StatusCode != http.StatusNotFound && inv.event.HTTPMethod != http.MethodGet && !refusedRefund && !inv.refusedFirst
}

func (r *lambdaRun) noSecretsInLogs(t *testing.T) {
	for id, f := range r.fns {
		logs := f.h.Logs()
		if !strings.Contains(logs, `"msg":"init"`) {
			t.Fatalf("%s: no logs captured", id)
		}
		for what, secret := range r.e.secrets {
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
}

// upstreamCallers are the functions that call the upstream checkout API.
var upstreamCallers = map[string]bool{"SessionsFunction": true, "PaymentsFunction": true, "ModificationsFunction": true,
	"SchedulerFunction": true} // its recovery pass repeats calls whose answer was lost

// secretReaders are the functions that read the upstream secret.
var secretReaders = map[string]bool{"SessionsFunction": true, "PaymentsFunction": true, "ModificationsFunction": true,
	"NotificationsFunction": true, "SchedulerFunction": true}

// testFunctionVersion is the published version the functions run as in
// these tests (AWS_LAMBDA_FUNCTION_VERSION).
const testFunctionVersion = "7"

// emfHasDimensionSet reports whether the EMF document m declares metric
// under exactly the dimension set dims.
func emfHasDimensionSet(m map[string]any, metric string, dims ...string) bool {
	aws, _ := m["_aws"].(map[string]any)
	for _, d := range asList(aws["CloudWatchMetrics"]) {
		dm, _ := d.(map[string]any)
		declares := false
		for _, x := range asList(dm["Metrics"]) {
			if xm, _ := x.(map[string]any); xm["Name"] == metric {
				declares = true
			}
		}
		if !declares {
			continue
		}
		for _, set := range asList(dm["Dimensions"]) {
			if jsonText(set) == jsonText(dims) {
				return true
			}
		}
	}
	return false
}

// receiveDeliveries receives n messages from the deliveries queue (moto).
func (e *lambdaEnv) receiveDeliveries(t *testing.T, n int) []sqstypes.Message {
	t.Helper()
	var out []sqstypes.Message
	for polls := 0; len(out) < n && polls < 30; polls++ { // long polls of a second: a failure bound only
		res, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		out = append(out, res.Messages...)
	}
	if len(out) != n {
		t.Fatalf("%d messages on the deliveries queue, want %d", len(out), n)
	}
	return out
}

// delayedDeliveries is how many messages of the deliveries queue wait out
// a delay.
func (e *lambdaEnv) delayedDeliveries(t *testing.T) int {
	t.Helper()
	out, err := e.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	n, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)])
	if err != nil {
		t.Fatalf("ApproximateNumberOfMessagesDelayed: %v", err)
	}
	return n
}

// webhookReceiver is the merchant's webhook endpoint: it verifies each
// delivery's signature with the subscription secret and answers 204.
type webhookReceiver struct {
	url string
	mu  sync.Mutex
	got []receivedWebhook
}

type receivedWebhook struct {
	body []byte
	err  error // signature verification
}

func newWebhookReceiver(t *testing.T, secret string) *webhookReceiver {
	t.Helper()
	w := &webhookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(r.Body)
		err := verify.Verify(secret, r.Header, buf.Bytes(), time.Now(), 5*time.Minute)
		w.mu.Lock()
		w.got = append(w.got, receivedWebhook{body: buf.Bytes(), err: err})
		w.mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

func (w *webhookReceiver) received() []receivedWebhook {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]receivedWebhook(nil), w.got...)
}

func (r proxyResponse) isReplay() bool { return r.header("Idempotent-Replayed") == "true" }

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
	ID          string            `json:"id"`
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
		decodeJSON(t, raw, &c)
		out = append(out, c.flatten(t)...)
	}
	return out
}

// requestSubsegment finds, among the documents of one trace, the request's
// subsegment (the one whose parent is outside the documents: the Lambda
// facade) and returns it with every subsegment under it, streamed or not.
func requestSubsegment(t *testing.T, docs []xraySegment) (root xraySegment, children []xraySegment, ok bool) {
	t.Helper()
	ids := map[string]bool{}
	var all [][]xraySegment
	for _, d := range docs {
		flat := d.flatten(t)
		all = append(all, flat)
		for _, c := range flat {
			ids[c.ID] = true
		}
	}
	// Under the facade, the request's subsegment is the one annotated with
	// its status: the upstream secret read again (after a signature failed,
	// once its minimum interval has passed: on a loaded machine) sits beside
	// it as a Secrets Manager subsegment.
	at := slices.IndexFunc(docs, func(d xraySegment) bool { return !ids[d.ParentID] && d.Annotations["status"] != nil })
	if at < 0 {
		at = slices.IndexFunc(docs, func(d xraySegment) bool { return !ids[d.ParentID] })
	}
	for i, d := range docs {
		if i == at {
			root, ok = d, true
			children = append(children, all[i][1:]...)
			continue
		}
		children = append(children, all[i]...)
	}
	return root, children, ok
}

// xrayDaemon is a fake X-Ray daemon: a UDP listener on 127.0.0.1.
type xrayDaemon struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	packets [][]byte      // as received: the reader only copies them (a slow reader drops packets)
	changed chan struct{} // closed (and replaced) when a packet arrives
}

func newXrayDaemon(t *testing.T) *xrayDaemon {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// A listing's scatter-gather streams thousands of subsegments at once:
	// a large receive buffer keeps the kernel from dropping them (as the
	// real daemon's does).
	_ = conn.SetReadBuffer(4 << 20)
	d := &xrayDaemon{conn: conn, changed: make(chan struct{})}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			p := bytes.Clone(buf[:n])
			d.mu.Lock()
			d.packets = append(d.packets, p)
			close(d.changed)
			d.changed = make(chan struct{})
			d.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return d
}

func (d *xrayDaemon) addr() string { return d.conn.LocalAddr().String() }

// waitFor waits until the segment documents that arrived (UDP from other
// processes: the functions sent them before answering, the socket hands
// them over after) satisfy complete, and returns them; after timeout (a
// failure bound only) it returns what arrived.
func (d *xrayDaemon) waitFor(t *testing.T, complete func([]xraySegment) bool, timeout time.Duration) []xraySegment {
	t.Helper()
	bound := time.NewTimer(timeout)
	defer bound.Stop()
	var segs []xraySegment
	read, bad := 0, 0
	for {
		d.mu.Lock()
		packets, changed := d.packets[read:], d.changed
		d.mu.Unlock()
		read += len(packets)
		for _, p := range packets {
			_, body, ok := bytes.Cut(p, []byte("\n"))
			var s xraySegment
			if !ok || json.Unmarshal(body, &s) != nil {
				bad++
				continue
			}
			segs = append(segs, s)
		}
		if complete(segs) {
			if bad > 0 {
				t.Errorf("%d packets were not daemon-protocol segments", bad)
			}
			return segs
		}
		select {
		case <-changed:
		case <-bound.C:
			if bad > 0 {
				t.Errorf("%d packets were not daemon-protocol segments", bad)
			}
			return segs
		}
	}
}

// sampleDeliveryID is the placeholder delivery id of events/webhook-delivery-retry.json.
const sampleDeliveryID = "msg_q4x7m2k9v3p5r8t1y6w0z2b4c6"

// timeline lists the kinds of a payment lookup's timeline.
func timeline(body map[string]any) string {
	var kinds []string
	for _, x := range body["timeline"].([]any) {
		kinds = append(kinds, x.(map[string]any)["kind"].(string))
	}
	return strings.Join(kinds, " ")
}
