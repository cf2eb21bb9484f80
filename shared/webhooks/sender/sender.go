// Package sender is the webhooks' HTTP adapter: it POSTs one delivery
// attempt (webhooks.Poster) under the SSRF rules — https on port 443 to
// public addresses only, checked when dialling — and reads at most 64 KiB
// of the answer.
package sender

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"code.dny.dev/ssrf"

	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/target"
)

// DefaultTimeout is how long a receiver has to answer (docs/webhooks.md).
const DefaultTimeout = 15 * time.Second

// maxResponseBytes is how much of a receiver's answer is read (and dropped).
const maxResponseBytes = 64 << 10

// ErrTargetRefused is returned for a target the SSRF rules refuse.
var ErrTargetRefused = target.ErrRefused

// Config configures a Sender.
type Config struct {
	// Timeout bounds one attempt, from dialling to the end of the answer
	// (default DefaultTimeout).
	Timeout time.Duration
	// AllowLocal is the development setting (PAYSVC_WEBHOOK_ALLOW_LOCAL):
	// targets on localhost or a loopback address are accepted over http or
	// https on any port. Everything else stays under the production rules.
	AllowLocal bool
	// Wrap, when set, wraps the transports (tracing); the dial-time SSRF
	// check stays underneath whatever it adds, and so does the removal of
	// internal trace headers (InternalHeaders): the wrapper may record the
	// call (an X-Ray subsegment) but what it adds never reaches a merchant.
	Wrap func(http.RoundTripper) http.RoundTripper
}

// Sender POSTs deliveries. Production rules: https only, port 443, the
// resolved address must be public (checked at dial time, so DNS answers
// cannot smuggle in a private address), no proxy, redirects not followed
// (a 3xx is a failed attempt). It is safe for concurrent use.
type Sender struct {
	guarded    *http.Client
	local      *http.Client // only with AllowLocal
	timeout    time.Duration
	allowLocal bool
}

// New returns a Sender.
func New(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	guard := ssrf.New(ssrf.WithPorts(443))
	s := &Sender{guarded: newClient(guard.Safe), timeout: cfg.Timeout, allowLocal: cfg.AllowLocal}
	if cfg.AllowLocal {
		s.local = newClient(loopbackOnly)
	}
	for _, c := range []*http.Client{s.guarded, s.local} {
		if c == nil {
			continue
		}
		c.Transport = stripInternalHeaders{c.Transport}
		if cfg.Wrap != nil {
			c.Transport = cfg.Wrap(c.Transport)
		}
	}
	return s
}

// InternalHeaders are the trace propagation headers a tracer adds to
// outgoing calls (X-Ray, W3C Trace Context, B3). They identify our traces
// and are meaningless to a merchant, so deliveries never carry them.
var InternalHeaders = []string{
	"X-Amzn-Trace-Id", "Traceparent", "Tracestate", "Baggage",
	"X-B3-Traceid", "X-B3-Spanid", "X-B3-Parentspanid", "X-B3-Sampled", "X-B3-Flags", "B3",
}

// stripInternalHeaders removes InternalHeaders from each request just
// before it is sent (below any tracing wrapper, which still records the call).
type stripInternalHeaders struct{ next http.RoundTripper }

func (s stripInternalHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	for _, h := range InternalHeaders {
		if _, ok := r.Header[h]; ok {
			// A RoundTripper must not modify the caller's request.
			r = r.Clone(r.Context())
			for _, h := range InternalHeaders {
				r.Header.Del(h)
			}
			break
		}
	}
	return s.next.RoundTrip(r)
}

// newClient returns a client dialling through control, with no proxy and
// no redirects.
func newClient(control func(network, address string, c syscall.RawConn) error) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: control}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout:   10 * time.Second,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// loopbackOnly is the dial check of development targets.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("%w: %s is not a loopback address", ErrTargetRefused, address)
	}
	return nil
}

// CheckTarget validates a subscription URL under the production rules or,
// with allowLocal, also accepts http(s) targets on localhost or a loopback
// address (any port); local reports such a target. Addresses of host names
// are checked when dialling.
func CheckTarget(raw string, allowLocal bool) (u *url.URL, local bool, err error) {
	t, err := target.Check(raw, allowLocal)
	return t.URL, t.Local, err
}

// Headers returns the headers of req. Header names are case-insensitive
// (they travel canonicalised over HTTP/1.1 and lower-case over HTTP/2).
func Headers(req webhooks.Request) http.Header {
	ts := strconv.FormatInt(req.Timestamp.Unix(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "paysvc-webhooks/1")
	for name, v := range map[string]string{
		webhooks.HeaderID: req.ID, webhooks.HeaderTimestamp: ts, webhooks.HeaderSignature: req.Signature,
		webhooks.HeaderAttempt: strconv.Itoa(req.Attempt), webhooks.HeaderPayloadVersion: webhooks.PayloadVersion,
		webhooks.HeaderStdID: req.ID, webhooks.HeaderStdTimestamp: ts, webhooks.HeaderStdSignature: req.Signature,
	} {
		h.Set(name, v)
	}
	return h
}

// Send makes one attempt. It never follows redirects; the answer's body is
// read (at most 64 KiB) and its first webhooks.MaxBodyPrefix bytes kept.
func (s *Sender) Send(ctx context.Context, req webhooks.Request) webhooks.Result {
	start := time.Now()
	u, local, err := CheckTarget(req.URL, s.allowLocal)
	if err != nil {
		return webhooks.Result{Err: err, Refused: true}
	}
	client := s.guarded
	if local {
		client = s.local
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return webhooks.Result{Err: fmt.Errorf("build request: %w", unwrapURLError(err))}
	}
	hr.Header = Headers(req)
	resp, err := client.Do(hr)
	if err != nil {
		return s.failure(ctx, err, time.Since(start))
	}
	var head bytes.Buffer
	n, err := io.Copy(&prefix{&head, webhooks.MaxBodyPrefix}, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	if err != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// A 2xx counts only once the answer is complete.
		return s.failure(ctx, err, time.Since(start))
	}
	return webhooks.Result{
		StatusCode: resp.StatusCode, Reason: http.StatusText(resp.StatusCode), Duration: time.Since(start),
		Body: head.Bytes(), Truncated: n > int64(head.Len()),
	}
}

// prefix keeps the first n bytes written to it and drops the rest.
type prefix struct {
	buf *bytes.Buffer
	n   int
}

func (p *prefix) Write(b []byte) (int, error) {
	if room := p.n - p.buf.Len(); room > 0 {
		p.buf.Write(b[:min(room, len(b))])
	}
	return len(b), nil
}

// failure classifies a transport error.
func (s *Sender) failure(ctx context.Context, err error, took time.Duration) webhooks.Result {
	err = unwrapURLError(err)
	var ne net.Error
	switch {
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedPort),
		errors.Is(err, ssrf.ErrProhibitedNetwork), errors.Is(err, ErrTargetRefused):
		return webhooks.Result{Err: fmt.Errorf("%w: %v", ErrTargetRefused, err), Refused: true, Duration: took}
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return webhooks.Result{Err: fmt.Errorf("timeout: no complete answer within %s", s.timeout), Timeout: true, Duration: took}
	}
	return webhooks.Result{Err: err, Duration: took}
}

// unwrapURLError drops the *url.Error wrapper, whose text holds the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

var _ webhooks.Poster = (*Sender)(nil)
