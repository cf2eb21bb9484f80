package capacity

import (
	"fmt"
	"strings"
)

// On-demand list prices, region us-east-1 (N. Virginia), as AWS publishes
// them on its pricing pages (checked 2025-06; DynamoDB's on-demand prices
// are those after the 2024-11-01 reduction). First pricing tier of each
// service, no free tier, no savings plans. Update them here; docs/scale.md
// is regenerated from them by `make bench`.
const (
	PriceRegion = "us-east-1"
	PriceDate   = "2025-06"

	PriceAPIGatewayREST = 3.50         // USD per million REST API requests (first 333 million a month)
	PriceLambdaRequest  = 0.20         // USD per million invocations
	PriceLambdaGBSecArm = 0.0000133334 // USD per GB-second, arm64 (first 7.5 billion GB-s a month)
	PriceDynamoWRU      = 0.625        // USD per million write request units, on demand, Standard table class
	PriceDynamoRRU      = 0.125        // USD per million read request units
	PriceSQSStandard    = 0.40         // USD per million requests (each 64 KB chunk is one)
	PriceLogsIngestGB   = 0.50         // USD per GB ingested, CloudWatch Logs Standard
	PriceXRayRecorded   = 5.00         // USD per million traces recorded
)

// X-Ray's default sampling rule: the first request each second, then 5 %.
// At thousands of requests per second the 5 % is what counts.
const XRaySampled = 0.05

// SQS batch size of the dispatcher's event source (template.yaml): the
// event source mapping receives and deletes up to this many messages per
// request.
const SQSBatch = 10

// Function is a Lambda function's measured request: its billed duration
// and the log bytes it writes, at its memory size (template.yaml).
type Function struct {
	Name       string
	MemoryMB   int
	DurationMS float64 // per invocation, as billed (1 ms granularity)
	LogBytes   float64 // per invocation: the service's JSON lines + the platform's START/END/REPORT
}

// Measured are the inputs the cost model takes from measurements.
type Measured struct {
	// Functions by request kind (Req* constants): which function serves
	// it, how long it runs and what it logs.
	Functions map[string]Function
	// AccessLogBytes is API Gateway's access log line per request.
	AccessLogBytes float64
	// Source says where the figures come from (the report prints it).
	Source string
}

// CostLine is one row of the cost per million payments.
type CostLine struct {
	Item     string
	Quantity float64 // per payment
	Unit     string
	USD      float64 // per million payments
}

// Cost is the cost of one million payments.
type Cost struct {
	Lines []CostLine
	Total float64
}

// apiRequests are the request kinds that pass API Gateway.
var apiRequests = []string{ReqSessions, ReqPayments, ReqReplay, ReqDetails, ReqCaptures, ReqReversals, ReqRefunds, ReqAmountUpdates, ReqNotifications}

// functionKinds are the request kinds a Lambda function serves: the API's
// and the dispatcher's (attempts, and hops of retries not yet due).
var functionKinds = append(append([]string{}, apiRequests...), ReqAttempts, ReqHops)

// CostOf prices the trace's requests and capacity units per million
// payments with the measured durations and log sizes.
func CostOf(t *TraceResult, m Measured) (Cost, error) {
	per := func(req string) float64 { return t.Requests[req] / t.Payments }
	var c Cost
	add := func(item string, qty float64, unit string, usd float64) {
		c.Lines = append(c.Lines, CostLine{Item: item, Quantity: qty, Unit: unit, USD: usd})
		c.Total += usd
	}
	api := 0.0
	for _, r := range apiRequests {
		api += per(r)
	}
	add("API Gateway (REST) requests", api, "requests", api*PriceAPIGatewayREST)

	invocations, gbs, logBytes := 0.0, 0.0, api*m.AccessLogBytes
	for _, r := range functionKinds {
		f, ok := m.Functions[r]
		if !ok {
			return Cost{}, fmt.Errorf("capacity: no measured function for %q", r)
		}
		n := per(r)
		if r == ReqAttempts || r == ReqHops { // SQS batches: one invocation per batch
			n /= SQSBatch
		}
		invocations += n
		gbs += n * f.DurationMS / 1000 * float64(f.MemoryMB) / 1024
		logBytes += n * f.LogBytes
	}
	add("Lambda invocations", invocations, "invocations", invocations*PriceLambdaRequest)
	add("Lambda compute (arm64)", gbs, "GB-s", gbs*PriceLambdaGBSecArm*1e6)
	wru, rru := t.Total.W/t.Payments, t.Total.R/t.Payments
	add("DynamoDB writes (table + indexes)", wru, "WRU", wru*PriceDynamoWRU)
	add("DynamoDB reads", rru, "RRU", rru*PriceDynamoRRU)
	received := per(ReqAttempts) + per(ReqHops) // messages the dispatcher receives and deletes, in batches
	sqs := per(ReqSQSSend) + 2*received/SQSBatch
	add("SQS requests (send, receive, delete)", sqs, "requests", sqs*PriceSQSStandard)
	add("CloudWatch Logs ingestion", logBytes, "bytes", logBytes/1e9*PriceLogsIngestGB*1e6)
	traces := (api + received/SQSBatch) * XRaySampled
	add("X-Ray traces recorded (5 % sampled)", traces, "traces", traces*PriceXRayRecorded)
	return c, nil
}

// Markdown renders the cost table.
func (c Cost) Markdown() string {
	var b strings.Builder
	b.WriteString("| item | per payment | USD per 1 million payments |\n|---|---|---|\n")
	for _, l := range c.Lines {
		fmt.Fprintf(&b, "| %s | %s %s | %s |\n", l.Item, qty(l.Quantity), l.Unit, usd(l.USD))
	}
	fmt.Fprintf(&b, "| **total** | | **%s** |\n", usd(c.Total))
	return b.String()
}

func qty(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 0.1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.4f", v)
}

func usd(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("$%.0f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
