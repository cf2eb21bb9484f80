package sender_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/tracing"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// udpDaemon is a fake X-Ray daemon collecting the documents sent to it.
type udpDaemon struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	docs    []string
	changed chan struct{} // closed (and replaced) when a document arrives
}

func newUDPDaemon(t *testing.T) *udpDaemon {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	d := &udpDaemon{conn: conn, changed: make(chan struct{})}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			d.mu.Lock()
			d.docs = append(d.docs, string(bytes.Clone(buf[:n])))
			close(d.changed)
			d.changed = make(chan struct{})
			d.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return d
}

// waitFor returns the first document containing s, waiting for the
// documents that arrive; it fails after timeout (a failure bound only).
func (d *udpDaemon) waitFor(t *testing.T, s string, timeout time.Duration) string {
	t.Helper()
	bound := time.NewTimer(timeout)
	defer bound.Stop()
	for {
		d.mu.Lock()
		for _, doc := range d.docs {
			if strings.Contains(doc, s) {
				d.mu.Unlock()
				return doc
			}
		}
		changed := d.changed
		d.mu.Unlock()
		select {
		case <-changed:
		case <-bound.C:
			t.Fatalf("no X-Ray document containing %q was sent", s)
		}
	}
}

// TestDeliveriesCarryNoInternalTraceHeaders sends a delivery inside a traced
// request with the real X-Ray tracer: the receiver sees the webhook headers
// but no trace header, and the call is still recorded as a subsegment.
func TestDeliveriesCarryNoInternalTraceHeaders(t *testing.T) {
	daemon := newUDPDaemon(t)
	tr, err := tracing.New(func(k string) string {
		return map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "paysvc-test-dispatcher", "AWS_XRAY_DAEMON_ADDRESS": daemon.conn.LocalAddr().String()}[k]
	}, nil)
	if err != nil || !tr.Enabled() {
		t.Fatalf("tracer: enabled %v, err %v", tr.Enabled(), err)
	}

	var mu sync.Mutex
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	// What a tracer in another language or a later SDK might add too.
	extra := func(base http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
			r.Header.Set("X-B3-TraceId", "463ac35c9f6413ad")
			return base.RoundTrip(r)
		})
	}
	s := sender.New(sender.Config{Timeout: 30 * time.Second, AllowLocal: true,
		Wrap: func(base http.RoundTripper) http.RoundTripper { return tr.Transport(extra(base)) }})

	const root = "1-6740a1b2-00000000000000000000abcd"
	lambdaCtx := context.WithValue(context.Background(), "x-amzn-trace-id", "Root="+root+";Parent=53995c3f42cd8ad8;Sampled=1")
	ctx, end := tr.StartRequest(lambdaCtx, "dispatcher")
	req := request(t, secretNew)
	req.URL = srv.URL + "/hooks/trace-check"
	res := s.Send(ctx, req)
	end(httpapi.RequestTrace{Status: 200})
	if !res.Delivered() {
		t.Fatalf("delivery failed: %+v", res)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, h := range sender.InternalHeaders {
		if v := got.Get(h); v != "" {
			t.Errorf("the merchant received internal header %s: %q", h, v)
		}
	}
	for _, h := range []string{webhooks.HeaderID, webhooks.HeaderSignature, webhooks.HeaderTimestamp, "Content-Type"} {
		if got.Get(h) == "" {
			t.Errorf("webhook header %s missing (all: %v)", h, got)
		}
	}
	// The call is still traced: the request's segment document holds a
	// remote subsegment for the receiver, in the same trace.
	doc := daemon.waitFor(t, strings.TrimPrefix(srv.URL, "http://"), 30*time.Second)
	if !strings.Contains(doc, root) || !strings.Contains(doc, `"namespace":"remote"`) {
		t.Errorf("no remote subsegment of trace %s for the delivery: %s", root, doc)
	}
}

// TestStripDoesNotTouchTheCallersRequest: headers are removed from a copy.
func TestStripDoesNotTouchTheCallersRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amzn-Trace-Id") != "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	var seen *http.Request
	wrap := func(base http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r.Header.Set("X-Amzn-Trace-Id", "Root=1-00000000-000000000000000000000001")
			seen = r
			return base.RoundTrip(r)
		})
	}
	s := sender.New(sender.Config{Timeout: 30 * time.Second, AllowLocal: true, Wrap: wrap})
	req := request(t, secretNew)
	req.URL = srv.URL + "/hook"
	if res := s.Send(context.Background(), req); !res.Delivered() {
		t.Fatalf("send: %+v (400: the trace header reached the receiver)", res)
	}
	if seen == nil || seen.Header.Get("X-Amzn-Trace-Id") == "" {
		t.Error("the wrapper's request lost its header: the strip modified the caller's request")
	}
}
