package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/yp/paysvc/internal/motoserver"
	"github.com/yp/paysvc/shared/capacity"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/lookup"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/observe"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/upstream/simulator"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// Pseudo-operations of the timeline that are not AWS calls.
const (
	opUpstream = "[upstream call]"
	opWebhook  = "[webhook POST]"
)

// call is one AWS operation (or pseudo-operation) of a request's timeline.
type call struct {
	Service string // "DynamoDB", "SQS", "" for pseudo-operations
	Op      string // API name, e.g. PutItem
	What    string // domain meaning, e.g. "idempotency: claim"
	// Rec is a DynamoDB call as the capacity model prices it, recorded
	// only when the recorder reads states (callRecorder.states).
	Rec      *capacity.Recorded
	Start    time.Time
	End      time.Time
	Attempts int // HTTP attempts (retries included)
}

// store reports whether c is a DynamoDB call.
func (c call) store() bool { return c.Service == "DynamoDB" }

// callRecorder collects the timeline of every instrumented client.
type callRecorder struct {
	mu    sync.Mutex
	calls []call
	// states, when set, reads the items of keys in table (nil: none) on a
	// client without this middleware: the recorder reads every key a
	// DynamoDB write names before and after the call, which makes each
	// call's Rec and slows every write by two reads (a recording run's
	// timings are not measurements).
	states func(ctx context.Context, table string, keys []dynamo.Item) ([]dynamo.Item, error)
}

type attemptsKey struct{}

// apiOption is the SDK middleware: it times each operation (Initialize
// step, so retries are inside) and counts its HTTP attempts (Finalize step,
// after the retry middleware).
func (r *callRecorder) apiOption(service string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("paysvcBenchTimeline",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				attempts := new(int)
				ctx = middleware.WithStackValue(ctx, attemptsKey{}, attempts)
				op := awsmiddleware.GetOperationName(ctx)
				table, keys := capacity.WriteKeys(in.Parameters)
				var before []dynamo.Item
				if r.states != nil && len(keys) > 0 {
					var err error
					if before, err = r.states(middleware.ClearStackValues(ctx), table, keys); err != nil {
						return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("record the state before %s: %w", op, err)
					}
				}
				start := time.Now()
				out, md, err := next.HandleInitialize(ctx, in)
				end := time.Now()
				c := call{Service: service, Op: op, What: classify(service, op, in.Parameters), Start: start, End: end, Attempts: *attempts}
				if r.states != nil && service == "DynamoDB" {
					var after []dynamo.Item
					if err == nil && len(keys) > 0 {
						var rerr error
						if after, rerr = r.states(middleware.ClearStackValues(ctx), table, keys); rerr != nil {
							return out, md, fmt.Errorf("record the state after %s: %w", op, rerr)
						}
					}
					if rec, ok := capacity.RecordOf(in.Parameters, out.Result, err, before, after); ok {
						c.Rec = &rec
					}
				}
				r.add(c)
				return out, md, err
			}), middleware.Before)
		if err != nil {
			return err
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("paysvcBenchAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if p, ok := middleware.GetStackValue(ctx, attemptsKey{}).(*int); ok {
					*p++
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// add records a call.
func (r *callRecorder) add(c call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// take returns the calls recorded since the last take.
func (r *callRecorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// timedTransport records each upstream HTTP exchange as a pseudo-operation.
type timedTransport struct {
	rec  *callRecorder
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		// The answer counts once its body is read; the client reads it at once.
		b, rerr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		err = rerr
	}
	t.rec.add(call{Op: opUpstream, What: opUpstream + " " + upstreamOp(req.URL.Path), Start: start, End: time.Now(), Attempts: 1})
	return resp, err
}

// Parts of a Query's key condition: the partition key's value and the
// sort key prefix's value placeholders.
var (
	keyEquals     = regexp.MustCompile(`#\w+\s*=\s*(:\w+)`)
	keyBeginsWith = regexp.MustCompile(`begins_with\(\s*#\w+\s*,\s*(:\w+)\s*\)`)
)

// shardCounts names the calls on a merchant's listing shard counts.
const shardCounts = "listing: shard counts"

// classify names the domain operation of a DynamoDB or SQS call from its
// key prefixes (the single-table layout of shared/store/dynamo).
func classify(service, op string, params any) string {
	if service == "SQS" {
		switch op {
		case "SendMessage", "SendMessageBatch":
			return "queue: enqueue delivery job"
		}
		return "queue: " + op
	}
	pk, sk, index := callKey(params)
	prefix, _, _ := strings.Cut(pk, "#")
	read := op == "GetItem" || op == "Query" || op == "BatchGetItem"
	rw := map[bool]string{true: "read", false: "write"}[read]
	switch prefix {
	case "MERCHANT":
		return merchantCall(op, sk, index, rw)
	case "RATE":
		return "rate limit: hit"
	case "IDEM":
		switch op {
		case "PutItem":
			return "idempotency: claim"
		case "UpdateItem":
			return "idempotency: complete"
		case "DeleteItem":
			return "idempotency: release"
		}
		return "idempotency: " + op
	case "PAYMENT":
		switch {
		case op == "Query" && index:
			return "events: list of payment"
		case op == "Query":
			return "payment timeline: read" // a page of its F# items
		case op == "BatchGetItem" && strings.HasPrefix(sk, "E#"):
			return "payment entries: read" // GetEntries: E# items (and META)
		}
		// GetPayment is one BatchGetItem of HEAD and META, a write one
		// TransactWriteItems of HEAD, entries and facts.
		return "payment record: " + rw
	}
	if what, ok := itemKinds[prefix]; ok {
		return what + rw
	}
	return op + " " + pk
}

// itemKinds name the calls on items of one kind by their key prefix.
var itemKinds = map[string]string{
	"APIKEY": "auth: API key ", "SITE": "tenant: site ", "EVENTLOG": "event history: ",
	"SESSION": "session record: ", "EVENT": "notification event: ", "DELIVERY": "delivery: ",
}

// merchantCall names a call on a merchant's partition.
func merchantCall(op, sk string, index bool, rw string) string {
	switch {
	case op == "Query" && index:
		return "delivery list: read" // gsi2 MERCHANT#<m>#DELIVERIES#<n>
	case op == "Query" && strings.HasPrefix(sk, "SUB#"):
		return "tenant: subscriptions list"
	case op == "Query" && strings.HasPrefix(sk, "KEY#"):
		return "tenant: API keys list"
	case op == "Query":
		return "tenant: list " + sk
	case strings.HasPrefix(sk, "SUB#"):
		return "tenant: subscription " + rw
	case strings.HasPrefix(sk, "KEY#"):
		return "tenant: API key (by owner) " + rw
	case sk == "SHARDS":
		return shardCounts + " " + rw
	}
	return "tenant: merchant " + rw
}

// callKey is the key a DynamoDB call names (a Query's partition and sort
// key prefix; a batch's or transaction's first item) and whether it is a
// Query of an index.
func callKey(params any) (pk, sk string, index bool) {
	keyOf := func(m map[string]types.AttributeValue) {
		if v, ok := m["pk"].(*types.AttributeValueMemberS); ok {
			pk = v.Value
		}
		if v, ok := m["sk"].(*types.AttributeValueMemberS); ok {
			sk = v.Value
		}
	}
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		keyOf(in.Key)
	case *dynamodb.QueryInput:
		// "#pk = :pk AND begins_with(#sk, :prefix)": the values named there.
		value := func(re *regexp.Regexp) string {
			m := re.FindStringSubmatch(aws.ToString(in.KeyConditionExpression))
			if m == nil {
				return ""
			}
			v, _ := in.ExpressionAttributeValues[m[1]].(*types.AttributeValueMemberS)
			if v == nil {
				return ""
			}
			return v.Value
		}
		return value(keyEquals), value(keyBeginsWith), in.IndexName != nil
	case *dynamodb.BatchGetItemInput:
		for _, ka := range in.RequestItems { // the adapter reads one table, one partition
			if len(ka.Keys) > 0 {
				keyOf(ka.Keys[0])
			}
		}
	default: // a write: its first item's
		if _, keys := capacity.WriteKeys(params); len(keys) > 0 {
			keyOf(keys[0])
		}
	}
	return pk, sk, false
}

// step is a set of calls that overlap in time (run concurrently).
type step []call

// steps groups a timeline into sequential steps: a call that starts before
// every call of the current step has ended joins it (it ran alongside).
func steps(calls []call) []step {
	cs := slices.Clone(calls)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Start.Before(cs[j].Start) })
	var out []step
	var end time.Time
	for _, c := range cs {
		if len(out) > 0 && c.Start.Before(end) {
			out[len(out)-1] = append(out[len(out)-1], c)
			if c.End.After(end) {
				end = c.End
			}
			continue
		}
		out = append(out, step{c})
		end = c.End
	}
	return out
}

// storeDepth counts the sequential steps holding a store (DynamoDB) call,
// but for the upstream call's step: a store call made alongside the
// upstream call (an amount update reads the payment's head while the
// platform answers) is a step neither before nor after it, off the
// critical path whenever the platform takes longer to answer than one
// store call (on moto at 0 ms it may not: the chain shows it).
func storeDepth(ss []step) int {
	n := 0
	for _, s := range ss {
		if slices.ContainsFunc(s, call.store) && !slices.ContainsFunc(s, call.upstream) {
			n++
		}
	}
	return n
}

// upstream reports whether c is the upstream call.
func (c call) upstream() bool { return c.Op == opUpstream }

// chain renders steps as "a → b → (c ‖ d)".
func chain(ss []step) string {
	parts := make([]string, 0, len(ss))
	for _, s := range ss {
		names := make([]string, 0, len(s))
		for _, c := range s {
			names = append(names, c.What)
		}
		if len(names) == 1 {
			parts = append(parts, names[0])
		} else {
			parts = append(parts, "("+strings.Join(names, " ‖ ")+")")
		}
	}
	return strings.Join(parts, " → ")
}

// rtRow is one operation's round trips.
type rtRow struct {
	Name     string
	Requests int            // measured requests
	Counts   map[string]int // What → calls, summed over the requests
	Total    int            // calls of every kind, summed
	Retries  int            // extra HTTP attempts, summed
	DepthMin int            // sequential store steps (min, max over the requests)
	DepthMax int
	Chain    string // the steps of the request with the fewest
	// Wall is each request's duration (moto and the simulator at 0 ms on
	// loopback); LogBytes the JSON log lines and EMF metrics it wrote.
	Wall     []time.Duration
	LogBytes int64
	// Recorded are each request's DynamoDB calls as the capacity model
	// prices them (a run with cfg.recordStates only).
	Recorded [][]recordedCall
}

// recordedCall is one DynamoDB call of a request: its meaning and its
// record.
type recordedCall struct {
	What string
	Rec  capacity.Recorded
}

// itemReader reads the items of keys in table with client (strongly
// consistent, one GetItem each): the state a recorder keeps of a write's
// items.
func itemReader(client *dynamodb.Client) func(ctx context.Context, table string, keys []dynamo.Item) ([]dynamo.Item, error) {
	return func(ctx context.Context, table string, keys []dynamo.Item) ([]dynamo.Item, error) {
		out := make([]dynamo.Item, len(keys))
		for i, k := range keys {
			got, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
			if err != nil {
				return nil, err
			}
			if got.Item != nil {
				out[i] = got.Item
			}
		}
		return out, nil
	}
}

// medianMS is the median request duration in milliseconds.
func (r rtRow) medianMS() float64 {
	if len(r.Wall) == 0 {
		return 0
	}
	ws := slices.Clone(r.Wall)
	slices.Sort(ws)
	return float64(ws[len(ws)/2].Microseconds()) / 1000
}

// logBytesPerRequest is the average log output of one request.
func (r rtRow) logBytesPerRequest() float64 { return float64(r.LogBytes) / float64(max(r.Requests, 1)) }

// roundTripResult is item 2.
type roundTripResult struct {
	Rows []rtRow
}

// row returns the named row.
func (r *roundTripResult) row(name string) (rtRow, bool) {
	for _, x := range r.Rows {
		if x.Name == name {
			return x, true
		}
	}
	return rtRow{}, false
}

// rtEnv is the service wired on DynamoDB (moto) with instrumented clients.
type rtEnv struct {
	rec      *callRecorder
	logs     *countingWriter // every log line and EMF metric written
	handler  http.Handler
	deps     *httpapi.Deps // the handler's
	key      string
	receiver *connector.Inbox
	disp     *webhooks.Dispatcher
	queue    *sqsqueue.Queue
	sim      *simFront
	// hookFailing makes the webhook receiver answer 500.
	hookFailing *atomic.Bool
	st          *dynamo.Store
	awsCfg      aws.Config // moto endpoint, static test credentials
	endpoint    string     // moto
	table       string
	queueURL    string
	dlqURL      string
}

// newRTEnv builds the stores, upstream and handlers the way shared/app
// does for a Lambda function (default rate limits; a tenant cache that
// stays warm, as steady traffic keeps it by refreshing ahead), but
// with its own DynamoDB and SQS clients carrying the timeline middleware.
func newRTEnv(t *section, recordStates bool) (*rtEnv, error) {
	ctx := context.Background()
	endpoint, err := motoserver.Endpoint()
	if err != nil {
		return nil, err
	}
	e := &rtEnv{rec: &callRecorder{}, endpoint: endpoint, awsCfg: aws.Config{
		Region:       motoserver.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}},
	}}
	sqsClient := sqs.NewFromConfig(e.awsCfg, func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, e.rec.apiOption("SQS"))
	})
	ddb, table, err := t.motoTable(ctx, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, e.rec.apiOption("DynamoDB")) })
	if err != nil {
		return nil, err
	}
	e.table = table
	if recordStates {
		e.rec.states = itemReader(motoserver.DynamoClient(endpoint))
	}
	if e.queueURL, e.dlqURL, err = sqsqueue.CreateQueues(ctx, sqsClient, table+"-deliveries"); err != nil {
		return nil, fmt.Errorf("create queues: %w", err)
	}
	e.queue = sqsqueue.New(sqsClient, e.queueURL, e.dlqURL)
	e.st = dynamo.New(ddb, table, clock.System{})
	// The platform's published answers: a 3-D Secure payment's action
	// comes without pspReference, its details answer names it.
	if e.sim, err = startSimFront(0, true); err != nil {
		return nil, err
	}
	t.Cleanup(e.sim.close)
	hookURL := e.startHook(t)
	if e.key, err = seedBench(ctx, e.st, hookURL, recordStates); err != nil {
		return nil, err
	}
	return e, e.wire()
}

// startHook starts the webhook receiver: it answers 200 at once (500
// while hookFailing is set), its handling time recorded.
func (e *rtEnv) startHook(t *section) string {
	e.hookFailing = &atomic.Bool{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		if e.hookFailing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		} else {
			w.WriteHeader(http.StatusOK)
		}
		e.rec.add(call{Op: opWebhook, What: opWebhook + " (receiver side)", Start: start, End: time.Now(), Attempts: 1})
	}))
	t.Cleanup(hook.Close)
	return hook.URL
}

// seedBench provisions the demo tenant with a subscription to hookURL and
// returns its API key; modelMerchant shapes the merchant as the capacity
// model's (its subscriptions and listing shards).
func seedBench(ctx context.Context, st *dynamo.Store, hookURL string, modelMerchant bool) (string, error) {
	prov, key, err := seedDemo(ctx, st)
	if err != nil {
		return "", err
	}
	subscriptions := 1
	if modelMerchant {
		subscriptions = modelSubscriptions
	}
	for n := 1; n <= subscriptions; n++ {
		id := "sub_bench"
		if n > 1 {
			id = fmt.Sprintf("sub_bench_%d", n)
		}
		spec := provision.SubscriptionSpec{ID: id, MerchantID: "m_demo", URL: hookURL + "/webhooks", AllowLocal: true}
		if _, _, err := prov.PutSubscription(ctx, spec); err != nil {
			return "", fmt.Errorf("subscription: %w", err)
		}
	}
	if modelMerchant {
		if _, err := st.RaiseListingShards(ctx, "m_demo", dynamo.DeliveryShards, dynamo.EventLogShards); err != nil {
			return "", fmt.Errorf("listing shards: %w", err)
		}
	}
	return key, nil
}

// seedDemo provisions the demo tenant in st and returns the provisioner
// and the tenant's API key.
func seedDemo(ctx context.Context, st tenant.Store) (*provision.Provisioner, string, error) {
	demo, err := provision.Demo(tenant.EnvTest)
	if err != nil {
		return nil, "", err
	}
	prov := &provision.Provisioner{Store: st, Env: tenant.EnvTest, Clock: clock.System{}}
	if err := prov.ApplySeed(ctx, demo); err != nil {
		return nil, "", fmt.Errorf("seed: %w", err)
	}
	return prov, demo.APIKeys[0].Key, nil
}

// wire builds the handlers on e's store, simulator and queue, as
// shared/app does, with logs and metrics as in Lambda (JSON lines at info,
// EMF), counted.
func (e *rtEnv) wire() error {
	clk := clock.System{}
	e.logs = &countingWriter{}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	metrics := observe.New(e.logs, "paysvc-bench", clk)
	up := upstream.New(upstream.Config{
		BaseURL: e.sim.URL + e.sim.Sim.BasePath(), APIKey: benchSimAPIKey, Timeout: 20 * time.Second,
		HTTPClient: &http.Client{
			Transport:     timedTransport{rec: e.rec, base: http.DefaultTransport.(*http.Transport).Clone()},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	})
	st := e.st
	d := &httpapi.Deps{
		Auth:     tenant.NewAuthenticator(st, tenant.EnvTest, clk, warmTTL),
		Limiter:  ratelimit.New(st, clk, 0, 0, log), // defaults: 100/s, burst 200
		Idem:     idempotency.New(st, clk, 0, 0, log),
		Payments: payments.NewService(st, connector.New(up), clk, log),
		Lookup:   lookup.New(st, st, st),
		Log:      log,
		Clock:    clk,
		Metrics:  metrics,
	}
	signer, err := upstream.NewSigner(benchSimHMACKey)
	if err != nil {
		return err
	}
	d.Webhooks = &webhooks.SelfService{Deliveries: st, Subscriptions: st, Queue: e.queue, Clock: clk,
		Sender: sender.New(sender.Config{AllowLocal: true, Timeout: 10 * time.Second})}
	e.deps = d
	e.handler = httpapi.NewHandler(d, httpapi.ConfigRoutes(d), httpapi.SessionsRoutes(d),
		httpapi.PaymentsRoutes(d), httpapi.ModificationsRoutes(d), httpapi.LookupsRoutes(d), httpapi.WebhooksRoutes(d))
	e.receiver = &connector.Inbox{Signer: signer, Log: log, Receiver: &notifications.Receiver{
		Events: st, Payments: st, Tenants: st, Deliveries: st, Queue: e.queue, Clock: clk, Log: log,
	}}
	e.disp = &webhooks.Dispatcher{
		Deliveries: st, Tenants: st, Clock: clk, Log: log, Metrics: metrics,
		Sender: sender.New(sender.Config{AllowLocal: true, Timeout: 10 * time.Second}),
	}
	return nil
}

// warmTTL is the measurement's tenant cache lifetime: longer than the run,
// so that rows measured warm stay warm however slow the machine (a cache
// expiring mid-run, or refreshing ahead in the background, would add its
// reads to a request); the cold row starts a new cache per request.
const warmTTL = time.Hour

// countingWriter counts the bytes written to it and drops them.
type countingWriter struct{ n atomic.Int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// do serves one API request in process and returns status and body.
func (e *rtEnv) do(method, path, body, idemKey string) (int, []byte) {
	return serveAPI(e.handler, e.key, method, path, body, idemKey)
}

// serveAPI serves one API request with API key key on h and returns
// status and body.
func serveAPI(h http.Handler, key, method, path, body, idemKey string) (int, []byte) {
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
	return w.Code, w.Body.Bytes()
}

// pay starts a payment through the service and returns its pspReference.
func (e *rtEnv) pay(ref string) (string, error) { return e.payBody(fmt.Sprintf(payBodyFmt, ref), ref) }

// Bodies of the write endpoints measured after captures.
const (
	refundBody = `{"amount":{"value":100,"currency":"EUR"}}`
	// %s is the payment's pspReference.
	amountUpdateBodyFmt = `{"pspReference":"%s","amount":{"value":15000,"currency":"EUR"}}`
)

// preAuthBody is a payment body of a pre-authorisation (its amount can be
// updated) with reference ref.
func preAuthBody(ref string) string {
	return strings.Replace(fmt.Sprintf(payBodyFmt, ref), `"reference"`, `"additionalData":{"authorisationType":"PreAuth"},"reference"`, 1)
}

// payBody starts a payment with body (and Idempotency-Key key, if set)
// through the service and returns its pspReference.
func (e *rtEnv) payBody(body, key string) (string, error) {
	code, b := e.do(http.MethodPost, "/v1/ecom/"+benchSite+"/payments", body, key)
	var out struct{ ResultCode, PSPReference string }
	if code != http.StatusOK || json.Unmarshal(b, &out) != nil || out.ResultCode != "Authorised" {
		return "", fmt.Errorf("setup payment: %d %s", code, b)
	}
	return out.PSPReference, nil
}

// challenge starts a payment with a 3-D Secure card (and Idempotency-Key
// key) and returns the body of the details request that completes its
// challenge.
func (e *rtEnv) challenge(ref, key string) (string, error) {
	body := strings.Replace(fmt.Sprintf(payBodyFmt, ref), "test_4111111111111111", "test_5454545454545454", 1)
	code, b := e.do(http.MethodPost, "/v1/ecom/"+benchSite+"/payments", body, key)
	var out struct{ Action json.RawMessage }
	if code != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Action) == 0 {
		return "", fmt.Errorf("setup challenge %s: %d %s", ref, code, b)
	}
	details, err := simulator.DetailsFor(out.Action, true)
	if err != nil {
		return "", err
	}
	return `{"details":` + string(details) + `}`, nil
}

// notify accepts the simulator's notification code of payment psp (its
// modification's, for a capture) through the receiver.
func (e *rtEnv) notify(psp, code string) error {
	it, err := e.notification(psp, code)
	if err != nil {
		return err
	}
	return e.accept(it)
}

// flush has the simulator send the notifications it owes (a failure
// logged to t).
func (e *rtEnv) flush(t *section) {
	if err := e.sim.Sim.Flush(context.Background()); err != nil {
		t.Logf("simulator flush: %v", err)
	}
}

// notification is the simulator's notification code of payment psp.
func (e *rtEnv) notification(psp, code string) (upstream.NotificationRequestItem, error) {
	for _, it := range e.sim.Sim.NotificationsFor(psp) {
		if it.EventCode == code {
			return it, nil
		}
	}
	return upstream.NotificationRequestItem{}, fmt.Errorf("no %s notification for %s", code, psp)
}

// notificationJSON is the platform's notification of item.
func notificationJSON(item upstream.NotificationRequestItem) ([]byte, error) {
	return json.Marshal(upstream.Notification{Live: "false", NotificationItems: []upstream.NotificationItem{{Item: item}}})
}

// accept has the receiver accept notification item.
func (e *rtEnv) accept(item upstream.NotificationRequestItem) error {
	body, err := notificationJSON(item)
	if err != nil {
		return err
	}
	_, err = e.receiver.Accept(context.Background(), body)
	return err
}

// authorised accepts the simulator's AUTHORISATION of payment psp through
// the receiver and returns the first delivery job it enqueued, to the
// bench's subscription.
func (e *rtEnv) authorised(psp string) (queue.Job, error) {
	item, err := e.notification(psp, upstream.EventAuthorisation)
	if err == nil {
		err = e.accept(item)
	}
	ev := notifications.EventID(notifications.DedupKey(connector.Notification(item)))
	return queue.Job{DeliveryID: webhooks.DeliveryID(ev, "sub_bench"), Attempt: 1, MerchantID: "m_demo", SubscriptionID: "sub_bench"}, err
}

// measureOp runs op (request i = 0..n-1) n times, each alone, and sums the
// calls of each request's timeline.
func (e *rtEnv) measureOp(name string, n int, op func(i int) error) (rtRow, error) {
	row := rtRow{Name: name, Requests: n, Counts: map[string]int{}, DepthMin: -1}
	for i := range n {
		e.rec.take()
		logged := e.logs.n.Load()
		start := time.Now()
		if err := op(i); err != nil {
			return rtRow{}, fmt.Errorf("%s: %w", name, err)
		}
		row.Wall = append(row.Wall, time.Since(start))
		row.LogBytes += e.logs.n.Load() - logged
		calls := e.rec.take()
		ss := steps(calls)
		depth := storeDepth(ss)
		if row.DepthMin < 0 || depth < row.DepthMin {
			row.DepthMin, row.Chain = depth, chain(ss)
		}
		row.DepthMax = max(row.DepthMax, depth)
		var recs []recordedCall
		for _, c := range calls {
			row.Counts[c.What]++
			if c.Rec != nil {
				recs = append(recs, recordedCall{What: c.What, Rec: *c.Rec})
			}
			if c.Service != "" {
				row.Total++
				row.Retries += max(c.Attempts-1, 0)
			}
		}
		if e.rec.states != nil {
			row.Recorded = append(row.Recorded, recs)
		}
	}
	return row, nil
}
