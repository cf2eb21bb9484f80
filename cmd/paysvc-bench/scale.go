package main

import (
	"bufio"
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
	Checks   []callCheck
	Markdown string // the generated part of docs/scale.md
	Wrote    string // the file written, if any
	Took     time.Duration
}

// callCheck sets one request kind's DynamoDB calls in the model beside
// those counted on moto.
type callCheck struct {
	Request, Row    string
	Model, Measured float64
	// Differ names the call shapes whose numbers differ, and the key
	// families one side bills and the other does not ("": none).
	Differ string
	// ModelUnits and MotoUnits are one request's units by key family: the
	// model's, and the adapter's calls recorded on moto replayed through
	// the model's meter.
	ModelUnits, MotoUnits map[string]capacity.Units
}

func (c callCheck) ok() bool { return math.Abs(c.Model-c.Measured) < 0.01 && c.Differ == "" }

// familiesDiffer names the key families (an index's included) that one
// side bills units to and the other does not.
func familiesDiffer(model, moto map[string]capacity.Units) string {
	var out []string
	billed := func(u capacity.Units) bool { return u.W > 0 || u.R > 0 }
	for _, fam := range slices.Sorted(maps.Keys(moto)) {
		if billed(moto[fam]) && !billed(model[fam]) {
			out = append(out, fmt.Sprintf("%q billed on moto, not in the model", fam))
		}
	}
	for _, fam := range slices.Sorted(maps.Keys(model)) {
		if billed(model[fam]) && !billed(moto[fam]) {
			out = append(out, fmt.Sprintf("%q billed in the model, not on moto", fam))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (key families: " + strings.Join(out, ", ") + ")"
}

// unitList renders a request's units by family, the model's beside
// moto's: "table IDEM W 2 / 2; gsi1 PAYMENT W 4 / 3, R 0.5 / 0.5".
func unitList(model, moto map[string]capacity.Units) string {
	fams := map[string]bool{}
	for f := range model {
		fams[f] = true
	}
	for f := range moto {
		fams[f] = true
	}
	out := make([]string, 0, len(fams))
	for _, f := range slices.Sorted(maps.Keys(fams)) {
		var parts []string
		if model[f].W > 0 || moto[f].W > 0 {
			parts = append(parts, fmt.Sprintf("W %.3g / %.3g", model[f].W, moto[f].W))
		}
		if model[f].R > 0 || moto[f].R > 0 {
			parts = append(parts, fmt.Sprintf("R %.3g / %.3g", model[f].R, moto[f].R))
		}
		if len(parts) > 0 {
			out = append(out, f+" "+strings.Join(parts, ", "))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
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
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

// shapesDiffer compares the model's calls of a request, by shape, with
// those the adapter made on moto for m's row r (per request), naming each
// that differs.
func (m checkedRow) shapesDiffer(model map[string]float64, r rtRow) string {
	var out []string
	seen := map[string]bool{}
	moto := maps.Clone(r.Shapes)
	if m.listing && r.ShardReads > 0 {
		moto["get table MERCHANT"] += r.ShardReads
	}
	if sh, ok := r.CachedShapes[m.direct]; ok {
		moto[sh] += r.Counts[m.direct]
	}
	for sh, n := range moto {
		seen[sh] = true
		if got := float64(n) / float64(max(r.Requests, 1)); math.Abs(got-model[sh]) >= 0.01 {
			out = append(out, fmt.Sprintf("%q model %.2f moto %.2f", sh, model[sh], got))
		}
	}
	for sh, want := range model {
		if !seen[sh] && want != 0 {
			out = append(out, fmt.Sprintf("%q model %.2f moto 0", sh, want))
		}
	}
	if len(out) == 0 {
		return ""
	}
	slices.Sort(out)
	return " (calls by shape: " + strings.Join(out, ", ") + ")"
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
	{"notification CANCEL_OR_REFUND (receiver)", "notification " + "CANCEL_OR_REFUND", false, ""},
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

// storeCalls counts the DynamoDB calls per request of m's row r, tenant
// and API key reads aside (cached per instance in Lambda; the model meters
// their refreshes) but for m.direct, and but for a listing the shard
// counts' reads (writers cache them for a minute).
func (m checkedRow) storeCalls(r rtRow) float64 {
	n := 0
	for what, c := range r.Counts {
		if strings.HasPrefix(what, "[") || strings.HasPrefix(what, "queue:") || (cachedRead(what) && what != m.direct) ||
			(!m.listing && what == shardCounts+" read") {
			continue
		}
		n += c
	}
	return float64(n) / float64(max(r.Requests, 1))
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
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	memory, err := templateMemory(filepath.Join(root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	accessLog, err := accessLogBytes(filepath.Join(root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	res := &scaleResult{}
	// The model with item 2's single subscription, for the call check.
	probe := capacity.SmallMix()
	probe.Rate, probe.Subscriptions = 200, 1
	probe.AmountUpdates = 0.1                                                                                 // none in the full trace; checked here
	probe.Lookups, probe.TimelinePages, probe.RateOnly, probe.NoKey, probe.Redrives = 0.1, 0.1, 0.1, 0.1, 0.1 // likewise
	probe.WebhookTests = 0.1
	// the merchant on moto was created with one listing shard each
	probe.DeliveryShards, probe.EventShards = 1, 1
	pt, err := capacity.Run(probe)
	if err != nil {
		return nil, err
	}
	rows := map[string]rtRow{}
	for _, x := range rt.Rows {
		rows[x.Name] = x
	}
	// Item 2's requests again, each DynamoDB call recorded with its items
	// (read before and after every write), for their units.
	recCfg := *cfg
	recCfg.recordStates = true
	recorded, err := runRoundTrips(&recCfg)
	if err != nil {
		return nil, fmt.Errorf("item 2 recorded: %w", err)
	}
	var mismatch []string
	for _, m := range rowToRequest {
		row, ok := rows[m.row]
		if !ok {
			return nil, fmt.Errorf("item 2 has no row %q", m.row)
		}
		rec, ok := recorded.row(m.row)
		if !ok {
			return nil, fmt.Errorf("item 2 recorded no row %q", m.row)
		}
		moto, err := m.recordedUnits(rec)
		if err != nil {
			return nil, err
		}
		c := callCheck{Request: m.req, Row: m.row, Model: pt.Calls[m.req], Measured: m.storeCalls(row),
			Differ:     m.shapesDiffer(pt.Shapes[m.req], row) + familiesDiffer(pt.Units[m.req], moto),
			ModelUnits: pt.Units[m.req], MotoUnits: moto}
		res.Checks = append(res.Checks, c)
		if !c.ok() {
			mismatch = append(mismatch, fmt.Sprintf("%s: model %.1f calls, moto %.1f%s", m.req, c.Model, c.Measured, c.Differ))
		}
	}

	mix := capacity.FullMix()
	if cfg.Smoke {
		mix = capacity.SmallMix()
		mix.Rate = 1000
	}
	cfg.logf("scale: replaying %d payments/s for %d s through the capacity model", mix.Rate, mix.Seconds)
	tr, err := capacity.Run(mix)
	if err != nil {
		return nil, err
	}
	res.Trace = tr

	fn := func(name string, row string, upstream bool, perBatch int) capacity.Function {
		r := rows[row]
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
	res.Measured = capacity.Measured{
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
	}
	if res.Cost, err = capacity.CostOf(tr, res.Measured); err != nil {
		return nil, err
	}
	md, err := tr.Report(res.Cost, res.Measured)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(md)
	b.WriteString("\n### The model against moto\n\nDynamoDB calls per request in the model and counted by item 2's SDK middleware on moto " +
		"(one subscription there, so the model runs with one here; tenant reads aside: cached per instance), " +
		"and the calls by shape — the kind of call and the key families it touches — which must be the same in both " +
		"(`capacity.ShapeOf` names the adapter's calls from the SDK's input, the model's from what it meters).\n\n" +
		"| request | model | moto | calls by shape (per request) | |\n|---|---|---|---|---|\n")
	for _, c := range res.Checks {
		b.WriteString(fmt.Sprintf("| %s | %.1f | %.1f | %s | %s |\n", c.Request, c.Model, c.Measured, shapeList(pt.Shapes[c.Request]), mark(c.ok())))
	}
	b.WriteString("\nThe same requests' capacity units by key family (an index's write included), the model's / moto's: moto's are " +
		"the calls item 2 made, recorded again with every item a write replaced and wrote and every item a read returned, " +
		"priced by the model's own meter (`capacity.Recorded`). A family billed on one side only fails the check; units " +
		"may differ by the rounding of items near a kilobyte, as the bench's payloads (its references, the simulator's " +
		"answers, nanosecond timestamps) are not the model's.\n\n| request | units by key family, model / moto |\n|---|---|\n")
	for _, c := range res.Checks {
		fmt.Fprintf(&b, "| %s | %s |\n", c.Request, unitList(c.ModelUnits, c.MotoUnits))
	}
	fmt.Fprintf(&b, "\nGenerated %s by `%s`.\n", time.Now().UTC().Format("2006-01-02"), cfg.Command)
	res.Markdown = b.String()
	res.Took = time.Since(start)

	if cfg.ScaleOut != "" {
		doc, err := os.ReadFile(cfg.ScaleOut)
		if err != nil {
			return res, err
		}
		out, err := capacity.Splice(string(doc), res.Markdown)
		if err != nil {
			return res, fmt.Errorf("%s: %w", cfg.ScaleOut, err)
		}
		if err := os.WriteFile(cfg.ScaleOut, []byte(out), 0o644); err != nil {
			return res, err
		}
		res.Wrote = cfg.ScaleOut
	}
	var errs []string
	if err := tr.Check(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(mismatch) > 0 {
		errs = append(errs, "the model's DynamoDB calls differ from those counted on moto: "+strings.Join(mismatch, "; "))
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return res, nil
}

// templateMemory reads each function's MemorySize from template.yaml: the
// Globals value unless the function sets its own.
func templateMemory(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A value may carry a comment (`MemorySize: 512 # docs/sizing.md`):
	// missing it priced every function at the Globals' 128 MB.
	memRe := regexp.MustCompile(`^\s+MemorySize:\s*(\d+)\s*(#.*)?$`)
	resRe := regexp.MustCompile(`^  ([A-Za-z0-9]+):\s*$`)
	global, section, resource := 0, "", ""
	own := map[string]int{}
	var functions []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
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
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, fn := range functions {
		out[fn] = global
		if v, ok := own[fn]; ok {
			out[fn] = v
		}
		if out[fn] == 0 {
			out[fn] = 128 // Lambda's default
		}
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
	if !r.cfg.sectionWanted(secScale) {
		return
	}
	w("## 6. Scale: DynamoDB capacity model and cost of a payment\n\n")
	w("The capacity model (`shared/capacity`) replays one merchant's trace through the store adapter's own item builders and\n")
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

// recordedUnits are the units of one request of m's row r by key family:
// its recorded DynamoDB calls (those storeCalls counts) replayed through
// the capacity model's meter, averaged over the row's requests.
func (m checkedRow) recordedUnits(r rtRow) (map[string]capacity.Units, error) {
	if len(r.Recorded) == 0 {
		return nil, fmt.Errorf("%s: no recorded calls", r.Name)
	}
	meter := capacity.NewMeter()
	sum := map[string]capacity.Units{}
	for _, req := range r.Recorded {
		for _, c := range req {
			if (cachedRead(c.What) && c.What != m.direct) || (!m.listing && c.What == shardCounts+" read") {
				continue
			}
			if err := meter.Replay(c.Rec); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", r.Name, c.What, err)
			}
		}
		for fam, u := range meter.TakeUnits() {
			s := sum[fam]
			sum[fam] = capacity.Units{W: s.W + u.W, R: s.R + u.R}
		}
	}
	n := float64(len(r.Recorded))
	for fam, u := range sum {
		sum[fam] = capacity.Units{W: u.W / n, R: u.R / n}
	}
	return sum, nil
}
