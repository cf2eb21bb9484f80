package main

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/capacity"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// Item 6: the capacity model (shared/capacity) on the full trace, checked
// against DynamoDB's per-partition limits, its DynamoDB calls per request
// checked against those counted on moto (item 2), and the cost of a
// payment from the measured durations, log bytes and the model's units,
// written into docs/scale.md's generated part with -scale-out.

// Assumptions the measurements cannot make on loopback (flags).
const (
	// platformLogBytes: Lambda's own JSON records per invocation
	// (platform.start and platform.report with its X-Ray fields).
	platformLogBytes = 600
)

// scaleResult is item 6.
type scaleResult struct {
	Trace    *capacity.TraceResult
	Cost     capacity.Cost
	Measured capacity.Measured
	// Probe is the model's replay of every request kind item 2 records
	// (ProbeMix): the table of what each request costs.
	Probe    *capacity.TraceResult
	Markdown string // the generated part of docs/scale.md
	Wrote    string // the file written, if any
	Took     time.Duration
}

// unitList renders a request's units by key family: "table IDEM W 2;
// gsi1 PAYMENT W 4, R 0.5".
func unitList(units map[string]capacity.Units) string {
	out := make([]string, 0, len(units))
	for _, f := range slices.Sorted(maps.Keys(units)) {
		var parts []string
		if u := units[f]; u.W > 0 {
			parts = append(parts, fmt.Sprintf("W %.3g", u.W))
		}
		if u := units[f]; u.R > 0 {
			parts = append(parts, fmt.Sprintf("R %.3g", u.R))
		}
		if len(parts) > 0 {
			out = append(out, f+" "+strings.Join(parts, ", "))
		}
	}
	return orNone(out)
}

// orNone joins parts with "; ", "none" when there are none.
func orNone(parts []string) string {
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// shapeList renders a request's calls by shape: "get table EVENT, 2 × write table RATE".
func shapeList(m map[string]float64) string {
	out := make([]string, 0, len(m))
	for _, sh := range slices.Sorted(maps.Keys(m)) {
		if n := m[sh]; n == 1 {
			out = append(out, sh)
		} else if n != 0 {
			out = append(out, fmt.Sprintf("%.3g × %s", n, sh))
		}
	}
	return orNone(out)
}

// hopRow is item 2's row of a retry hop: a batch of hops waits for no
// receiver.
const hopRow = "webhook retry hop (dispatcher, not yet due)"

// checkedRow maps one of item 2's rows to the model's request kind; a
// listing's reads its merchant's shard counts (a writer keeps them cached);
// direct names a tenant read the request makes of the store in Lambda too
// (not a cache's).
type checkedRow struct {
	row, req string
	listing  bool
	direct   string
}

// authorisationBindingRow is item 2's row of the AUTHORISATION
// notification of a payment recorded from bare details.
const authorisationBindingRow = "notification AUTHORISATION, a payment recorded from bare details (receiver)"

// failedAttemptRow is item 2's row of an attempt whose receiver fails.
const failedAttemptRow = "webhook delivery attempt, the receiver failing (dispatcher)"

// rowToRequest are the rows the model is checked against.
var rowToRequest = []checkedRow{
	{"POST payments (Idempotency-Key)", capacity.ReqPayments, false, ""},
	{"POST payments, replay of a finished key", capacity.ReqReplay, false, ""},
	{"POST payments (no Idempotency-Key)", capacity.ReqPaymentsNoKey, false, ""},
	{"POST captures (Idempotency-Key)", capacity.ReqCaptures, false, ""},
	{"POST reversals (Idempotency-Key)", capacity.ReqReversals, false, ""},
	{"POST refunds (Idempotency-Key)", capacity.ReqRefunds, false, ""},
	{"POST amount-updates (Idempotency-Key)", capacity.ReqAmountUpdates, false, ""},
	{"POST sessions (Idempotency-Key)", capacity.ReqSessions, false, ""},
	{"POST payments/details (Idempotency-Key)", capacity.ReqDetails, false, ""},
	{"POST payments, an action answered (Idempotency-Key)", capacity.ReqPaymentsAction, false, ""},
	{"POST payments, an action answered (no Idempotency-Key)", capacity.ReqPaymentsNoKeyAction, false, ""},
	{authorisationBindingRow, capacity.ReqAuthorisationBinding, false, ""},
	{"notification AUTHORISATION (receiver)", "notification " + "AUTHORISATION", false, ""},
	{"notification CAPTURE (receiver)", "notification " + "CAPTURE", false, ""},
	{"notification REFUND (receiver)", "notification " + "REFUND", false, ""},
	{"notification AUTHORISATION_ADJUSTMENT (receiver)", "notification " + "AUTHORISATION_ADJUSTMENT", false, ""},
	{"webhook delivery attempt (dispatcher)", capacity.ReqAttempts, false, ""},
	{failedAttemptRow, capacity.ReqAttemptsFailed, false, ""},
	{hopRow, capacity.ReqHops, false, ""},
	{"GET webhook-deliveries (a page)", capacity.ReqListDeliveries, true, ""},
	{"GET events (a page)", capacity.ReqListEvents, true, ""},
	{"GET payment", capacity.ReqLookups, false, ""},
	{"GET payment timeline (a page)", capacity.ReqTimeline, false, ""},
	{"POST webhook-deliveries retry", capacity.ReqRedrives, false, ""},
	{"GET config", capacity.ReqConfig, false, ""},
	{"POST payment-methods", capacity.ReqMethods, false, ""},
	{"DELETE stored-payment-methods", capacity.ReqDeleteStored, false, ""},
	{"POST webhooks/test", capacity.ReqWebhookTest, false, "tenant: subscriptions list"},
}

// cachedRead reports a tenant or API key call (What): cached per instance
// in Lambda, metered by the model as the caches' refreshes.
func cachedRead(what string) bool {
	return strings.HasPrefix(what, "tenant:") || strings.HasPrefix(what, "auth:")
}

// runScale runs item 6; rt is item 2's result (measured here when nil).
func runScale(cfg *config, rt *roundTripResult) (*scaleResult, error) {
	start := time.Now()
	if rt == nil {
		var err error
		if rt, err = runRoundTrips(cfg); err != nil {
			return nil, fmt.Errorf("round trips for the cost inputs: %w", err)
		}
	}
	res := &scaleResult{}
	var err error
	if res.Measured, err = measuredInputs(cfg, rt); err != nil {
		return nil, err
	}
	rec, err := recordModel(cfg)
	if err != nil {
		return nil, err
	}
	if res.Probe, err = probe(rec); err != nil {
		return nil, err
	}
	mix := capacity.FullMix()
	if cfg.Smoke {
		mix = capacity.SmallMix()
		mix.Rate = 1000
	}
	cfg.logf("scale: replaying %d payments/s for %d s through the capacity model", mix.Rate, mix.Seconds)
	if res.Trace, err = capacity.Run(mix, rec); err != nil {
		return nil, err
	}
	if res.Cost, err = capacity.CostOf(res.Trace, res.Measured); err != nil {
		return nil, err
	}
	md, err := res.Trace.Report(res.Cost, res.Measured)
	if err != nil {
		return nil, err
	}
	res.Markdown = md + requestsTable(res.Probe) +
		fmt.Sprintf("\nGenerated %s by `%s`.\n", time.Now().UTC().Format("2006-01-02"), cfg.Command)
	res.Took = time.Since(start)
	if cfg.ScaleOut != "" {
		if err := spliceInto(cfg.ScaleOut, res.Markdown); err != nil {
			return res, err
		}
		res.Wrote = cfg.ScaleOut
	}
	return res, res.Trace.Check()
}

// probe replays every request kind, for the table of what each costs, and
// fails when one of rowToRequest's is not replayed.
func probe(rec *capacity.Recordings) (*capacity.TraceResult, error) {
	p, err := capacity.Run(ProbeMix(), rec)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, m := range rowToRequest {
		if _, ok := p.Calls[m.req]; !ok {
			missing = append(missing, m.req)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the probe mix replays no %s", strings.Join(missing, ", "))
	}
	return p, nil
}

// measuredInputs are the cost model's inputs: each function's billed
// duration and log bytes from item 2's rows, its memory and the access
// log line from template.yaml.
func measuredInputs(cfg *config, rt *roundTripResult) (capacity.Measured, error) {
	root, err := moduleRoot()
	if err != nil {
		return capacity.Measured{}, err
	}
	memory, err := templateMemory(filepath.Join(root, "template.yaml"))
	if err != nil {
		return capacity.Measured{}, err
	}
	accessLog, err := accessLogBytes(filepath.Join(root, "template.yaml"))
	if err != nil {
		return capacity.Measured{}, err
	}
	fn := func(name string, row string, upstream bool, perBatch int) capacity.Function {
		r, _ := rt.row(row)
		ms := r.medianMS()
		if upstream {
			ms += float64(cfg.UpstreamMS)
		}
		logs := r.logBytesPerRequest()
		if perBatch > 1 { // one invocation handles a batch, its messages concurrently
			if row != hopRow { // a hop waits for no receiver
				ms += float64(cfg.ReceiverMS)
			}
			logs *= float64(perBatch)
		}
		return capacity.Function{Name: name, MemoryMB: memory[name], DurationMS: math.Ceil(ms), LogBytes: logs + platformLogBytes}
	}
	const pay, rpl, capt = "POST payments (Idempotency-Key)", "POST payments, replay of a finished key", "POST captures (Idempotency-Key)"
	return capacity.Measured{
		Functions: map[string]capacity.Function{
			capacity.ReqPayments:      fn("PaymentsFunction", pay, true, 1),
			capacity.ReqReplay:        fn("PaymentsFunction", rpl, false, 1),
			capacity.ReqDetails:       fn("PaymentsFunction", pay, true, 1),
			capacity.ReqCaptures:      fn("ModificationsFunction", capt, true, 1),
			capacity.ReqReversals:     fn("ModificationsFunction", "POST reversals (Idempotency-Key)", true, 1),
			capacity.ReqRefunds:       fn("ModificationsFunction", "POST refunds (Idempotency-Key)", true, 1),
			capacity.ReqAmountUpdates: fn("ModificationsFunction", "POST amount-updates (Idempotency-Key)", true, 1),
			capacity.ReqSessions:      fn("SessionsFunction", "POST sessions (Idempotency-Key)", true, 1),
			capacity.ReqNotifications: fn("NotificationsFunction", "notification AUTHORISATION (receiver)", false, 1),
			capacity.ReqAttempts:      fn("WebhookDispatcherFunction", "webhook delivery attempt (dispatcher)", false, capacity.SQSBatch),
			capacity.ReqHops:          fn("WebhookDispatcherFunction", hopRow, false, capacity.SQSBatch),
		},
		AccessLogBytes: accessLog,
		Source: fmt.Sprintf("measured by item 2 on moto (median of %d requests each; details priced as payments), "+
			"plus an assumed upstream latency of %d ms for the calls that reach the upstream and a receiver answering in %d ms "+
			"(a batch of hops waits for none: one hop's duration, its sends run concurrently); "+
			"memory from template.yaml; %d bytes of Lambda platform records per invocation (estimated)",
			cfg.RTRequests, cfg.UpstreamMS, cfg.ReceiverMS, platformLogBytes),
	}, nil
}

// requestsTable renders what one request of each kind costs as the model
// replays it (p: the probe's replay).
func requestsTable(p *capacity.TraceResult) string {
	var b strings.Builder
	b.WriteString("\n### The requests the model replays\n\nWhat one request of each kind costs, as the model replays it: " +
		"the DynamoDB calls the adapter made for it on moto through the service's real handlers (item 2's requests made once " +
		"more on a merchant shaped as the trace's, every call recorded with the items it replaced, wrote and read; tenant " +
		"reads left to the caches' refreshes), per request, by shape — the kind of call and the key families it touches — " +
		"and their capacity units by key family, an index's writes included.\n\n" +
		"| request | calls | calls by shape | units by key family |\n|---|---|---|---|\n")
	for _, m := range rowToRequest {
		fmt.Fprintf(&b, "| %s | %.1f | %s | %s |\n", m.req, p.Calls[m.req], shapeList(p.Shapes[m.req]), unitList(p.Units[m.req]))
	}
	return b.String()
}

// spliceInto writes md into the generated part of the document at path.
func spliceInto(path, md string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := capacity.Splice(string(doc), md)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// templateMemory reads each function's MemorySize from template.yaml: the
// Globals value unless the function sets its own.
func templateMemory(path string) (map[string]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// A value may carry a comment (`MemorySize: 512 # docs/sizing.md`):
	// missing it priced every function at the Globals' 128 MB.
	memRe := regexp.MustCompile(`^\s+MemorySize:\s*(\d+)\s*(#.*)?$`)
	resRe := regexp.MustCompile(`^  ([A-Za-z0-9]+):\s*$`)
	global, section, resource := 0, "", ""
	own := map[string]int{}
	var functions []string
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) > 0 && line[0] != ' ' && line[0] != '#' {
			section, resource = strings.TrimSuffix(strings.TrimSpace(line), ":"), ""
			continue
		}
		if section == "Resources" {
			if m := resRe.FindStringSubmatch(line); m != nil {
				resource = m[1]
			}
			if strings.TrimSpace(line) == "Type: AWS::Serverless::Function" && resource != "" {
				functions = append(functions, resource)
			}
		}
		if m := memRe.FindStringSubmatch(line); m != nil {
			v, _ := strconv.Atoi(m[1])
			switch {
			case section == "Globals":
				global = v
			case section == "Resources" && resource != "":
				own[resource] = v
			}
		}
	}
	out := map[string]int{}
	for _, fn := range functions {
		out[fn] = cmp.Or(own[fn], global, 128) // 128 MB: Lambda's default
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no AWS::Serverless::Function found", path)
	}
	return out, nil
}

// accessLogBytes is the size of one API Gateway access log line: the
// template's Format with each $context variable replaced by a typical
// value.
func accessLogBytes(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.Index(s, "Format: >-")
	if i < 0 {
		return 0, fmt.Errorf("%s: no access log Format", path)
	}
	var format strings.Builder
	for _, line := range strings.Split(s[i+len("Format: >-"):], "\n")[1:] {
		if !strings.HasPrefix(line, "          ") {
			break
		}
		format.WriteString(strings.TrimSpace(line))
	}
	typical := map[string]string{
		"requestId": "6c9e5f0a-2b7d-4c1e-9f3a-8d2b1e0c7a55", "extendedRequestId": "Ab1Cd2Ef3Gh4Ij5=",
		"identity.sourceIp": "203.0.113.24", "identity.userAgent": "paysvc-client-go/1.4 (+https://shop.example)",
		"requestTime": "02/Mar/2026:10:00:00 +0000", "httpMethod": "POST", "path": "/live/v1/ecom/site_bigshop_web/payments",
		"resourcePath": "/v1/ecom/{siteId}/payments", "protocol": "HTTP/1.1", "stage": "live", "status": "200",
		"responseLength": "412", "responseLatency": "287", "integration.latency": "281", "integration.status": "200",
		"error.responseType": "-", "error.message": "-", "xrayTraceId": "Root=1-65e2f4a0-0123456789abcdef01234567;Sampled=0",
	}
	re := regexp.MustCompile(`\$context\.([A-Za-z.]+)`)
	line := re.ReplaceAllStringFunc(format.String(), func(v string) string {
		if t, ok := typical[strings.TrimPrefix(v, "$context.")]; ok {
			return t
		}
		return "-"
	})
	return float64(len(line) + 1), nil
}

// scaleSection renders item 6 (a summary; docs/scale.md has the whole).
func (r *report) scaleSection(w func(string, ...any)) {
	w("## 6. Scale: DynamoDB capacity model and cost of a payment\n\n")
	w("The capacity model (`shared/capacity`) replays one merchant's trace, each request's DynamoDB calls those the store adapter\n")
	w("made for its kind on moto in this run (section 2's requests, recorded with their items, keys templated per request), and\n")
	w("meters write and read units per partition key and second on the table and its indexes; the whole report, with the quotas to\n")
	w("raise for 10,000 payments/s, is [docs/scale.md](docs/scale.md).\n\n")
	r.sectionError(w, secScale)
	s := r.scale
	if s == nil || s.Trace == nil {
		return
	}
	t := s.Trace
	w("Trace: %d payments/s for %d s (%d operations metered in %s).\n\n", t.Mix.Rate, t.Mix.Seconds, t.Ops, s.Took.Round(time.Second))
	w("| key family | busiest partition key | peak WCU/s | peak RCU/s |\n|---|---|---|---|\n")
	for _, f := range t.Families {
		key := f.Part.PK
		if f.W == 0 {
			key = f.RPart.PK
		}
		w("| %s | `%s` | %.0f | %.0f |\n", f.Family, key, f.W, f.R)
	}
	w("\nDynamoDB per payment: %.1f WRU, %.1f RRU. SQS: about %.0f messages in flight (only the batches being handled; retries wait as %.0f delayed messages, %.3f hops per payment). Cost of one million payments at on-demand list prices (%s, %s): **$%.0f**",
		t.Total.W/t.Payments, t.Total.R/t.Payments, t.InFlight(s.Measured), t.SQSDelayed, t.Requests[capacity.ReqHops]/t.Payments,
		capacity.PriceRegion, capacity.PriceDate, s.Cost.Total)
	if s.Wrote != "" {
		w(" (table in %s)", s.Wrote)
	}
	w(".\n\n")
}

// ProbeMix is the small trace with a share of every request kind item 2
// records (FullMix has no amount updates, merchants' reads, rate-only
// requests, payments without a key, redrives or webhook tests): its
// replay prices one request of each.
func ProbeMix() capacity.Mix {
	m := capacity.SmallMix()
	m.Rate = 200
	m.AmountUpdates = 0.1
	m.Lookups, m.TimelinePages, m.RateOnly, m.NoKey, m.Redrives, m.WebhookTests = 0.1, 0.1, 0.1, 0.1, 0.1, 0.1
	return m
}

// recordModel makes item 2's requests once more on a merchant shaped as
// the capacity model's trace (FullMix's subscriptions, the table's
// listing shard counts), every DynamoDB call recorded with the items it
// replaced, wrote and read: what capacity.Run replays. A request kind
// keeps the calls it makes of the store in Lambda: the tenant reads
// (cached per instance) and a writer's listing shard counts (cached a
// minute) are left to the refreshes the model meters, but for m.direct
// and a listing's own read of the counts.
func recordModel(cfg *config) (*capacity.Recordings, error) {
	rc := *cfg
	rc.recordStates = true
	rt, err := runRoundTrips(&rc)
	if err != nil {
		return nil, fmt.Errorf("item 2 recorded: %w", err)
	}
	rec := &capacity.Recordings{Requests: map[string][][]capacity.Recorded{},
		Subscriptions: modelSubscriptions, DeliveryShards: dynamo.DeliveryShards, EventShards: dynamo.EventLogShards}
	for _, m := range rowToRequest {
		row, ok := rt.row(m.row)
		if !ok || len(row.Recorded) == 0 {
			return nil, fmt.Errorf("item 2 recorded no row %q", m.row)
		}
		for _, req := range row.Recorded {
			calls := []capacity.Recorded{}
			for _, c := range req {
				if (cachedRead(c.What) && c.What != m.direct) || (!m.listing && c.What == shardCounts+" read") {
					continue
				}
				calls = append(calls, c.Rec)
			}
			rec.Requests[m.req] = append(rec.Requests[m.req], calls)
		}
	}
	return rec, nil
}

// modelSubscriptions are the recorded merchant's webhook subscriptions:
// FullMix's.
var modelSubscriptions = capacity.FullMix().Subscriptions
