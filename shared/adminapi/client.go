package adminapi

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls a running local server's admin API.
type Client struct {
	Endpoint Endpoint
	HTTP     *http.Client // nil: http.DefaultClient
}

func (c *Client) do(ctx context.Context, method, route string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body) // ExecRequest, ListenReport: cannot fail
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Endpoint.URL, "/")+Prefix+route, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Endpoint.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cmp.Or(c.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e struct{ ErrorCode, Message string }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(b, &e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(b))
		}
		return nil, fmt.Errorf("the local server's admin API answered %d %s: %s", resp.StatusCode, e.ErrorCode, e.Message)
	}
	return resp, nil
}

func (c *Client) call(ctx context.Context, method, route string, body, out any) error {
	resp, err := c.do(ctx, method, route, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// Status asks the server whether it runs (and is the one the files name).
func (c *Client) Status(ctx context.Context) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st Status
	return st, c.call(ctx, http.MethodGet, "status", nil, &st)
}

// Exec runs a paysvc-admin command in the server.
func (c *Client) Exec(ctx context.Context, args []string) (ExecResult, error) {
	var res ExecResult
	return res, c.call(ctx, http.MethodPost, "exec", ExecRequest{Args: args}, &res)
}

// ErrStreamEnded is returned by Listen when the server ended the stream
// (it stopped).
var ErrStreamEnded = errors.New("the local server ended the stream (it stopped)")

// Listen streams merchantID's webhooks (of codes only, when given) for a
// CLI that sends them to (a URL; "": prints them): ready is called once
// with the stream's first message (the merchant, the listener's id, the
// secret they are signed with), then webhook for each, until ctx ends
// (nil), the server stops (ErrStreamEnded) or webhook fails.
func (c *Client) Listen(ctx context.Context, merchantID, to string, codes []string, ready func(StreamMessage), webhook func(Webhook) error) error {
	// An empty value is as good as none to the server.
	q := url.Values{"merchant": {merchantID}, "to": {to}, "events": {strings.Join(codes, ",")}}
	resp, err := c.do(ctx, http.MethodGet, "listen?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var m StreamMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("the listen stream: %w", err)
		}
		switch {
		case m.Type == "ready":
			ready(m)
		case m.Type == "webhook" && m.Webhook != nil:
			if err := webhook(*m.Webhook); err != nil {
				return err
			}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("the listen stream: %w", err)
	}
	return ErrStreamEnded
}

// Report tells the server what became of a webhook of a listen.
func (c *Client) Report(ctx context.Context, r ListenReport) error {
	var out struct{}
	return c.call(ctx, http.MethodPost, "listen/report", r, &out)
}
