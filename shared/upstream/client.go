package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// DefaultTimeout bounds one call (both attempts, when the connection had to
// be retried) unless Config.Timeout says otherwise.
const DefaultTimeout = 30 * time.Second

// MaxIdempotencyKeyLen is the upstream's limit for the Idempotency-Key header.
const MaxIdempotencyKeyLen = 64

// maxResponseBytes bounds how much of a response body is read.
const maxResponseBytes = 8 << 20

// Config configures a Client.
type Config struct {
	// BaseURL is the versioned API root, e.g.
	// "https://checkout-test.adyen.com/v71" or, live,
	// "https://{prefix}-checkout-live.adyenpayments.com/checkout/v71".
	BaseURL string
	// APIKey is sent as X-API-Key. It is a secret: it never appears in
	// errors or logs.
	APIKey string
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient's Transport sends the requests (http.DefaultTransport when
	// it has none); nil means a transport of the client's own. The
	// transport is called directly: redirects are never followed (an
	// answer is the upstream's), and the http.Client's Timeout, Jar and
	// CheckRedirect are not used (Timeout above bounds each call).
	HTTPClient *http.Client
}

// Client calls the upstream checkout API. It is safe for concurrent use.
type Client struct {
	baseURL string
	base    *url.URL // baseURL parsed once (nil: unparsable, reported per call)
	apiKey  []string // the X-API-Key header's value
	// fixed holds the URLs of the paths without a variable part, built
	// once (read-only: a RoundTripper must not modify a request).
	fixed   map[string]*url.URL
	timeout time.Duration
	rt      http.RoundTripper
}

// Header values shared by every request (read-only).
var (
	hdrJSON      = []string{"application/json"}
	hdrUserAgent = []string{"paysvc-upstream/1"}
)

// New returns a Client for cfg.
func New(cfg Config) *Client {
	c := &Client{
		baseURL: strings.TrimRight(cfg.BaseURL, "/"),
		apiKey:  []string{cfg.APIKey},
		timeout: cfg.Timeout,
	}
	if u, err := url.Parse(c.baseURL); err == nil && u.Scheme != "" && u.Host != "" && u.RawQuery == "" && u.Fragment == "" {
		c.base = u
		fixed := make(map[string]*url.URL, len(fixedPaths))
		for _, p := range fixedPaths {
			if t, err := c.target(p, nil); err == nil {
				fixed[p] = t
			}
		}
		c.fixed = fixed
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	switch {
	case cfg.HTTPClient == nil:
		c.rt = NewTransport()
	case cfg.HTTPClient.Transport == nil:
		c.rt = http.DefaultTransport
	default:
		c.rt = cfg.HTTPClient.Transport
	}
	return c
}

// MaxIdleConnsPerHost is how many idle keep-alive connections to the
// upstream a transport keeps: as many as the requests a local server runs
// at once, so that concurrent calls reuse connections instead of opening
// and closing one each (net/http's default keeps 2). A Lambda instance
// calls the upstream one request at a time and keeps one.
const MaxIdleConnsPerHost = 64

// fixedPaths are the paths called without a variable part.
var fixedPaths = []string{"/payments", "/payments/details", "/sessions", "/paymentMethods"}

// NewTransport returns the transport upstream calls go over: net/http's
// defaults (proxy from the environment, dial and TLS timeouts, HTTP/2)
// with MaxIdleConnsPerHost idle connections kept.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, MaxIdleConnsPerHost)
	return t
}

// String describes the client without its API key.
func (c *Client) String() string { return "upstream.Client(" + c.baseURL + ")" }

// do sends one request and returns the body of a 2xx answer. Failures are
// *Error (an upstream error answer) or satisfy ErrUnavailable.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body any, idempotencyKey string) ([]byte, error) {
	// op names the call in errors only (built when one is returned).
	op := func() string { return method + " " + path }
	if c.baseURL == "" {
		return nil, fmt.Errorf("upstream: %s: no base URL configured", op())
	}
	if err := checkIdempotencyKey(idempotencyKey); err != nil {
		return nil, fmt.Errorf("upstream: %s: %w", op(), err)
	}
	var payload []byte
	if body != nil {
		var err error
		// A type with its own MarshalJSON (PaymentRequest, whose Extra is
		// validated there) is called directly: encoding/json would re-scan
		// and compact its output.
		if m, ok := body.(json.Marshaler); ok {
			payload, err = m.MarshalJSON()
		} else {
			payload, err = json.Marshal(body)
		}
		if err != nil {
			return nil, fmt.Errorf("upstream: %s: encoding request: %w", op(), err)
		}
	}
	target, err := c.target(path, query)
	if err != nil {
		return nil, fmt.Errorf("upstream: %s: building request: %w", op(), err)
	}

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	for attempt := 1; ; attempt++ {
		var connected atomic.Bool
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
		req := c.request(httptrace.WithClientTrace(ctx, trace), method, target, payload)
		// Canonical names, values shared: no allocation per header.
		req.Header["X-Api-Key"] = c.apiKey
		req.Header["Accept"] = hdrJSON
		req.Header["User-Agent"] = hdrUserAgent
		if payload != nil {
			req.Header["Content-Type"] = hdrJSON
		}
		if idempotencyKey != "" {
			req.Header["Idempotency-Key"] = []string{idempotencyKey}
		}

		// The transport itself, not http.Client.Do: no header copy and no
		// redirect machinery per call (redirects are not followed anyway).
		resp, err := c.rt.RoundTrip(req)
		if err != nil {
			// Retry once, and only when no connection was ever obtained:
			// then not one byte of the request reached the upstream.
			if attempt == 1 && !connected.Load() && ctx.Err() == nil && isDialError(err) {
				continue
			}
			return nil, &unavailableError{op: op(), cause: err}
		}
		return c.read(op, resp)
	}
}

// target is the URL of path (and query) under the base URL: a copy of
// the base parsed once, or, when it did not parse as an absolute URL, the
// whole string parsed now, as before (which reports why).
func (c *Client) target(path string, query url.Values) (*url.URL, error) {
	if u, ok := c.fixed[path]; ok && len(query) == 0 {
		return u, nil
	}
	var rawQuery string
	if len(query) > 0 {
		rawQuery = query.Encode()
	}
	if c.base == nil {
		if rawQuery != "" {
			return url.Parse(c.baseURL + path + "?" + rawQuery)
		}
		return url.Parse(c.baseURL + path)
	}
	// path comes escaped (segments through url.PathEscape), as it is sent.
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, err
	}
	u.Path, u.RawQuery = p, rawQuery
	return &u, nil
}

// request is what http.NewRequestWithContext builds for an absolute URL
// and a byte body, without parsing the URL again, and without GetBody: net/http
// then cannot silently re-send the request (it would, for requests carrying
// Idempotency-Key, on a reused connection closed after the request was
// written). The only retry is the explicit one in do.
func (c *Client) request(ctx context.Context, method string, u *url.URL, payload []byte) *http.Request {
	r := &http.Request{
		Method: method, URL: u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, 6),
	}
	if len(payload) > 0 {
		r.Body, r.ContentLength = newBody(payload), int64(len(payload))
	} else if payload != nil {
		r.Body = http.NoBody
	}
	return r.WithContext(ctx)
}

// body is a request body of bytes in one allocation (io.NopCloser of a
// bytes.Reader is two). Its WriteTo lets the transport write it in one go.
type body struct{ bytes.Reader }

func newBody(b []byte) *body {
	r := &body{}
	r.Reset(b)
	return r
}

// Close implements io.Closer: nothing to release.
func (*body) Close() error { return nil }

// read consumes resp and maps its status.
func (c *Client) read(op func() string, resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, &unavailableError{op: op(), cause: fmt.Errorf("reading response (HTTP %d): %w", resp.StatusCode, err)}
	}
	if len(raw) > maxResponseBytes {
		return nil, &unavailableError{op: op(), cause: fmt.Errorf("response larger than %d bytes", maxResponseBytes)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return raw, nil
	}
	return nil, parseError(op(), resp.StatusCode, raw)
}

// post sends body to path and decodes the 2xx answer into a T, returned
// with the whole body. A body that cannot be decoded leaves the outcome
// unknown, so the error satisfies ErrUnavailable.
func post[T any](ctx context.Context, c *Client, path string, body any, idempotencyKey string) (T, []byte, error) {
	var out T
	raw, err := c.do(ctx, http.MethodPost, path, nil, body, idempotencyKey)
	if err != nil {
		return out, nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		var zero T
		return zero, nil, &unavailableError{op: "POST " + path, cause: fmt.Errorf("decoding response: %w", err)}
	}
	return out, raw, nil
}

// errorBody is the upstream's error JSON.
type errorBody struct {
	Status       int    `json:"status"`
	ErrorCode    string `json:"errorCode"`
	Message      string `json:"message"`
	ErrorType    string `json:"errorType"`
	PSPReference string `json:"pspReference"`
}

func parseError(op string, status int, raw []byte) *Error {
	e := &Error{Op: op, HTTPStatus: status}
	var b errorBody
	if err := json.Unmarshal(raw, &b); err == nil && (b.ErrorCode != "" || b.Message != "") {
		e.ErrorCode, e.Message, e.ErrorType, e.PSPReference = b.ErrorCode, b.Message, b.ErrorType, b.PSPReference
		return e
	}
	e.Message = snippet(raw)
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// snippet returns the start of a non-JSON body as printable text.
func snippet(raw []byte) string {
	const max = 200
	s := strings.TrimSpace(string(raw))
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// isDialError reports whether err is a failure to establish a connection
// (DNS lookup or TCP connect).
func isDialError(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return !dnsErr.IsTimeout
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial" && !opErr.Timeout()
}

// checkIdempotencyKey enforces the upstream's limit and header syntax.
func checkIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKeyLen {
		return fmt.Errorf("idempotency key longer than %d characters", MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return errors.New("idempotency key has a character outside printable ASCII")
		}
	}
	return nil
}
