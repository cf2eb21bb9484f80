// Package eventreplay sends the repository's sample API Gateway events
// (events/) to a running local server (`make run`): the event's method,
// path, query, headers and body become one HTTP request. The events' demo
// payment can be replaced by a real one, since the local upstream
// simulator only knows payments it authorised.
package eventreplay

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Request builds the HTTP request of raw (an event file's contents) against
// baseURL; psp, when not empty, replaces the demo payment's pspReference in
// the path and body.
func Request(ctx context.Context, baseURL string, raw []byte, psp string) (*http.Request, error) {
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
	path := ev.Path
	if psp != "" {
		path, body = strings.ReplaceAll(path, DemoPSP, psp), strings.ReplaceAll(body, DemoPSP, psp)
	}
	q := url.Values{}
	for k, vs := range ev.MultiValueQueryString {
		q[k] = append(q[k], vs...)
	}
	for k, v := range ev.QueryString {
		if _, ok := q[k]; !ok {
			q.Set(k, v)
		}
	}
	u := strings.TrimRight(baseURL, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, ev.HTTPMethod, u, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range ev.Headers {
		if !dropped[strings.ToLower(k)] {
			req.Header.Set(k, v)
		}
	}
	return req, nil
}

// Send sends raw to baseURL (see Request) and returns the answer's status
// and body.
func Send(ctx context.Context, client *http.Client, baseURL string, raw []byte, psp string) (int, []byte, error) {
	req, err := Request(ctx, baseURL, raw, psp)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, b.Bytes(), nil
}
