package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/upstream"
)

// receiver is a notification endpoint answering from a script.
type receiver struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter) // one per attempt; the last repeats
	bodies  []string
	auth    []string
	calls   atomic.Int32
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	n := int(rc.calls.Add(1))
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, string(b))
	u, p, _ := r.BasicAuth()
	rc.auth = append(rc.auth, u+":"+p+"|"+r.Header.Get("Content-Type"))
	answer := rc.answers[min(n, len(rc.answers))-1]
	rc.mu.Unlock()
	answer(w)
}

func accepted(w http.ResponseWriter) { io.WriteString(w, "[accepted]") }

func status(code int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { w.WriteHeader(code); io.WriteString(w, body) }
}

func TestHTTPNotifier(t *testing.T) {
	tests := []struct {
		name     string
		answers  []func(http.ResponseWriter)
		backoff  []time.Duration
		wantErr  bool
		wantHits int32
	}{
		{"accepted", []func(http.ResponseWriter){accepted}, nil, false, 1},
		{"accepted with whitespace", []func(http.ResponseWriter){status(200, " [accepted]\n")}, nil, false, 1},
		{"500 then accepted", []func(http.ResponseWriter){status(500, "oops"), accepted}, []time.Duration{time.Millisecond}, false, 2},
		{"2xx without [accepted] retried", []func(http.ResponseWriter){status(200, "ok"), status(204, ""), accepted}, []time.Duration{time.Millisecond, time.Millisecond}, false, 3},
		{"redirect is a failure", []func(http.ResponseWriter){status(302, "")}, []time.Duration{}, true, 1},
		{"exhausted", []func(http.ResponseWriter){status(503, "")}, []time.Duration{time.Millisecond, 2 * time.Millisecond}, true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &receiver{answers: tt.answers}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			n, err := NewHTTPNotifier(HTTPNotifierConfig{URL: srv.URL + "/notify", Username: "sim", Password: "s3cret", Backoff: tt.backoff})
			must(t, err)
			err = n.Notify(context.Background(), []byte(`{"live":"false","notificationItems":[]}`))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error leaks the password: %v", err)
			}
			if got := rc.calls.Load(); got != tt.wantHits {
				t.Fatalf("attempts = %d, want %d", got, tt.wantHits)
			}
			if rc.auth[0] != "sim:s3cret|application/json" || rc.bodies[0] != `{"live":"false","notificationItems":[]}` {
				t.Fatalf("request: %v %v", rc.auth, rc.bodies)
			}
		})
	}
}

func TestHTTPNotifierConfig(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "/relative", "http://"} {
		if _, err := NewHTTPNotifier(HTTPNotifierConfig{URL: u}); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	if len(DefaultBackoff()) == 0 || DefaultBackoff()[0] != 2*time.Minute {
		t.Fatal("default backoff")
	}
}

func TestHTTPNotifierStopsOnCancel(t *testing.T) {
	rc := &receiver{answers: []func(http.ResponseWriter){status(500, "")}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	// The caller gives up while the notifier waits before its retry (it
	// logs that it will retry, then waits an hour).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, _ := NewHTTPNotifier(HTTPNotifierConfig{URL: srv.URL, Backoff: []time.Duration{time.Hour},
		Logger: slog.New(onMessage{"upstream-sim notification not accepted, will retry", cancel})})
	if err := n.Notify(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if rc.calls.Load() != 1 {
		t.Fatalf("attempts = %d", rc.calls.Load())
	}
}

// onMessage is a slog handler calling f at each record with message msg.
type onMessage struct {
	msg string
	f   func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.f()
	}
	return nil
}
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onMessage) WithGroup(string) slog.Handler      { return h }

func TestHTTPNotifierCredentialsInURLNotLeaked(t *testing.T) {
	n, err := NewHTTPNotifier(HTTPNotifierConfig{URL: "http://user:pa55word@127.0.0.1:1/x", Backoff: []time.Duration{}, Timeout: time.Second})
	must(t, err)
	err = n.Notify(context.Background(), []byte(`{}`))
	if err == nil || strings.Contains(err.Error(), "pa55word") {
		t.Fatalf("err = %v", err)
	}
}

// End to end: the simulator posts signed notifications to an HTTP receiver
// that verifies them the way the service does.
func TestSimulatorWithHTTPNotifier(t *testing.T) {
	var mu sync.Mutex
	var got []upstream.NotificationRequestItem
	first := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ws" || p != "pw" {
			w.WriteHeader(401)
			return
		}
		var n upstream.Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil || len(n.NotificationItems) != 1 {
			w.WriteHeader(400)
			return
		}
		it := n.NotificationItems[0].Item
		if !upstream.VerifyItem(testHMACKey, it) {
			w.WriteHeader(401)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if first { // the receiver fails once: the notifier retries
			first = false
			w.WriteHeader(503)
			return
		}
		got = append(got, it)
		io.WriteString(w, "[accepted]")
	}))
	defer srv.Close()
	hn, err := NewHTTPNotifier(HTTPNotifierConfig{URL: srv.URL, Username: "ws", Password: "pw", Backoff: []time.Duration{time.Millisecond}})
	must(t, err)
	e := newEnv(t, func(o *Options) { o.Notifier = hn })
	r := e.pay(t, 1000, "")
	must(t, e.reverse(r.PSPReference))
	e.flush(t)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].EventCode != "AUTHORISATION" || got[1].EventCode != "CANCEL_OR_REFUND" || got[1].AdditionalData["modification.action"] != "cancel" {
		t.Fatalf("received = %+v", got)
	}
	if st := e.sim.NotificationStats(); st.Sent != 2 || st.Failed != 0 {
		t.Fatalf("stats = %+v", st)
	}
}
