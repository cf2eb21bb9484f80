// Package webhooksink is a merchant's webhook endpoint for tests: it
// answers each request with the next of the statuses it was given (then
// 204) and hands every request on, so a test waits for the webhook it
// expects instead of polling.
package webhooksink

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Wait bounds every wait for a webhook: a failure bound only.
const Wait = 60 * time.Second

// Hook is one request the sink received.
type Hook struct {
	Header http.Header
	Body   []byte
}

// Item decodes the notification item of a webhook body ("" fields when
// the body is not one).
func (h Hook) Item() map[string]any {
	var n struct {
		NotificationItems []struct {
			Item map[string]any `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	if json.Unmarshal(h.Body, &n) != nil || len(n.NotificationItems) != 1 {
		return map[string]any{}
	}
	return n.NotificationItems[0].Item
}

// Sink is the endpoint.
type Sink struct {
	URL string // …/webhooks
	got chan Hook
}

// New starts a sink answering with answers, in order, then 204; it stops
// with the test.
func New(t *testing.T, answers ...int) *Sink {
	t.Helper()
	s := &Sink{got: make(chan Hook, 64)}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		status := http.StatusNoContent
		if len(answers) > 0 {
			status, answers = answers[0], answers[1:]
		}
		mu.Unlock()
		w.WriteHeader(status)
		if status >= 300 {
			_, _ = io.WriteString(w, http.StatusText(status)) // a body for the delivery's attempt history
		}
		s.got <- Hook{r.Header.Clone(), b}
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/webhooks"
	return s
}

// Next returns the next webhook.
func (s *Sink) Next(t *testing.T) Hook {
	t.Helper()
	select {
	case h := <-s.got:
		return h
	case <-time.After(Wait):
		t.Fatalf("no webhook within %s", Wait)
		return Hook{}
	}
}

// NextOf returns the next webhook of event code, passing over others.
func (s *Sink) NextOf(t *testing.T, code string) Hook {
	t.Helper()
	bound := time.After(Wait)
	for {
		select {
		case h := <-s.got:
			if h.Item()["eventCode"] == code {
				return h
			}
		case <-bound:
			t.Fatalf("no %s webhook within %s", code, Wait)
		}
	}
}
