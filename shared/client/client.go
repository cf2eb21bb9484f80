package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of a new Client.
const (
	DefaultMaxRetries = 3
	DefaultBaseDelay  = 250 * time.Millisecond
	DefaultMaxDelay   = 10 * time.Second
	maxAnswerBytes    = 1 << 20
)

// Client calls the merchant API with one API key.
type Client struct {
	base       string
	key        string
	http       *http.Client
	maxRetries int
	baseDelay  time.Duration
	maxDelay   time.Duration
	sleep      func(ctx context.Context, d time.Duration) error
	jitter     func(max time.Duration) time.Duration
	newKey     func() string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: one with a 60 s timeout).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetries sets how often a call is retried (0: never) and the backoff's
// base and maximum delay.
func WithRetries(max int, base, maxDelay time.Duration) Option {
	return func(c *Client) { c.maxRetries, c.baseDelay, c.maxDelay = max, base, maxDelay }
}

// WithSleep replaces the wait between retries (tests). It must return
// ctx.Err() when the context ends first.
func WithSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.sleep = f }
}

// WithJitter replaces the random part of the backoff: it returns a delay
// in [0, max] (tests).
func WithJitter(f func(max time.Duration) time.Duration) Option {
	return func(c *Client) { c.jitter = f }
}

// WithKeyGenerator replaces how Idempotency-Keys are generated.
func WithKeyGenerator(f func() string) Option { return func(c *Client) { c.newKey = f } }

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:3000)
// with apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{
		base: strings.TrimRight(baseURL, "/"), key: apiKey,
		http:       &http.Client{Timeout: 60 * time.Second},
		maxRetries: DefaultMaxRetries, baseDelay: DefaultBaseDelay, maxDelay: DefaultMaxDelay,
		sleep: sleepCtx, jitter: randomJitter, newKey: randomKey,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// CallOption configures one call.
type CallOption func(*call)

type call struct{ idemKey string }

// WithIdempotencyKey sets the call's Idempotency-Key: use your order or
// operation id so a retry after a crash on your side is safe too.
func WithIdempotencyKey(k string) CallOption { return func(c *call) { c.idemKey = k } }

// Meta is what an answer says besides its body. Every call's result has
// it (the Meta field; a failed call's *Error has the same facts).
type Meta struct {
	StatusCode int
	RequestID  string // X-Request-Id: quote it to support
	// IdempotencyKey is the key a POST was sent with: yours
	// (WithIdempotencyKey) or the one the client generated. Send the same
	// call with it again and the service replays this answer.
	IdempotencyKey string
	// Replayed: the answer is the stored answer of an earlier call with
	// the same Idempotency-Key (Idempotent-Replayed: true); that call, not
	// this one, reached the platform.
	Replayed bool
	Header   http.Header
}

// UserAgent is the User-Agent of every request.
const UserAgent = "paysvc-go/" + Version

// Version is the client's version.
const Version = "0.2.0"

// do sends one API call, retrying as the package says, decodes a 2xx
// answer into out and fills meta (either may be nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any, meta *Meta, opts []CallOption) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("paysvc: encode request: %w", err)
		}
	}
	var cl call
	for _, o := range opts {
		o(&cl)
	}
	if method == http.MethodPost && cl.idemKey == "" {
		cl.idemKey = c.newKey()
	}
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, method, path, body, cl.idemKey, out, meta)
		if err == nil || ctx.Err() != nil || attempt >= c.maxRetries || !retryable(err) {
			return err
		}
		if err := c.sleep(ctx, c.delay(attempt, err)); err != nil {
			return err
		}
	}
}

func retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable()
	}
	var d decodeError
	return !errors.As(err, &d) // a network error; a garbled 2xx is not retried
}

// delay is the wait before retry attempt+1: full jitter over an exponential
// ceiling, never less than the answer's Retry-After.
func (c *Client) delay(attempt int, err error) time.Duration {
	ceiling := c.baseDelay << attempt
	if ceiling > c.maxDelay || ceiling <= 0 {
		ceiling = c.maxDelay
	}
	d := c.jitter(ceiling)
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	return d
}

type decodeError struct{ error }

func (c *Client) once(ctx context.Context, method, path string, body []byte, idemKey string, out any, meta *Meta) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("paysvc: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("paysvc: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("paysvc: %s %s: read answer: %w", method, path, err)
	}
	m := Meta{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id"), IdempotencyKey: idemKey,
		Replayed: resp.Header.Get("Idempotent-Replayed") == "true", Header: resp.Header}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				return decodeError{fmt.Errorf("paysvc: %s %s: decode answer: %w", method, path, err)}
			}
		}
		if meta != nil {
			*meta = m
		}
		return nil
	}
	return answerError(m, b)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func randomJitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(max)+1))
	if err != nil {
		return max
	}
	return time.Duration(n.Int64())
}

func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "idk_" + hex.EncodeToString(b)
}

func sitePath(siteID string, parts ...string) string {
	p := "/v1/ecom/" + url.PathEscape(siteID)
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}
