package sender_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

func TestCheckTarget(t *testing.T) {
	cases := []struct {
		url        string
		allowLocal bool
		ok, local  bool
	}{
		{"https://merchant.example/hooks", false, true, false},
		{"https://merchant.example:443/hooks", false, true, false},
		{"http://merchant.example/hooks", false, false, false},
		{"https://merchant.example:8443/hooks", false, false, false},
		{"https://user:pw@merchant.example/", false, false, false},
		{"/relative", false, false, false},
		{"http://127.0.0.1:8080/hook", false, false, false},
		{"https://localhost/hook", false, false, false},
		{"http://127.0.0.1:8080/hook", true, true, true},
		{"http://localhost:9999/hook", true, true, true},
		{"http://[::1]:9999/hook", true, true, true},
		{"ftp://127.0.0.1/hook", true, false, false},
		{"http://merchant.example/hooks", true, false, false},
	}
	for _, tc := range cases {
		_, local, err := sender.CheckTarget(tc.url, tc.allowLocal)
		if (err == nil) != tc.ok || local != tc.local {
			t.Errorf("CheckTarget(%q, allowLocal=%v) = local %v, err %v; want ok %v local %v", tc.url, tc.allowLocal, local, err, tc.ok, tc.local)
		}
		if err != nil && !errors.Is(err, sender.ErrTargetRefused) {
			t.Errorf("CheckTarget(%q): error %v is not ErrTargetRefused", tc.url, err)
		}
	}
}

// TestSenderRefusesPrivateTargets: without the development setting,
// loopback and private targets are refused — by URL, or at dial time for
// names and literal addresses that pass the URL rules — before any byte
// is sent.
func TestSenderRefusesPrivateTargets(t *testing.T) {
	hit := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit <- struct{}{} }))
	defer srv.Close()
	s := sender.New(sender.Config{Timeout: 2 * time.Second})
	for _, url := range []string{
		srv.URL + "/hook",              // http://127.0.0.1:port
		"https://localhost/hook",       // loopback name
		"https://10.0.0.1/hook",        // private, refused at dial
		"https://169.254.169.254/hook", // link-local metadata address
		"https://[fd00::1]/hook",       // unique local IPv6
		"https://0.0.0.0/hook",
	} {
		res := s.Send(context.Background(), webhooks.Request{URL: url, ID: "msg_1", Attempt: 1, Timestamp: time.Now(), Body: []byte("{}")})
		if !res.Refused || res.Delivered() || !errors.Is(res.Err, sender.ErrTargetRefused) {
			t.Errorf("%s: %+v, want refused", url, res)
		}
		if strings.Contains(res.Describe(), "/hook") {
			t.Errorf("%s: the description leaks the URL: %s", url, res.Describe())
		}
	}
	select {
	case <-hit:
		t.Fatal("a refused target received a request")
	default:
	}
}

func TestSenderLocalDevelopment(t *testing.T) {
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b := new(strings.Builder)
		_, _ = io.Copy(b, r.Body)
		body = b.String()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s := sender.New(sender.Config{Timeout: 30 * time.Second, AllowLocal: true})
	req := request(t, secretNew)
	req.URL = srv.URL + "/hook"
	res := s.Send(context.Background(), req)
	if !res.Delivered() || res.StatusCode != http.StatusNoContent {
		t.Fatalf("Send: %+v", res)
	}
	if got.Header.Get("X-Webhook-Id") != req.ID || got.Header.Get("Webhook-Signature") != req.Signature ||
		got.Header.Get("Content-Type") != "application/json" || body != string(req.Body) {
		t.Fatalf("request: %v %q", got.Header, body)
	}
}

func TestSenderOutcomes(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client going away
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // before Close, which waits for the handlers
	// The timeout only bounds a failure here; /slow has a sender of its own.
	s := sender.New(sender.Config{Timeout: 30 * time.Second, AllowLocal: true})
	send := func(path string) webhooks.Result {
		req := request(t, secretNew)
		req.URL = srv.URL + path
		return s.Send(context.Background(), req)
	}
	if r := send("/ok"); !r.Delivered() {
		t.Errorf("/ok: %+v", r)
	}
	if r := send("/redirect"); r.Delivered() || r.StatusCode != http.StatusFound || r.Describe() != "HTTP 302 Found" {
		t.Errorf("/redirect must not be followed: %+v", r)
	}
	if r := send("/gone"); !r.Gone() || r.Delivered() {
		t.Errorf("/gone: %+v", r)
	}
	if r := send("/error"); r.Delivered() || r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/error: %+v", r)
	}
	// /slow answers only when released: at the end, or after 30 s (a
	// failure bound: a sender that did not time out then gets the answer,
	// delivered, and fails the test).
	slow := sender.New(sender.Config{Timeout: 150 * time.Millisecond, AllowLocal: true})
	watchdog := time.AfterFunc(30*time.Second, unblock)
	defer watchdog.Stop()
	req := request(t, secretNew)
	req.URL = srv.URL + "/slow"
	r := slow.Send(context.Background(), req)
	if !r.Timeout || r.Delivered() || !strings.Contains(r.Describe(), "timeout") {
		t.Errorf("/slow: %+v, want a timeout", r)
	}
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSenderWrapIsApplied checks the tracing hook sits on the delivery path
// and the SSRF dial check still runs beneath it.
func TestSenderWrapIsApplied(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	var wrapped int
	wrap := func(base http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			wrapped++
			return base.RoundTrip(r)
		})
	}
	local := sender.New(sender.Config{Timeout: 30 * time.Second, AllowLocal: true, Wrap: wrap})
	req := request(t, secretNew)
	req.URL = srv.URL + "/hook"
	if res := local.Send(context.Background(), req); !res.Delivered() || wrapped != 1 {
		t.Fatalf("local send: %+v, wrapped %d", res, wrapped)
	}
	guarded := sender.New(sender.Config{Timeout: 2 * time.Second, Wrap: wrap})
	req.URL = "https://127.0.0.1:443/hook" // refused before or at dial, whatever the wrapper does
	if res := guarded.Send(context.Background(), req); res.Delivered() {
		t.Fatalf("loopback target delivered through the guarded sender: %+v", res)
	}
}

const secretNew = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD1bXJ1ISLHbw="

// request is a signed attempt to https://example.com/hook.
func request(t *testing.T, secrets ...string) webhooks.Request {
	t.Helper()
	body := []byte(`{"live":false,"notificationItems":[{"NotificationRequestItem":{"eventCode":"AUTHORISATION","success":"true"}}]}`)
	ts := time.Now().Truncate(time.Second)
	sig, err := webhooks.Sign(secrets, "msg_2kwfyyq3p5g7wejmvv6zmr3mve", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	return webhooks.Request{URL: "https://example.com/hook", ID: "msg_2kwfyyq3p5g7wejmvv6zmr3mve", Attempt: 2, Timestamp: ts, Signature: sig, Body: body}
}
