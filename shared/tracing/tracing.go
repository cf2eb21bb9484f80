// Package tracing is the service's only contact with AWS X-Ray (the
// aws-xray-sdk-go v2 module). Everything else sees four things — a span per
// request (httpapi.Tracer), an HTTP transport wrapper, an AWS SDK config
// hook and TraceID — so this package can be replaced by an OpenTelemetry
// one without touching the handlers.
//
// Tracing is on only inside Lambda with a daemon address (Tracing: Active
// sets AWS_XRAY_DAEMON_ADDRESS); everywhere else — the local server, unit
// tests, sam local without a daemon — every method is a no-op that adds no
// subsegment, sends no UDP packet and logs nothing.
//
// How it fits Lambda: the runtime gives each invocation a trace header
// (Root, Parent = the function's segment, Sampled). The SDK turns it into a
// "facade" segment that is never sent; StartRequest opens a subsegment under
// it, the AWS SDK and HTTP clients add theirs under that one, and when the
// request's subsegment closes the whole tree is sent to the daemon over UDP.
//
// Package-level state: the X-Ray SDK keeps its logger and a default
// configuration in package variables. The configuration is not used: each
// span carries this Tracer's own (emitter to the daemon address read here,
// context-missing strategy that stays quiet) in its context. The logger
// cannot be set per use, so New installs, once per process, an adapter that
// writes the SDK's messages through slog as JSON (see sdkLogger) instead of
// plain text on stdout. See setSDKLogger.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/v2/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/aws/aws-xray-sdk-go/v2/xraylog"

	"github.com/yp/paysvc/shared/httpapi"
)

// Annotation keys set on a request's subsegment (searchable in X-Ray:
// annotation.merchant = "m_demo").
const (
	AnnotationRoute        = "route"
	AnnotationStatus       = "status"
	AnnotationSiteID       = "siteId"
	AnnotationMerchant     = "merchant"
	AnnotationPSPReference = "pspReference"
	AnnotationResultCode   = "resultCode"
	AnnotationErrorCode    = "errorCode"
)

// lambdaTraceKey is the context key under which aws-lambda-go stores the
// invocation's trace header (it uses a plain string key).
const lambdaTraceKey = "x-amzn-trace-id"

// Tracer traces with X-Ray, or does nothing (the zero value, a nil *Tracer,
// and the result of New outside Lambda). Safe for concurrent use.
type Tracer struct {
	cfg *xray.Config // nil: disabled
}

// New returns a Tracer for the environment getenv reads: enabled when
// AWS_LAMBDA_FUNCTION_NAME and AWS_XRAY_DAEMON_ADDRESS are set and
// AWS_XRAY_SDK_DISABLED is not "true". log receives the SDK's own messages.
// A daemon address that cannot be parsed is an error.
func New(getenv func(string) string, log *slog.Logger) (*Tracer, error) {
	addr := getenv("AWS_XRAY_DAEMON_ADDRESS")
	if getenv("AWS_LAMBDA_FUNCTION_NAME") == "" || addr == "" || strings.EqualFold(getenv("AWS_XRAY_SDK_DISABLED"), "true") {
		return &Tracer{}, nil
	}
	udp, err := daemonUDPAddr(addr)
	if err != nil {
		return nil, err
	}
	setSDKLogger(log)
	emitter, err := xray.NewDefaultEmitter(udp)
	if err != nil {
		return nil, fmt.Errorf("x-ray emitter: %w", err)
	}
	return &Tracer{cfg: &xray.Config{
		DaemonAddr:             udp.String(),
		Emitter:                emitter,
		ContextMissingStrategy: quietContextMissing{log: log},
	}}, nil
}

// Enabled reports whether spans are recorded and sent.
func (t *Tracer) Enabled() bool { return t != nil && t.cfg != nil }

// daemonUDPAddr parses AWS_XRAY_DAEMON_ADDRESS: "host:port" or the
// two-address form "tcp:host:port udp:host:port".
func daemonUDPAddr(v string) (*net.UDPAddr, error) {
	hostPort := strings.TrimSpace(v)
	if fields := strings.Fields(v); len(fields) == 2 {
		hostPort = ""
		for _, f := range fields {
			if rest, ok := strings.CutPrefix(f, "udp:"); ok {
				hostPort = rest
			}
		}
	}
	a, err := net.ResolveUDPAddr("udp", hostPort)
	if err != nil || hostPort == "" {
		return nil, fmt.Errorf("AWS_XRAY_DAEMON_ADDRESS %q is not host:port or \"tcp:host:port udp:host:port\"", v)
	}
	return a, nil
}

// withRecorder puts the Tracer's configuration in ctx, where the SDK looks
// for it when it creates the facade segment of a Lambda invocation.
func (t *Tracer) withRecorder(ctx context.Context) context.Context {
	return context.WithValue(ctx, xray.RecorderContextKey{}, t.cfg)
}

// InstrumentAWS adds X-Ray to every AWS SDK v2 client made from cfg
// (DynamoDB, SQS, Secrets Manager): one subsegment per call, named after the
// service, with the operation and request id. Calls made without a request
// span in their context (e.g. at cold start) are not traced.
func (t *Tracer) InstrumentAWS(cfg *aws.Config) {
	if !t.Enabled() {
		return
	}
	awsv2.AWSV2Instrumentor(&cfg.APIOptions)
}

// Transport wraps base so each HTTP call made with a request span in its
// context gets a subsegment (namespace "remote", named after the host, with
// method, URL without query, status) and carries the trace header. Use it
// for the upstream and the webhook clients. Disabled: returns base.
func (t *Tracer) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if !t.Enabled() {
		return base
	}
	return &transport{t: t, traced: remote{base: base}, plain: base}
}

// transport skips X-Ray for calls made outside any trace, so nothing logs
// "segment cannot be found".
type transport struct {
	t      *Tracer
	traced http.RoundTripper // remote{plain}
	plain  http.RoundTripper
}

// remote records one HTTP call as a subsegment (namespace "remote", named
// after the host, with method, URL without query or credentials, status,
// and the error/throttle/fault flags) and sends the trace header. It is
// the X-Ray SDK's RoundTripper without that one's connection-phase
// subsegments, which begin and end on net/http's trace hooks: when the
// answer's first byte is seen before net/http reports the request written
// — a fast upstream on loopback does that — the SDK opens a "response"
// subsegment that nothing closes, and then the request's whole trace is
// never sent (TestRemoteCallClosesWhateverTheHookOrder).
type remote struct{ base http.RoundTripper }

func (rt remote) RoundTrip(r *http.Request) (*http.Response, error) {
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	var resp *http.Response
	err := xray.Capture(r.Context(), host, func(ctx context.Context) error {
		seg := xray.GetSegment(ctx)
		if seg == nil {
			var err error
			resp, err = rt.base.RoundTrip(r)
			return err
		}
		// A RoundTripper must not modify the caller's request.
		out := r.WithContext(ctx)
		out.Header = r.Header.Clone()
		seg.Lock()
		seg.Namespace = "remote"
		seg.GetHTTP().GetRequest().Method = r.Method
		seg.GetHTTP().GetRequest().URL = traceURL(r.URL)
		out.Header.Set(xray.TraceIDHeaderKey, seg.DownstreamHeader().String())
		seg.Unlock()
		var err error
		resp, err = rt.base.RoundTrip(out)
		if resp != nil {
			seg.Lock()
			setStatus(seg, resp.StatusCode)
			seg.GetHTTP().GetResponse().ContentLength = max(int(resp.ContentLength), 0)
			seg.Unlock()
		}
		return err
	})
	return resp, err
}

// setStatus records an HTTP status on seg, with the flags X-Ray defines:
// error for 4xx (and throttle for 429), fault for 5xx. The caller holds
// seg's lock.
func setStatus(seg *xray.Segment, status int) {
	seg.GetHTTP().GetResponse().Status = status
	switch {
	case status == http.StatusTooManyRequests:
		seg.Error, seg.Throttle = true, true
	case status >= 400 && status < 500:
		seg.Error = true
	case status >= 500:
		seg.Fault = true
	}
}

// traceURL is u as a trace shows it: without query, fragment or
// credentials.
func traceURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !traced(r.Context()) {
		return tr.plain.RoundTrip(r)
	}
	return tr.traced.RoundTrip(r.WithContext(tr.t.withRecorder(r.Context())))
}

// HTTPClient returns a copy of c (http.DefaultClient when nil) whose
// transport is wrapped with Transport; timeouts, redirect policy and jar are
// kept. Disabled: returns c itself (or a plain client when c is nil).
func (t *Tracer) HTTPClient(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{}
	}
	if !t.Enabled() {
		return c
	}
	cp := *c
	cp.Transport = t.Transport(c.Transport)
	return &cp
}

// traced reports whether ctx belongs to a trace: an open (sub)segment or a
// Lambda invocation's trace header.
func traced(ctx context.Context) bool {
	if xray.GetSegment(ctx) != nil {
		return true
	}
	h, _ := ctx.Value(lambdaTraceKey).(string)
	return h != ""
}

// Span is an open subsegment. A nil *Span (tracing disabled, or no trace in
// the context) accepts every call and does nothing.
type Span struct {
	seg *xray.Segment
}

// Start opens a subsegment named name under the trace of ctx (the Lambda
// invocation's, or an enclosing span) and returns the context carrying it:
// pass that context to the AWS SDK and HTTP calls made for this work so
// theirs nest under it. End the span with End. Use it for work that is not
// an HTTP request, e.g. one webhook delivery of an SQS batch.
func (t *Tracer) Start(ctx context.Context, name string) (context.Context, *Span) {
	if !t.Enabled() || !traced(ctx) {
		return ctx, nil
	}
	ctx, seg := xray.BeginSubsegment(t.withRecorder(ctx), name)
	if seg == nil {
		return ctx, nil
	}
	return ctx, &Span{seg: seg}
}

// Annotate sets an indexed annotation (searchable with
// annotation.<key> = "value" in X-Ray). Empty values are skipped.
func (s *Span) Annotate(key, value string) {
	if s == nil || value == "" {
		return
	}
	_ = s.seg.AddAnnotation(key, value)
}

// End closes the span; err (may be nil) is recorded as its fault cause.
// Once the outermost span of an invocation ends, the tree is sent.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	s.seg.Close(err)
}

// StartRequest implements httpapi.Tracer: a subsegment per API request,
// named after the route, ended with the HTTP status (error/throttle/fault
// flags as X-Ray defines them) and the annotations siteId, merchant,
// pspReference, resultCode and errorCode that are known.
func (t *Tracer) StartRequest(ctx context.Context, route string) (context.Context, func(httpapi.RequestTrace)) {
	ctx, span := t.Start(ctx, route)
	if span == nil {
		return ctx, func(httpapi.RequestTrace) {}
	}
	return ctx, func(rt httpapi.RequestTrace) {
		seg := span.seg
		_ = seg.AddAnnotation(AnnotationRoute, route)
		_ = seg.AddAnnotation(AnnotationStatus, rt.Status)
		for _, k := range []string{AnnotationSiteID, AnnotationMerchant, AnnotationPSPReference, AnnotationResultCode, AnnotationErrorCode} {
			span.Annotate(k, rt.Annotations[k])
		}
		seg.Lock()
		setStatus(seg, rt.Status)
		seg.Unlock()
		var cause error
		if rt.Status >= 500 {
			cause = rt.Err
		}
		span.End(cause)
	}
}

// TraceID returns the X-Ray trace id (1-xxxxxxxx-yyyyyyyyyyyyyyyyyyyyyyyy)
// of ctx: its span's, else the Lambda invocation's trace header's Root; ""
// outside any trace. It works whether or not tracing is enabled, so the logs
// of a function without a daemon still carry the id.
func (t *Tracer) TraceID(ctx context.Context) string {
	if seg := xray.GetSegment(ctx); seg != nil && seg.TraceID != "" {
		return seg.TraceID
	}
	h, _ := ctx.Value(lambdaTraceKey).(string)
	return RootOf(h)
}

// RootOf extracts the Root trace id from an X-Ray trace header
// ("Root=1-...;Parent=...;Sampled=1"); "" when it has none.
func RootOf(header string) string {
	for _, part := range strings.Split(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return v
		}
	}
	return ""
}

// quietContextMissing handles SDK calls that find no segment (a traced
// client used outside a request): a debug line, never a panic.
type quietContextMissing struct{ log *slog.Logger }

func (q quietContextMissing) ContextMissing(v any) {
	if q.log != nil {
		q.log.Debug("x-ray: no segment in context", "detail", fmt.Sprint(v))
	}
}

// sdkLoggerOnce guards the SDK's package-level logger, which may be set only
// once per process and before the SDK is used (xray.SetLogger is not safe to
// call concurrently with tracing). This is the one package-level variable
// here, forced by the SDK.
var sdkLoggerOnce sync.Once

// setSDKLogger routes the X-Ray SDK's messages to log (the first Tracer's).
func setSDKLogger(log *slog.Logger) {
	sdkLoggerOnce.Do(func() {
		if log == nil {
			xray.SetLogger(xraylog.NullLogger)
			return
		}
		xray.SetLogger(sdkLogger{log: log})
	})
}

// sdkLogger adapts slog to xraylog.Logger. The SDK's debug messages (a
// dump of every segment sent, URLs included) are dropped, its info messages
// (emitter address) become debug, warnings and errors become warn.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Log(level xraylog.LogLevel, msg fmt.Stringer) {
	if level <= xraylog.LogLevelDebug {
		return
	}
	lvl := slog.LevelDebug
	if level >= xraylog.LogLevelWarn {
		lvl = slog.LevelWarn
	}
	if !l.log.Enabled(context.Background(), lvl) {
		return
	}
	l.log.Log(context.Background(), lvl, "x-ray sdk", "detail", msg.String())
}
