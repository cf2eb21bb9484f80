// Package eventreplay sends the repository's sample API Gateway events
// (events/) to a running local server (`make run`): the event's method,
// path, query, headers and body become one HTTP request. The events' demo
// payment can be replaced by a real one, since the local upstream
// simulator only knows payments it authorised. Run is the paysvc-event
// command.
package eventreplay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// DemoPSP is the pspReference of the events' demo payment (events/README.md).
const DemoPSP = "QFQTPCQ8HXSKGK82"

// ErrNotAnAPIEvent: the file is not an API Gateway proxy event (the SQS
// event is for the dispatcher function, which make run's own worker is).
var ErrNotAnAPIEvent = errors.New("not an API Gateway proxy event (sqs-deliveries.json is for `sam local invoke WebhookDispatcherFunction`; make run delivers webhooks by itself)")

// event is the part of an API Gateway REST proxy event a request needs.
type event struct {
	HTTPMethod            string              `json:"httpMethod"`
	Path                  string              `json:"path"`
	Headers               map[string]string   `json:"headers"`
	MultiValueQueryString map[string][]string `json:"multiValueQueryStringParameters"`
	QueryString           map[string]string   `json:"queryStringParameters"`
	Body                  *string             `json:"body"`
	IsBase64Encoded       bool                `json:"isBase64Encoded"`
}

// Headers API Gateway adds, or that describe the original connection: not
// sent to the local server.
var dropped = map[string]bool{"host": true, "x-forwarded-for": true, "x-forwarded-port": true,
	"x-forwarded-proto": true, "x-amzn-trace-id": true, "content-length": true}

// Options say where and how an event is sent.
type Options struct {
	BaseURL string // the local server, e.g. http://127.0.0.1:3000
	// PSP, when not empty, replaces the demo payment's pspReference
	// everywhere: path, query values, header values and body.
	PSP string
	// KeepIdempotencyKey sends the event file's own Idempotency-Key: the
	// same call again, so the server replays a stored answer. By default
	// each send is a new call with a fresh key (the file's key and a
	// random suffix).
	KeepIdempotencyKey bool
	NewKey             func(fileKey string) string // the fresh key (default: fileKey-<random hex>)
}

// Request builds the HTTP request of raw (an event file's contents).
func Request(ctx context.Context, raw []byte, o Options) (*http.Request, error) {
	var ev event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("read event: %w", err)
	}
	if ev.HTTPMethod == "" || ev.Path == "" {
		return nil, ErrNotAnAPIEvent
	}
	body := ""
	if ev.Body != nil {
		body = *ev.Body
		if ev.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(body)
			if err != nil {
				return nil, fmt.Errorf("event body: %w", err)
			}
			body = string(b)
		}
	}
	psp := func(s string) string { return s }
	if o.PSP != "" {
		psp = func(s string) string { return strings.ReplaceAll(s, DemoPSP, o.PSP) }
	}
	q := url.Values{}
	for k, vs := range ev.MultiValueQueryString {
		for _, v := range vs {
			q.Add(k, psp(v))
		}
	}
	for k, v := range ev.QueryString {
		if _, ok := q[k]; !ok {
			q.Set(k, psp(v))
		}
	}
	u := strings.TrimRight(o.BaseURL, "/") + psp(ev.Path)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, ev.HTTPMethod, u, strings.NewReader(psp(body)))
	if err != nil {
		return nil, err
	}
	for k, v := range ev.Headers {
		if !dropped[strings.ToLower(k)] {
			req.Header.Set(k, psp(v))
		}
	}
	if k := req.Header.Get("Idempotency-Key"); k != "" && !o.KeepIdempotencyKey {
		newKey := o.NewKey
		if newKey == nil {
			newKey = freshKey
		}
		req.Header.Set("Idempotency-Key", newKey(k))
	}
	return req, nil
}

func freshKey(fileKey string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fileKey + "-" + hex.EncodeToString(b)
}

// Result is the server's answer to one event.
type Result struct {
	Status         int
	IdempotencyKey string // the key sent ("" when the event has none)
	Replayed       bool   // Idempotent-Replayed: the stored answer of an earlier call with that key
	RequestID      string
	Body           []byte
}

// Send sends raw (see Request) and returns the answer.
func Send(ctx context.Context, client *http.Client, raw []byte, o Options) (Result, error) {
	req, err := Request(ctx, raw, o)
	if err != nil {
		return Result{}, err
	}
	res := Result{IdempotencyKey: req.Header.Get("Idempotency-Key")}
	resp, err := client.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	res.RequestID = resp.Header.Get("X-Request-Id")
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return res, err
	}
	res.Body = b.Bytes()
	return res, nil
}

// Print writes r as paysvc-event shows it: the status, the key sent and
// whether the answer is a replay, then the body.
func (r Result) Print(w io.Writer) {
	fmt.Fprintf(w, "HTTP %d\n", r.Status)
	if r.IdempotencyKey != "" {
		fmt.Fprintf(w, "Idempotency-Key: %s\n", r.IdempotencyKey)
	}
	if r.Replayed {
		fmt.Fprintln(w, "Idempotent-Replayed: true (the stored answer of an earlier call with this key)")
	}
	if r.RequestID != "" {
		fmt.Fprintf(w, "X-Request-Id: %s\n", r.RequestID)
	}
	fmt.Fprintf(w, "%s\n", r.Body)
}

// BaseURL is the URL of a local server listening on addr (PAYSVC_ADDR,
// e.g. 127.0.0.1:3000 or :3000); a wildcard host is reached on loopback.
func BaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
