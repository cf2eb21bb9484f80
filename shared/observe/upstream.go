package observe

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// UpstreamTransport wraps base (the upstream client's transport) so every
// HTTP call is recorded with Upstream: UpstreamRequests, UpstreamErrors and
// UpstreamLatency, per Operation. The call ends when the response body is
// closed (or fails to read), so the latency includes the body and a body cut
// off by a timeout counts as an error. On a nil *Metrics it returns base.
func (m *Metrics) UpstreamTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if m == nil {
		return base
	}
	return &upstreamTransport{m: m, base: base}
}

type upstreamTransport struct {
	m    *Metrics
	base http.RoundTripper
}

func (t *upstreamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	op := Operation(r.Method, r.URL.Path)
	start := t.m.clock.Now()
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		t.m.Upstream(op, 0, true, t.m.clock.Now().Sub(start))
		return resp, err
	}
	resp.Body = &observedBody{ReadCloser: resp.Body, done: func(readErr error) {
		t.m.Upstream(op, resp.StatusCode, resp.StatusCode >= 500 || readErr != nil, t.m.clock.Now().Sub(start))
	}}
	return resp, nil
}

// observedBody reports the end of a response body once: at the first read
// error other than EOF, or at Close.
type observedBody struct {
	io.ReadCloser
	once sync.Once
	done func(readErr error)
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.once.Do(func() { b.done(err) })
	}
	return n, err
}

func (b *observedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.done(nil) })
	return err
}

// Operation names an upstream call for the Operation dimension: the method
// and the path after the API version segment (e.g. "/v71"), with every
// segment that is not a lower-camel-case word (ids such as a pspReference)
// replaced by "{id}": "POST /payments/{id}/captures". The set of values is
// bounded by the client's endpoints, as a dimension must be.
func Operation(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if isVersion(s) {
			segs = segs[i+1:]
			break
		}
	}
	for i, s := range segs {
		if !isWord(s) {
			segs[i] = "{id}"
		}
	}
	return method + " /" + strings.Join(segs, "/")
}

// isVersion matches an API version segment: v followed by digits.
func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isWord matches lowerCamelCase resource names: paymentMethods, captures.
func isWord(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
