package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/yp/paysvc/shared/apperr"
)

// Metrics receives one observation per request (EMF in Lambda; nothing locally).
type Metrics interface {
	Request(route string, status int, errorCode string, latency time.Duration)
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

type infoKey struct{}

func infoFrom(ctx context.Context) *reqInfo {
	i, _ := ctx.Value(infoKey{}).(*reqInfo)
	return i
}

// RequestIDFrom returns the request id of a request being served.
func RequestIDFrom(ctx context.Context) string {
	if i := infoFrom(ctx); i != nil {
		return i.RequestID
	}
	return ""
}

// statusRecorder remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// wrap adds the request id, panic recovery and the one request log line.
func (d *Deps) wrap(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := d.Clock.Now()
		info := &reqInfo{RequestID: requestID(r), Route: route}
		ctx := context.WithValue(r.Context(), infoKey{}, info)
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w}
		rec.Header().Set("X-Request-Id", info.RequestID)
		defer func() {
			if v := recover(); v != nil {
				d.Log.ErrorContext(ctx, "panic", "route", route, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if rec.status == 0 {
					WriteError(rec, r, apperr.New(apperr.Internal, "internal error"))
				}
			}
			d.logRequest(ctx, r, rec.status, info, start)
		}()
		h(rec, r)
	})
}

func (d *Deps) logRequest(ctx context.Context, r *http.Request, status int, info *reqInfo, start time.Time) {
	latency := d.Clock.Now().Sub(start)
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("route", info.Route),
		slog.Int("status", status),
		slog.Float64("latencyMs", float64(latency.Microseconds())/1000),
		slog.String("requestId", info.RequestID),
	}
	if t := r.Header.Get("X-Amzn-Trace-Id"); t != "" {
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
	}
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
