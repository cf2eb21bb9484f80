package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/client"
)

// scripted answers a fixed sequence and records the requests.
type scripted struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	keys    []string // each request's Idempotency-Key
	agents  []string // and User-Agent
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
	s.agents = append(s.agents, r.Header.Get("User-Agent"))
	a := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_%d", len(s.keys)))
	a(w)
}

func fail(status int, code string, hdr ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"errorCode":%q,"message":"m"}`, code)
	}
}

func captured(w http.ResponseWriter) {
	_, _ = w.Write([]byte(`{"pspReference":"CAP","status":"received","paymentPspReference":"PSP"}`))
}

func TestClientRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answers   []func(http.ResponseWriter)
		wantCalls int
		wantErr   client.ErrorCode // errorCode of the final error, "" = success
		wantWaits []time.Duration
	}{
		{"in flight then ok", []func(http.ResponseWriter){fail(409, "yp_2004"), captured}, 2, "", []time.Duration{100 * time.Millisecond}},
		{"payment busy then ok", []func(http.ResponseWriter){fail(409, "yp_2005"), captured}, 2, "", []time.Duration{100 * time.Millisecond}},
		{"rate limited waits Retry-After", []func(http.ResponseWriter){fail(429, "yp_9006", "Retry-After", "3"), captured}, 2, "", []time.Duration{3 * time.Second}},
		{"5xx backs off exponentially", []func(http.ResponseWriter){fail(500, "yp_9000"), fail(500, "yp_4003"), captured}, 3, "", []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"gives up after the retries", []func(http.ResponseWriter){fail(500, "yp_9000")}, 4, "yp_9000", []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"4xx is not retried", []func(http.ResponseWriter){fail(400, "yp_2002")}, 1, "yp_2002", nil},
		{"idempotency mismatch is not retried", []func(http.ResponseWriter){fail(422, "yp_2003")}, 1, "yp_2003", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{answers: tc.answers}
			srv := httptest.NewServer(s)
			defer srv.Close()
			var waits []time.Duration
			c := client.New(srv.URL, "yp_test_k",
				client.WithRetries(3, 100*time.Millisecond, time.Second),
				client.WithJitter(func(max time.Duration) time.Duration { return max }),
				client.WithSleep(func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }))
			m, err := c.Capture(context.Background(), "site_a", "PSP", client.CaptureParams{Amount: client.Amount{Value: 1, Currency: "EUR"}})
			if len(s.keys) != tc.wantCalls || !slices.Equal(waits, tc.wantWaits) {
				t.Fatalf("calls %d waits %v", len(s.keys), waits)
			}
			for _, k := range s.keys {
				if k == "" || k != s.keys[0] {
					t.Fatalf("Idempotency-Keys %v: one generated key for every attempt", s.keys)
				}
			}
			var e *client.Error
			switch {
			case tc.wantErr == "" && (err != nil || m.PSPReference != "CAP"):
				t.Fatalf("%+v %v", m, err)
			case tc.wantErr != "" && (!errors.As(err, &e) || e.Code != tc.wantErr || e.RequestID == ""):
				t.Fatalf("error %#v", err)
			}
		})
	}
}

// Two calls get two keys; a GET gets none.
func TestClientKeyPerCall(t *testing.T) {
	s := &scripted{answers: []func(http.ResponseWriter){captured}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := client.New(srv.URL, "yp_test_k")
	for range 2 {
		if _, err := c.Capture(context.Background(), "s", "PSP", client.CaptureParams{}); err != nil {
			t.Fatal(err)
		}
	}
	s.answers = []func(http.ResponseWriter){func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"clientToken":"c","environment":"test"}`)) }}
	if _, err := c.Config(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.keys[0] == "" || s.keys[0] == s.keys[1] || s.keys[2] != "" {
		t.Fatalf("keys %q", s.keys)
	}
}

// Network errors are retried; a cancelled context stops the retries.
func TestClientNetworkErrorAndCancel(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens: every attempt is a network error
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	c := client.New(url, "yp_test_k", client.WithRetries(5, time.Millisecond, time.Second),
		client.WithSleep(func(ctx context.Context, _ time.Duration) error {
			attempts++
			if attempts == 2 {
				cancel()
				return ctx.Err()
			}
			return nil
		}))
	_, err := c.Config(ctx)
	if !errors.Is(err, context.Canceled) || attempts != 2 {
		t.Fatalf("attempts %d err %v", attempts, err)
	}
}
