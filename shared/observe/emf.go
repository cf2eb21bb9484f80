// Package observe records the service's custom CloudWatch metrics as
// Embedded Metric Format (EMF) documents: one JSON object per line on the
// function's stdout, which CloudWatch Logs turns into metrics. No API call,
// no agent, no buffering: a line is written when the event happens.
//
// The contract with template.yaml (its header, the alarms and the dashboard)
// is fixed: namespace PaySvc, and every metric is emitted at least with the
// dimension set ["Service", "Function"] where Service is "paysvc" and
// Function is $AWS_LAMBDA_FUNCTION_NAME. Finer dimension sets (Route,
// ErrorCode, Operation, Version) are added next to it, never instead of it.
//
// Version is the function version serving the request
// ($AWS_LAMBDA_FUNCTION_VERSION, see WithVersion): the request metrics are
// also reported under ["Service", "Function", "Version"] (and Errors under
// ["Service", "Function", "Version", "ErrorCode"]), so a deployment's
// rollback alarms judge the new version on its own answers. A 5xx the
// function answers through the API proxy is a successful Lambda invocation:
// only these metrics see it per version.
//
// Metrics (unit in brackets):
//
//	Requests, ClientErrors, ServerErrors [Count]  per API request; + Route
//	Latency [Milliseconds]                        per API request; + Route
//	Errors [Count]                                per error answer; + ErrorCode, + Route/ErrorCode
//	UpstreamRequests, UpstreamErrors [Count]      per upstream HTTP call; + Operation
//	UpstreamLatency [Milliseconds]                per upstream HTTP call; + Operation
//	WebhookDeliveries, WebhookFailures [Count]    per webhook delivery attempt
//	WebhookLatency [Milliseconds], WebhookAttempt [None], WebhookExhausted [Count]
//	ColdStarts [Count], InitDuration [Milliseconds] once per execution environment
//	RecordUpdatesLost [Count]                     per record write after an upstream answer
//	                                              lost (the store refused it for 10 s)
//	NotificationsUnroutable [Count]               per notification kept unroutable (no merchant found)
//	NotificationsLiveMismatch [Count]             per notification whose live flag is not the environment
//	NotificationsAccountLevel [Count]             per account-level notification kept (about no payment:
//	                                              REPORT_AVAILABLE, payouts, …); no alarm; + property eventCode
//	UpstreamSecretAgeDays [None]                  per read of the upstream secret: days since its
//	                                              current value was written
//	StoredFormatUnknown [Count]                   per API request failed by a stored record of a
//	                                              format version this release does not read; also
//	                                              under ["Service"] alone, for one alarm over every function
//
// Every method is safe for concurrent use and on a nil *Metrics (a no-op),
// so code paths that run without metrics need no checks.
package observe

import (
	"github.com/yp/paysvc/shared/webhooks"

	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
)

// The metrics contract shared with template.yaml.
const (
	Namespace   = "PaySvc"
	ServiceName = "paysvc"

	DimService   = "Service"
	DimFunction  = "Function"
	DimRoute     = "Route"
	DimErrorCode = "ErrorCode"
	DimOperation = "Operation"
	DimVersion   = "Version"

	MetricRequests          = "Requests"
	MetricLatency           = "Latency"
	MetricClientErrors      = "ClientErrors"
	MetricServerErrors      = "ServerErrors"
	MetricErrors            = "Errors"
	MetricUpstreamRequests  = "UpstreamRequests"
	MetricUpstreamErrors    = "UpstreamErrors"
	MetricUpstreamLatency   = "UpstreamLatency"
	MetricWebhookDeliveries = "WebhookDeliveries"
	MetricWebhookFailures   = "WebhookFailures"
	MetricWebhookLatency    = "WebhookLatency"
	MetricWebhookAttempt    = "WebhookAttempt"
	MetricWebhookExhausted  = "WebhookExhausted"
	MetricColdStarts        = "ColdStarts"
	MetricInitDuration      = "InitDuration"
	MetricRecordLost        = "RecordUpdatesLost"
	MetricUnroutable        = "NotificationsUnroutable"
	MetricLiveMismatch      = "NotificationsLiveMismatch"
	MetricAccountLevel      = "NotificationsAccountLevel"
	MetricSecretAge         = "UpstreamSecretAgeDays"
	MetricRecovered         = "OperationsRecovered"
	MetricUnanswered        = "OperationsUnanswered"
	MetricRecoveryErrors    = "RecoveryErrors"
	MetricFormatUnknown     = "StoredFormatUnknown"
)

// CloudWatch units used here.
const (
	UnitCount        = "Count"
	UnitMilliseconds = "Milliseconds"
	UnitNone         = "None"
)

// Metrics writes EMF documents to one writer. Create it with New.
type Metrics struct {
	mu       sync.Mutex // one document per Write, never interleaved
	w        io.Writer
	clock    clock.Clock
	function string
	version  string
	// The dimension sets of Request's two directives, made once: the
	// request metrics, and Errors.
	requestDims, errorDims [][]string
}

// Option configures New.
type Option func(*Metrics)

// WithVersion reports the request metrics also per function version
// (the Version dimension): version is $AWS_LAMBDA_FUNCTION_VERSION, the
// published version an alias invocation runs ("$LATEST" when invoked
// unqualified). Empty: no Version dimension.
func WithVersion(version string) Option {
	return func(m *Metrics) { m.version = version }
}

// New returns Metrics writing to w (os.Stdout in Lambda) for the function
// named function ($AWS_LAMBDA_FUNCTION_NAME), timestamped by clk.
func New(w io.Writer, function string, clk clock.Clock, opts ...Option) *Metrics {
	if clk == nil {
		clk = clock.System{}
	}
	m := &Metrics{w: w, clock: clk, function: function}
	for _, o := range opts {
		o(m)
	}
	m.requestDims = [][]string{with(), with(DimRoute)}
	m.errorDims = [][]string{with(DimErrorCode), with(DimRoute, DimErrorCode)}
	if m.version != "" {
		m.requestDims = append(m.requestDims, with(DimVersion))
		m.errorDims = append(m.errorDims, with(DimVersion, DimErrorCode))
	}
	return m
}

// Function is the Function dimension value.
func (m *Metrics) Function() string {
	if m == nil {
		return ""
	}
	return m.function
}

// metric is one value of a document.
type metric struct {
	name  string
	unit  string
	value float64
}

// directive is one MetricDirective: metrics reported under dimension sets.
type directive struct {
	dims    [][]string
	metrics []metric
}

// emfMetric and emfDirective are the JSON shapes of the _aws metadata.
type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// emit writes one document: the directives' metrics, the Service and
// Function dimensions, and props (other dimension values and plain
// properties, which Logs Insights can query but which are not metrics).
func (m *Metrics) emit(props map[string]any, directives ...directive) {
	doc := make(map[string]any, len(props)+8)
	for k, v := range props {
		doc[k] = v
	}
	doc[DimService] = ServiceName
	doc[DimFunction] = m.function
	if m.version != "" {
		doc[DimVersion] = m.version
	}
	meta := emfMeta{Timestamp: m.clock.Now().UnixMilli()}
	for _, d := range directives {
		ed := emfDirective{Namespace: Namespace, Dimensions: d.dims}
		for _, mt := range d.metrics {
			ed.Metrics = append(ed.Metrics, emfMetric{Name: mt.name, Unit: mt.unit})
			doc[mt.name] = mt.value
		}
		meta.CloudWatchMetrics = append(meta.CloudWatchMetrics, ed)
	}
	doc["_aws"] = meta

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // Encode appends the newline: one line per document
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return // only plain values are put in doc: cannot happen
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(buf.Bytes()) // nowhere to report a failed stdout write
}

// with returns the dimension set the template's alarms use,
// ["Service", "Function"], followed by extra.
func with(extra ...string) []string {
	return append([]string{DimService, DimFunction}, extra...)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Request records one API request (it implements httpapi.Metrics): route is
// the route's short name, errorCode the yp_ code of an error answer ("" on
// success). With WithVersion, every metric is also reported per version.
func (m *Metrics) Request(route string, status int, errorCode string, latency time.Duration) {
	if m == nil {
		return
	}
	props := map[string]any{DimRoute: route, "status": status}
	ds := []directive{{
		dims: m.requestDims,
		metrics: []metric{
			{MetricRequests, UnitCount, 1},
			{MetricLatency, UnitMilliseconds, ms(latency)},
			{MetricClientErrors, UnitCount, flag(status >= 400 && status < 500)},
			{MetricServerErrors, UnitCount, flag(status >= 500)},
		},
	}}
	if errorCode != "" {
		props[DimErrorCode] = errorCode
		ds = append(ds, directive{
			dims:    m.errorDims,
			metrics: []metric{{MetricErrors, UnitCount, 1}},
		})
	}
	m.emit(props, ds...)
}

// Upstream records one call to the upstream checkout API. operation names
// the call without ids, e.g. "POST /payments/{id}/captures"; status is the
// HTTP status (0 when no response came); failed is true for 5xx answers,
// timeouts and connection errors, not for 4xx (the request's own fault).
func (m *Metrics) Upstream(operation string, status int, failed bool, latency time.Duration) {
	if m == nil {
		return
	}
	m.emit(map[string]any{DimOperation: operation, "status": status}, directive{
		dims: [][]string{with(), with(DimOperation)},
		metrics: []metric{
			{MetricUpstreamRequests, UnitCount, 1},
			{MetricUpstreamErrors, UnitCount, flag(failed)},
			{MetricUpstreamLatency, UnitMilliseconds, ms(latency)},
		},
	})
}

// WebhookDelivery records one delivery attempt: WebhookDeliveries 1,
// WebhookFailures 1 unless it succeeded, WebhookLatency, WebhookAttempt (the
// attempt number, so Maximum/Average show how far down the retry schedule
// deliveries are) and WebhookExhausted 1 when a failed attempt was the last.
// WebhookDeliveries and WebhookFailures feed the template's
// WebhookFailureRateAlarm.
func (m *Metrics) WebhookDelivery(d webhooks.Attempt) {
	if m == nil {
		return
	}
	props := map[string]any{"attempt": d.Attempt, "status": d.StatusCode, "success": d.Success}
	for k, v := range map[string]string{
		"merchant": d.MerchantID, "subscriptionId": d.SubscriptionID, "deliveryId": d.DeliveryID, "eventCode": d.EventCode,
	} {
		if v != "" {
			props[k] = v
		}
	}
	m.emit(props, directive{
		dims: [][]string{with()},
		metrics: []metric{
			{MetricWebhookDeliveries, UnitCount, 1},
			{MetricWebhookFailures, UnitCount, flag(!d.Success)},
			{MetricWebhookLatency, UnitMilliseconds, ms(d.Latency)},
			{MetricWebhookAttempt, UnitNone, float64(d.Attempt)},
			{MetricWebhookExhausted, UnitCount, flag(d.Exhausted && !d.Success)},
		},
	})
}

// ColdStart records the init phase of an execution environment: from the
// start of main to the handler being ready.
func (m *Metrics) ColdStart(initDuration time.Duration) {
	if m == nil {
		return
	}
	m.emit(nil, directive{
		dims: [][]string{with()},
		metrics: []metric{
			{MetricColdStarts, UnitCount, 1},
			{MetricInitDuration, UnitMilliseconds, ms(initDuration)},
		},
	})
}

// RecordUpdateLost records a record write after an upstream answer that
// was lost (for payments.Service.CountRecordUpdates; kind is the record's
// kind): docs/payments.md says what repairs each. The template's
// RecordUpdatesLostAlarm fires on it.
func (m *Metrics) RecordUpdateLost(kind string) {
	if m == nil {
		return
	}
	m.emit(map[string]any{"update": kind}, directive{
		dims:    [][]string{with()},
		metrics: []metric{{MetricRecordLost, UnitCount, 1}},
	})
}

// NotificationUnroutable records a notification kept unroutable: no
// merchant owns it (reason says why, e.g. no merchant for its upstream
// account), so no record is updated and no webhook is sent until it is
// routed (paysvc-admin notification route). The template's
// NotificationsUnroutableAlarm fires on it. The notifications receiver
// calls it next to its "notification kept unroutable" log line.
func (m *Metrics) NotificationUnroutable(reason string) {
	if m == nil {
		return
	}
	m.emit(map[string]any{"reason": reason}, directive{
		dims:    [][]string{with()},
		metrics: []metric{{MetricUnroutable, UnitCount, 1}},
	})
}

// NotificationLiveMismatch records a notification whose live flag is not
// the service's environment: answered [accepted], kept unroutable, never
// applied or delivered. The template's NotificationsLiveMismatchAlarm
// fires on it.
func (m *Metrics) NotificationLiveMismatch() {
	if m == nil {
		return
	}
	m.emit(nil, directive{
		dims:    [][]string{with()},
		metrics: []metric{{MetricLiveMismatch, UnitCount, 1}},
	})
}

// NotificationAccountLevel records an account-level notification kept
// for operations (about no payment: a report ready, a payout; code is its
// eventCode, a property, not a dimension). Routine: no alarm reads it
// (one REPORT_AVAILABLE per report), unlike NotificationsUnroutable.
func (m *Metrics) NotificationAccountLevel(code string) {
	if m == nil {
		return
	}
	m.emit(map[string]any{"eventCode": code}, directive{
		dims:    [][]string{with()},
		metrics: []metric{{MetricAccountLevel, UnitCount, 1}},
	})
}

// RecoveryPass records a recovery pass (payments.Service.Recover): the
// operations whose lost answer it learnt, those still without a
// definitive answer after their call was repeated, and whether the pass
// failed for some. The template's OperationsUnansweredAlarm fires when
// repeats keep getting no answer.
func (m *Metrics) RecoveryPass(recovered, unanswered int, failed bool) {
	if m == nil {
		return
	}
	m.emit(nil, directive{
		dims: [][]string{with()},
		metrics: []metric{
			{MetricRecovered, UnitCount, float64(recovered)},
			{MetricUnanswered, UnitCount, float64(unanswered)},
			{MetricRecoveryErrors, UnitCount, flag(failed)},
		},
	})
}

// UpstreamSecretAge records the age of the upstream secret's current value
// (now minus when it was written), at each read of the secret. The
// template's UpstreamSecretAgeAlarm fires when it exceeds the rotation
// policy (SecretMaxAgeDays).
func (m *Metrics) UpstreamSecretAge(age time.Duration) {
	if m == nil {
		return
	}
	m.emit(nil, directive{
		dims:    [][]string{with()},
		metrics: []metric{{MetricSecretAge, UnitNone, age.Hours() / 24}},
	})
}

// StoredFormatUnknown records an API request that failed on a stored
// record of a format version this release does not read (it implements
// httpapi.Metrics). It is reported under ["Service"] too, so the
// template's StoredFormatUnknownAlarm reads one metric for every function.
func (m *Metrics) StoredFormatUnknown() {
	if m == nil {
		return
	}
	m.emit(nil, directive{
		dims:    [][]string{with(), {DimService}},
		metrics: []metric{{MetricFormatUnknown, UnitCount, 1}},
	})
}
