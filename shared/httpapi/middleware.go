package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
)

// Metrics receives one observation per request (EMF in Lambda; nothing locally).
type Metrics interface {
	Request(route string, status int, errorCode string, latency time.Duration)
	// StoredFormatUnknown records a request that failed on a stored
	// record of a format version this release does not read
	// (storeerr.ErrUnknownFormat).
	StoredFormatUnknown()
}

// Tracer traces requests (X-Ray in Lambda: shared/tracing). Optional: a nil
// Deps.Tracer traces nothing.
type Tracer interface {
	// StartRequest opens the request's span. The returned context carries it
	// to the store and upstream calls; end is called once, after the
	// response was written.
	StartRequest(ctx context.Context, route string) (_ context.Context, end func(RequestTrace))
	// TraceID is the trace id for the request log ("" when none).
	TraceID(ctx context.Context) string
}

// RequestTrace is the outcome of a request, for its span.
type RequestTrace struct {
	Status int
	// Annotations holds the known ones of siteId, merchant, pspReference,
	// resultCode and errorCode.
	Annotations map[string]string
	Err         error // the cause of a 5xx, if known
}

// reqInfo accumulates what the request log line reports.
type reqInfo struct {
	RequestID    string
	Route        string
	Site         string
	Merchant     string
	KeyID        string
	PSPReference string
	ErrorCode    string
	Replayed     bool
	Err          error
}

// handler serves one request, filling in its log record as it goes.
type handler func(w http.ResponseWriter, r *http.Request, info *reqInfo)

// StatusWriter remembers the status a handler wrote (0: none yet).
type StatusWriter struct {
	http.ResponseWriter
	Status int
}

// WriteHeader implements http.ResponseWriter.
func (s *StatusWriter) WriteHeader(code int) {
	if s.Status == 0 {
		s.Status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (s *StatusWriter) Write(b []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath.
func (s *StatusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// statusRecorder is a StatusWriter that also keeps, for a traced request,
// the start of a successful body (to find its resultCode).
type statusRecorder struct {
	StatusWriter
	capture bool
	body    []byte
}

// maxCapture bounds the body kept for the resultCode annotation.
const maxCapture = 64 << 10

func (s *statusRecorder) Write(b []byte) (int, error) {
	n, err := s.StatusWriter.Write(b)
	if s.capture && s.Status < 300 && len(s.body)+n <= maxCapture {
		s.body = append(s.body, b[:n]...)
	}
	return n, err
}

// wrap adds the request id, the one panic recovery and the one request log
// line; h gets the request's log record explicitly.
func (d *Deps) wrap(route string, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := d.Clock.Now()
		info := &reqInfo{RequestID: requestID(r), Route: route}
		ctx := r.Context()
		var endTrace func(RequestTrace)
		if d.Tracer != nil {
			ctx, endTrace = d.Tracer.StartRequest(ctx, route)
			r = r.WithContext(ctx)
		}
		rec := &statusRecorder{StatusWriter: StatusWriter{ResponseWriter: w}, capture: endTrace != nil}
		rec.Header().Set("X-Request-Id", info.RequestID)
		defer func() {
			if v := recover(); v != nil {
				d.Log.ErrorContext(ctx, "panic", "route", route, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.Status == 0 {
					writeError(rec, info, apperr.New(apperr.Internal, "internal error"))
				}
			}
			d.logRequest(ctx, r, rec.Status, info, start)
			if endTrace != nil {
				endTrace(info.trace(rec))
			}
		}()
		h(rec, r, info)
	})
}

func (d *Deps) logRequest(ctx context.Context, r *http.Request, status int, info *reqInfo, start time.Time) {
	latency := d.Clock.Now().Sub(start)
	var room [16]slog.Attr // every attribute below, without growing
	attrs := append(room[:0],
		slog.String("method", r.Method),
		slog.String("route", info.Route),
		slog.Int("status", status),
		slog.Float64("latencyMs", float64(latency.Microseconds())/1000),
		slog.String("requestId", info.RequestID),
	)
	t := ""
	if d.Tracer != nil {
		t = d.Tracer.TraceID(ctx) // the Lambda invocation's / X-Ray segment's
	}
	if t == "" {
		t = r.Header.Get("X-Amzn-Trace-Id")
	}
	if t != "" {
		attrs = append(attrs, slog.String("traceId", t))
	}
	for _, kv := range [][2]string{
		{"site", info.Site}, {"merchant", info.Merchant}, {"keyId", info.KeyID},
		{"pspReference", info.PSPReference}, {"errorCode", info.ErrorCode},
	} {
		if kv[1] != "" {
			attrs = append(attrs, slog.String(kv[0], kv[1]))
		}
	}
	if info.Replayed {
		attrs = append(attrs, slog.Bool("replayed", true))
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
		if info.Err != nil {
			attrs = append(attrs, slog.String("err", info.Err.Error()))
		}
	}
	d.Log.LogAttrs(ctx, level, "request", attrs...)
	if d.Metrics != nil {
		d.Metrics.Request(info.Route, status, info.ErrorCode, latency)
		if errors.Is(info.Err, storeerr.ErrUnknownFormat) {
			d.Metrics.StoredFormatUnknown()
		}
	}
}

// trace is the span outcome of a finished request.
func (i *reqInfo) trace(rec *statusRecorder) RequestTrace {
	a := map[string]string{}
	for k, v := range map[string]string{
		"siteId": i.Site, "merchant": i.Merchant, "pspReference": i.PSPReference, "errorCode": i.ErrorCode,
	} {
		if v != "" {
			a[k] = v
		}
	}
	var out struct {
		ResultCode string `json:"resultCode"`
	}
	if len(rec.body) > 0 && json.Unmarshal(rec.body, &out) == nil && out.ResultCode != "" {
		a["resultCode"] = out.ResultCode
	}
	return RequestTrace{Status: rec.Status, Annotations: a, Err: i.Err}
}

// requestID takes a well-formed X-Request-Id from the caller (API Gateway's
// request id in Lambda) or makes one.
func requestID(r *http.Request) string {
	if v := r.Header.Get("X-Request-Id"); v != "" && len(v) <= 64 && safeID(v) {
		return v
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}

func safeID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return false
		}
	}
	return true
}
