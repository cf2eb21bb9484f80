package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/httpapi"
)

// Request is one request the local server answered, as the dashboard
// lists it: what the request log line has, never a body, a header or a
// key (the errorCode of an error answer is read from it, as the log
// records it).
type Request struct {
	Time      time.Time
	Method    string
	Path      string
	Status    int
	ErrorCode string
	RequestID string
	Latency   time.Duration
}

// RequestLog keeps the latest requests in memory.
type RequestLog struct {
	size int
	skip []string // path prefixes not recorded (the dashboard itself, the admin API)

	mu   sync.Mutex
	kept []Request // oldest first
}

// NewRequestLog keeps the last size requests, not those under skip.
func NewRequestLog(size int, skip ...string) *RequestLog {
	return &RequestLog{size: size, skip: skip}
}

// Recent returns the kept requests, newest first.
func (l *RequestLog) Recent() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.kept)
	slices.Reverse(out)
	return out
}

func (l *RequestLog) add(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept = append(l.kept, r)
	if len(l.kept) > l.size {
		l.kept = slices.Delete(l.kept, 0, 1)
	}
}

// Wrap records the requests next answers.
func (l *RequestLog) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.ContainsFunc(l.skip, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) }) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rw := &recordingWriter{StatusWriter: httpapi.StatusWriter{ResponseWriter: w}}
		next.ServeHTTP(rw, r)
		status := rw.Status
		if status == 0 {
			status = http.StatusOK
		}
		entry := Request{Time: start, Method: r.Method, Path: r.URL.Path, Status: status,
			RequestID: w.Header().Get("X-Request-Id"), Latency: time.Since(start)}
		if status >= 400 {
			var e struct{ ErrorCode string }
			if json.Unmarshal(rw.errBody.Bytes(), &e) == nil {
				entry.ErrorCode = e.ErrorCode
			}
		}
		l.add(entry)
	})
}

// maxErrBody bounds what is kept of an error answer to read its errorCode.
const maxErrBody = 4 << 10

// recordingWriter is a StatusWriter that also keeps the start of an error
// answer, to read its errorCode.
type recordingWriter struct {
	httpapi.StatusWriter
	errBody bytes.Buffer
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	n, err := w.StatusWriter.Write(b)
	if w.Status >= 400 && w.errBody.Len() < maxErrBody {
		w.errBody.Write(b[:min(n, maxErrBody-w.errBody.Len())])
	}
	return n, err
}
