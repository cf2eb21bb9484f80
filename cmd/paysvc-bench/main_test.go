package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/capacity"
	"github.com/yp/paysvc/shared/testutil/moto"
)

// TestMain stops the moto_server this package may start.
func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// TestSmoke runs every section of the bench command in smoke mode and
// checks the report. The real functions are started only with
// PAYSVC_BENCH_FULL=1: building them from a cold build cache takes about
// a minute, so by default the cold-start section starts the Lambda
// harness's own echo function, which exercises the same code in seconds.
func TestSmoke(t *testing.T) {
	// -timeout is a failure bound only (nothing waits on it): generous,
	// as the run builds the cold-start binaries, which on a loaded machine
	// with a cold build cache took over 90 s.
	args := []string{"-smoke", "-timeout", "10m"}
	fn := "| config |"
	if os.Getenv("PAYSVC_BENCH_FULL") == "" {
		fn = "| echo |"
		t.Log("cold start measured on tests/lambdaharness/testdata/echo; set PAYSVC_BENCH_FULL=1 to start functions/config")
		args = append(args, "-functions", "none", "-coldstart-pkgs", "./tests/lambdaharness/testdata/echo")
	}
	var progress bytes.Buffer
	cfg, err := parseFlags(args, &progress)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("smoke run took %s", time.Since(start).Round(time.Millisecond))
	md := rep.markdown()
	for _, want := range []string{
		"## Targets", "Smoke run", "## 1. Overhead per endpoint", "## 2. Store round trips", "## 3. Cold start",
		"## 4. Webhook dispatch", "| 0 ms | 1 | payments | 40 |", "POST payments (Idempotency-Key)",
		"idempotency: claim", "webhook delivery attempt (dispatcher)", "webhook retry hop (dispatcher, not yet due)", fn, "embedded (bbolt)",
		"## 6. Scale: DynamoDB capacity model", "| gsi2 MERCHANT | `MERCHANT#m_bigshop#DELIVERIES#",
		"## 7. Contention on one payment", "| DynamoDB (moto) | 1 | 50 |",
		"Every write endpoint ≤ 3 sequential DynamoDB round trips with warm caches",
		"≤ 4 sequential DynamoDB round trips with a cold tenant cache",
		"The local store's added p50 at concurrency 1, 0 ms upstream ≤ 5 ms",
		"Write request units per payment in the capacity model ≤ 76.7",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	for _, retired := range []string{"Added p50 ≤ 1 ms", "Added p99 ≤ 5 ms", "Concurrency 16", "group commit"} {
		if strings.Contains(md, retired) {
			t.Errorf("report still has %q:\n%s", retired, md)
		}
	}
	// The target names each write endpoint with its steps. How many is
	// TestWriteEndpointStoreRoundTrips's to hold (from call timing, which a
	// loaded machine can only lengthen, so it measures a row again before
	// failing it); a smoke run takes one sample.
	for _, name := range []string{"POST captures", "POST refunds", "POST payments/details", "POST payments, an action answered",
		"POST payments/details naming its reference"} {
		if !regexp.MustCompile(regexp.QuoteMeta(name) + ` \d+;`).MatchString(md) {
			t.Errorf("the round-trip target names no steps for %s:\n%s", name, md)
		}
	}
	if rep.overhead == nil || len(rep.overhead.Rows) == 0 || rep.roundTrips == nil || rep.coldStart == nil || rep.webhooks == nil || rep.scale == nil || rep.contention == nil {
		t.Fatalf("a section has no result:\n%s", md)
	}
	// docs/scale.md's part: what each request kind costs as the model
	// replays the adapter's calls recorded on moto.
	for _, want := range []string{"### The requests the model replays", "| request | calls | calls by shape | units by key family |",
		"| POST payments | 6.0 | ", "gsi1 INFLIGHT W ", "| webhook attempt, the receiver failing (dispatcher) | 3.0 |"} {
		if !strings.Contains(rep.scale.Markdown, want) {
			t.Errorf("docs/scale.md's part lacks %q:\n%s", want, rep.scale.Markdown)
		}
	}
	for _, row := range rep.overhead.Rows {
		if row.Skipped == "" && (row.Service.N != row.Requests || row.Direct.N != row.Requests) {
			t.Errorf("%s at %s: %d/%d requests measured, want %d", row.Endpoint, row.Latency, row.Service.N, row.Direct.N, row.Requests)
		}
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/yp/paysvc/shared/httpapi
BenchmarkRequestCPU/payments-2   	   10000	    112725 ns/op	    142024 cpu-ns/op	   44638 B/op	     493 allocs/op
BenchmarkParsePayment-2   	       3	     28002 ns/op	  47.21 MB/s	   11384 B/op	     143 allocs/op
PASS`
	bs := parseGoBench(out)
	if len(bs) != 2 {
		t.Fatalf("got %d benchmarks: %+v", len(bs), bs)
	}
	b, ok := findBench(bs, "BenchmarkRequestCPU/payments")
	if !ok || b.Pkg != "github.com/yp/paysvc/shared/httpapi" || b.Metrics["cpu-ns/op"] != 142024 || b.Metrics["allocs/op"] != 493 {
		t.Fatalf("parsed %+v", b)
	}
	if bs[1].Metrics["MB/s"] != 47.21 {
		t.Fatalf("MB/s: %+v", bs[1])
	}
	m := medianRuns(parseGoBench(out + "\npkg: github.com/yp/paysvc/shared/httpapi\n" +
		"BenchmarkRequestCPU/payments-2 100 90000 ns/op\nBenchmarkRequestCPU/payments-2 100 200000 ns/op\n"))
	if b, _ := findBench(m, "BenchmarkRequestCPU/payments"); len(m) != 2 || b.Runs != 3 || b.Metrics["ns/op"] != 112725 {
		t.Fatalf("median of 3 runs: %+v", m)
	}
}

func TestStepsGroupsOverlappingCalls(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	calls := []call{
		{Service: "DynamoDB", What: "rate limit: hit", Start: at(0), End: at(5)},
		{Service: "DynamoDB", What: "idempotency: claim", Start: at(6), End: at(10)},
		{What: "[upstream call] payments", Start: at(11), End: at(20)},
		{Service: "DynamoDB", What: "idempotency: complete", Start: at(21), End: at(25)},
		{Service: "DynamoDB", What: "payment record: write", Start: at(21), End: at(27)},
	}
	ss := steps(calls)
	if got := storeDepth(ss); got != 3 {
		t.Errorf("storeDepth = %d, want 3", got)
	}
	want := "rate limit: hit → idempotency: claim → [upstream call] payments → (idempotency: complete ‖ payment record: write)"
	if got := chain(ss); got != want {
		t.Errorf("chain = %q, want %q", got, want)
	}
	// A read made while the upstream answers is no step before or after it.
	along := append(calls[:2:2], call{Op: opUpstream, What: "[upstream call] payments", Start: at(11), End: at(20)},
		call{Service: "DynamoDB", What: "payment record: read", Start: at(11), End: at(15)})
	along = append(along, calls[3:]...)
	if got := storeDepth(steps(along)); got != 3 {
		t.Errorf("storeDepth with a read alongside the upstream call = %d, want 3: %s", got, chain(steps(along)))
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i))
	}
	if percentile(ds, 50) != 50 || percentile(ds, 99) != 99 || percentile(ds, 100) != 100 || percentile(ds[:1], 99) != 1 {
		t.Fatal("nearest-rank percentiles wrong")
	}
}

func TestClassify(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(pk, sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(pk), "sk": s(sk)}
	}
	for _, tc := range []struct {
		op     string
		params any
		want   string
	}{
		{"GetItem", &dynamodb.GetItemInput{Key: key("APIKEY#abc", "META")}, "auth: API key read"},
		{"UpdateItem", &dynamodb.UpdateItemInput{Key: key("RATE#rl#k#1", "WINDOW")}, "rate limit: hit"},
		{"PutItem", &dynamodb.PutItemInput{Item: key("IDEM#m_demo#k", "KEY")}, "idempotency: claim"},
		{"UpdateItem", &dynamodb.UpdateItemInput{Key: key("IDEM#m_demo#k", "KEY")}, "idempotency: complete"},
		{"PutItem", &dynamodb.PutItemInput{Item: key("PAYMENT#PSP1", "META")}, "payment record: write"},
		{"GetItem", &dynamodb.GetItemInput{Key: key("MERCHANT#m_demo", "SUB#s")}, "tenant: subscription read"},
		{"Query", &dynamodb.QueryInput{
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("MERCHANT#m_demo"), ":prefix": s("SUB#")},
		}, "tenant: subscriptions list"},
		// A payment's head is read by one BatchGetItem (HEAD and META), its
		// entries by another, a page of its timeline by one Query of its
		// facts; a write is one transaction, its head put whole or updated
		// by a delta; its events are listed through gsi1.
		{"BatchGetItem", &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			"paysvc": {Keys: []map[string]types.AttributeValue{key("PAYMENT#PSP1", "HEAD"), key("PAYMENT#PSP1", "META")}},
		}}, "payment record: read"},
		{"BatchGetItem", &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			"paysvc": {Keys: []map[string]types.AttributeValue{key("PAYMENT#PSP1", "E#op_1"), key("PAYMENT#PSP1", "META")}},
		}}, "payment entries: read"},
		{"Query", &dynamodb.QueryInput{
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :f)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("PAYMENT#PSP1"), ":f": s("F#")},
		}, "payment timeline: read"},
		{"TransactWriteItems", &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{Item: key("PAYMENT#PSP1", "HEAD")}}, {Put: &types.Put{Item: key("PAYMENT#PSP1", "F#2026-03-02T10:00:00.000000000Z#f1")}},
		}}, "payment record: write"},
		{"TransactWriteItems", &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{Key: key("PAYMENT#PSP1", "HEAD")}}, {Put: &types.Put{Item: key("PAYMENT#PSP1", "E#op_1")}},
		}}, "payment record: write"},
		{"Query", &dynamodb.QueryInput{
			IndexName:                 aws.String("gsi1"),
			KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("PAYMENT#PSP1"), ":prefix": s("EVENT#")},
		}, "events: list of payment"},
		{"PutItem", &dynamodb.PutItemInput{Item: key("EVENTLOG#m_demo#3", "2026-03-02T10:00:00.000000000Z#evt_1")}, "event history: write"},
	} {
		if got := classify("DynamoDB", tc.op, tc.params); got != tc.want {
			t.Errorf("classify(%s %T) = %q, want %q", tc.op, tc.params, got, tc.want)
		}
	}
	if got := classify("SQS", "SendMessage", nil); got != "queue: enqueue delivery job" {
		t.Errorf("SQS SendMessage: %q", got)
	}
}

// TestTemplateMemory: the cost model prices each function at the memory
// template.yaml gives it, also when the value carries a comment.
func TestTemplateMemory(t *testing.T) {
	mem, err := templateMemory("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for fn, want := range map[string]int{
		"PaymentsFunction": 512, "ModificationsFunction": 512, "NotificationsFunction": 512,
		"WebhookDispatcherFunction": 256, "SchedulerFunction": 128, "SmokeTestFunction": 128,
	} {
		if mem[fn] != want {
			t.Errorf("%s: %d MB, want %d (template.yaml)", fn, mem[fn], want)
		}
	}
}

// A listing page over its bound is explained with the event history's own
// page at 10,000 items, measured in the same run.
func TestListingTargetMiss(t *testing.T) {
	r := &report{gobench: parseGoBench(`pkg: github.com/yp/paysvc/shared/store/dynamo
BenchmarkListingPage/deliveries/1-shard/empty-2 100 4360000 ns/op 2 calls/op
BenchmarkListingPage/deliveries/1-shard/10000-2 10 131000000 ns/op 3 calls/op
BenchmarkListingPage/events/1-shard/empty-2 100 6130000 ns/op 2 calls/op
BenchmarkListingPage/events/1-shard/10000-2 10 90250000 ns/op 2 calls/op
PASS`)}
	got := r.listingTarget()
	if got.Status != fail || !strings.Contains(got.Miss, "deliveries, 10,000 is one consistent read") ||
		!strings.Contains(got.Miss, "the event history's own page at 10,000 (90.25 ms)") {
		t.Fatalf("listing target: %+v", got)
	}
}

// The local store's target holds the added p50 of the writing endpoints
// at concurrency 1 to 5 ms; the write units' target the capacity model's
// WRU per payment to its budget.
func TestLocalStoreAndWriteUnitsTargets(t *testing.T) {
	rows := func(added time.Duration) *overheadResult {
		res := &overheadResult{}
		for _, ep := range []string{"sessions", "payments", "captures"} {
			res.Rows = append(res.Rows, overheadRow{Endpoint: ep, Concurrency: 1,
				Service: stats{P50: time.Millisecond + added}, Direct: stats{P50: time.Millisecond}})
		}
		return res
	}
	trace := func(wru float64) *scaleResult {
		tr := &capacity.TraceResult{Payments: 1000}
		tr.Total.W = wru * 1000
		return &scaleResult{Trace: tr}
	}
	for _, tc := range []struct {
		name       string
		r          report
		target     func(*report) target
		wantStatus string
	}{
		{"local store within 5 ms", report{overhead: rows(4900 * time.Microsecond)}, (*report).localStoreTarget, pass},
		{"local store over 5 ms", report{overhead: rows(5100 * time.Microsecond)}, (*report).localStoreTarget, fail},
		{"local store not measured", report{}, (*report).localStoreTarget, notMeasured},
		{"write units within the budget", report{scale: trace(76.6)}, (*report).writeUnitsTarget, pass},
		{"write units over the budget", report{scale: trace(76.8)}, (*report).writeUnitsTarget, fail},
		{"write units not measured", report{}, (*report).writeUnitsTarget, notMeasured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.target(&tc.r)
			if got.Status != tc.wantStatus || (got.Status == fail) != (got.Miss != "") {
				t.Errorf("%+v, want status %s (and a miss exactly when failed)", got, tc.wantStatus)
			}
		})
	}
}
