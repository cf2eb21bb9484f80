package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/tracing"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

var _ httpapi.Tracer = (*tracing.Tracer)(nil)

// waitTimeout bounds the waits for a segment: only a failure takes it.
const waitTimeout = 30 * time.Second

// lambdaCtx is the context aws-lambda-go gives a handler: the invocation's
// trace header under the string key "x-amzn-trace-id".
func lambdaCtx(header string) context.Context {
	return context.WithValue(context.Background(), "x-amzn-trace-id", header)
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDisabledOutsideLambda(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	for name, e := range map[string]map[string]string{
		"local":            {},
		"lambda no daemon": {"AWS_LAMBDA_FUNCTION_NAME": "fn"},
		"sdk disabled":     {"AWS_LAMBDA_FUNCTION_NAME": "fn", "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000", "AWS_XRAY_SDK_DISABLED": "TRUE"},
	} {
		tr, err := tracing.New(env(e), log)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tr.Enabled() {
			t.Errorf("%s: enabled", name)
		}
		base := http.DefaultTransport
		if tr.Transport(base) != base {
			t.Errorf("%s: Transport wrapped", name)
		}
		c := &http.Client{Timeout: time.Second}
		if tr.HTTPClient(c) != c {
			t.Errorf("%s: HTTPClient copied", name)
		}
		var cfg aws.Config
		tr.InstrumentAWS(&cfg)
		if len(cfg.APIOptions) != 0 {
			t.Errorf("%s: AWS config instrumented", name)
		}
		ctx := lambdaCtx("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
		got, end := tr.StartRequest(ctx, "config")
		if got != ctx {
			t.Errorf("%s: StartRequest changed the context", name)
		}
		end(httpapi.RequestTrace{Status: 200})
		// The trace id still reaches the logs.
		if id := tr.TraceID(ctx); id != "1-5759e988-bd862e3fe1be46a994272793" {
			t.Errorf("%s: TraceID = %q", name, id)
		}
	}
	var nilTracer *tracing.Tracer
	if nilTracer.Enabled() || nilTracer.TraceID(context.Background()) != "" {
		t.Error("nil Tracer")
	}
	_, span := nilTracer.Start(context.Background(), "x")
	span.Annotate("k", "v")
	span.End(nil)
	if logs.Len() != 0 {
		t.Errorf("a disabled tracer logged: %s", logs.String())
	}
}

func TestBadDaemonAddress(t *testing.T) {
	_, err := tracing.New(env(map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "fn", "AWS_XRAY_DAEMON_ADDRESS": "nonsense"}), nil)
	if err == nil {
		t.Fatal("want an error")
	}
}

func TestRootOf(t *testing.T) {
	for h, want := range map[string]string{
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1": "1-5759e988-bd862e3fe1be46a994272793",
		"Parent=53995c3f42cd8ad8; Root=1-a-b":                                        "1-a-b",
		"":                                                                           "",
		"Sampled=0":                                                                  "",
	} {
		if got := tracing.RootOf(h); got != want {
			t.Errorf("RootOf(%q) = %q, want %q", h, got, want)
		}
	}
}

// segment is the part of an X-Ray segment document the tests read.
type segment struct {
	Name        string            `json:"name"`
	ID          string            `json:"id"`
	TraceID     string            `json:"trace_id"`
	ParentID    string            `json:"parent_id"`
	Type        string            `json:"type"`
	Namespace   string            `json:"namespace"`
	Fault       bool              `json:"fault"`
	Error       bool              `json:"error"`
	InProgress  bool              `json:"in_progress"`
	Annotations map[string]any    `json:"annotations"`
	AWS         map[string]any    `json:"aws"`
	HTTP        *segmentHTTP      `json:"http"`
	Subsegments []json.RawMessage `json:"subsegments"`
}

type segmentHTTP struct {
	Request struct {
		Method string `json:"method"`
		URL    string `json:"url"`
	} `json:"request"`
	Response struct {
		Status int `json:"status"`
	} `json:"response"`
}

// Daemon is a fake X-Ray daemon: a UDP listener collecting segment documents.
type Daemon struct {
	conn *net.UDPConn
	docs chan []byte
}

// NewDaemon listens on 127.0.0.1 and a free UDP port until the test ends.
func NewDaemon(t *testing.T) *Daemon {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{conn: conn, docs: make(chan []byte, 1000)}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(d.docs)
				return
			}
			d.docs <- bytes.Clone(buf[:n])
		}
	}()
	t.Cleanup(func() { _ = conn.Close() })
	return d
}

// Addr is the AWS_XRAY_DAEMON_ADDRESS value.
func (d *Daemon) Addr() string { return d.conn.LocalAddr().String() }

// traced is a tracer of Lambda function fn sending to a new Daemon.
func traced(t *testing.T, fn string, log *slog.Logger) (*tracing.Tracer, *Daemon) {
	t.Helper()
	daemon := NewDaemon(t)
	tr, err := tracing.New(env(map[string]string{"AWS_LAMBDA_FUNCTION_NAME": fn, "AWS_XRAY_DAEMON_ADDRESS": daemon.Addr()}), log)
	if err != nil {
		t.Fatal(err)
	}
	return tr, daemon
}

// Next waits for the next segment document (the daemon protocol prefixes
// each with a JSON header line).
func (d *Daemon) Next(t *testing.T) segment {
	t.Helper()
	select {
	case p, ok := <-d.docs:
		if !ok {
			t.Fatal("daemon closed")
		}
		header, body, found := bytes.Cut(p, []byte("\n"))
		if !found || !strings.Contains(string(header), `"format": "json"`) {
			t.Fatalf("packet without the daemon header: %q", p)
		}
		var s segment
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatalf("segment: %v: %s", err, body)
		}
		return s
	case <-time.After(waitTimeout):
		t.Fatal("no segment sent to the daemon")
	}
	return segment{}
}

// flatten returns s and all nested subsegments.
func flatten(t *testing.T, s segment) []segment {
	t.Helper()
	out := []segment{s}
	for _, raw := range s.Subsegments {
		var c segment
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		out = append(out, flatten(t, c)...)
	}
	return out
}

func TestRequestSubsegmentsAreSentToTheDaemon(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr, daemon := traced(t, "paysvc-test-PaymentsFunction", log)
	if !tr.Enabled() {
		t.Fatal("not enabled in Lambda with a daemon address")
	}

	// A DynamoDB client on moto, instrumented.
	cfg := aws.Config{
		Region:       moto.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(moto.Endpoint(t)),
	}
	tr.InstrumentAWS(&cfg)
	ddb := dynamodb.NewFromConfig(cfg)

	// The "upstream", which must receive the trace header.
	var gotHeader string
	upstreamSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header.Get("X-Amzn-Trace-Id")
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"resultCode":"Authorised"}`)
	}))
	defer upstreamSrv.Close()
	upstreamClient := tr.HTTPClient(&http.Client{Timeout: 5 * time.Second})

	const root, parent = "1-6740a1b2-0123456789abcdef01234567", "53995c3f42cd8ad8"
	ctx, end := tr.StartRequest(lambdaCtx("Root="+root+";Parent="+parent+";Sampled=1"), "payments")
	if got := tr.TraceID(ctx); got != root {
		t.Errorf("TraceID in the request = %q, want %q", got, root)
	}
	if _, err := ddb.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	resp, err := upstreamClient.Post(upstreamSrv.URL+"/v71/payments", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	resp, err = upstreamClient.Do(mustRequest(t, ctx, upstreamSrv.URL+"/v71/payments"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	end(httpapi.RequestTrace{Status: 200, Annotations: map[string]string{
		"siteId": "site_demo", "merchant": "m_demo", "pspReference": "QFQTPCQ8HXSKGK82", "resultCode": "Authorised",
	}})

	if !strings.HasPrefix(gotHeader, "Root="+root+";Parent=") || !strings.Contains(gotHeader, "Sampled=1") {
		t.Errorf("upstream got trace header %q", gotHeader)
	}

	seg := daemon.Next(t)
	if seg.Name != "payments" || seg.Type != "subsegment" || seg.TraceID != root || seg.ParentID != parent || seg.InProgress {
		t.Errorf("request subsegment: name %q type %q trace %q parent %q in progress %v",
			seg.Name, seg.Type, seg.TraceID, seg.ParentID, seg.InProgress)
	}
	for k, v := range map[string]any{
		"route": "payments", "status": float64(200), "siteId": "site_demo", "merchant": "m_demo",
		"pspReference": "QFQTPCQ8HXSKGK82", "resultCode": "Authorised",
	} {
		if seg.Annotations[k] != v {
			t.Errorf("annotation %s = %v, want %v (all: %v)", k, seg.Annotations[k], v, seg.Annotations)
		}
	}
	if _, ok := seg.Annotations["errorCode"]; ok {
		t.Error("empty errorCode annotated")
	}

	var dynamoSeen, upstreamSeen int
	for _, s := range flatten(t, seg)[1:] {
		switch {
		case s.Name == "DynamoDB" && s.Namespace == "aws":
			dynamoSeen++
			if s.AWS["operation"] != "ListTables" || s.AWS["request_id"] == nil {
				t.Errorf("DynamoDB subsegment aws = %v", s.AWS)
			}
		case s.Namespace == "remote" && s.HTTP != nil:
			upstreamSeen++
			if s.Name != strings.TrimPrefix(upstreamSrv.URL, "http://") || s.HTTP.Request.Method != http.MethodPost ||
				s.HTTP.Response.Status != 200 || !strings.HasSuffix(s.HTTP.Request.URL, "/v71/payments") {
				t.Errorf("upstream subsegment %q: %+v", s.Name, s.HTTP)
			}
		}
	}
	// The first upstream call had no trace in its context (plain Post): not traced.
	if dynamoSeen != 1 || upstreamSeen != 1 {
		t.Errorf("subsegments: %d DynamoDB, %d upstream; want 1 and 1", dynamoSeen, upstreamSeen)
	}
	if strings.Contains(logs.String(), `"level":"WARN"`) || strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("SDK warnings: %s", logs.String())
	}
}

func mustRequest(t *testing.T, ctx context.Context, url string) *http.Request {
	t.Helper()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	return r
}

func TestServerErrorIsAFault(t *testing.T) {
	tr, daemon := traced(t, "fn", nil)
	_, end := tr.StartRequest(lambdaCtx("Root=1-6740a1b2-00000000000000000000000a;Parent=53995c3f42cd8ad8;Sampled=1"), "captures")
	end(httpapi.RequestTrace{Status: 502, Annotations: map[string]string{"errorCode": "yp_9002"}, Err: errors.New("upstream down")})
	seg := daemon.Next(t)
	if !seg.Fault || seg.Annotations["errorCode"] != "yp_9002" || seg.HTTP == nil || seg.HTTP.Response.Status != 502 {
		t.Errorf("segment: fault %v annotations %v http %+v", seg.Fault, seg.Annotations, seg.HTTP)
	}

	// Not sampled: nothing is sent. A sampled request after it is the
	// marker: its segment (sent when it ends, like any) is the next one the
	// daemon gets.
	_, end = tr.StartRequest(lambdaCtx("Root=1-6740a1b2-00000000000000000000000b;Parent=53995c3f42cd8ad8;Sampled=0"), "captures")
	end(httpapi.RequestTrace{Status: 200})
	_, end = tr.StartRequest(lambdaCtx("Root=1-6740a1b2-00000000000000000000000c;Parent=53995c3f42cd8ad8;Sampled=1"), "captures")
	end(httpapi.RequestTrace{Status: 200})
	if seg := daemon.Next(t); seg.TraceID != "1-6740a1b2-00000000000000000000000c" {
		t.Errorf("unsampled request sent %+v", seg)
	}
}

// hookOrder is a transport that reports net/http's trace hooks of a call in
// a given order (as a fast upstream can: the answer's first byte before the
// request is reported written) and answers 200 with its URL's query echoed.
type hookOrder struct {
	order []string
	sent  *http.Request
}

func (h *hookOrder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.sent = r
	if tr := httptrace.ContextClientTrace(r.Context()); tr != nil {
		for _, hook := range h.order {
			switch {
			case hook == "GetConn" && tr.GetConn != nil:
				tr.GetConn(r.URL.Host)
			case hook == "GotConn" && tr.GotConn != nil:
				tr.GotConn(httptrace.GotConnInfo{})
			case hook == "WroteRequest" && tr.WroteRequest != nil:
				tr.WroteRequest(httptrace.WroteRequestInfo{})
			case hook == "GotFirstResponseByte" && tr.GotFirstResponseByte != nil:
				tr.GotFirstResponseByte()
			}
		}
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

// TestRemoteCallClosesWhateverTheHookOrder: an upstream call's subsegment,
// and so the request's trace, is sent whatever order net/http reports the
// call's phases in. (The X-Ray SDK's own RoundTripper left a "response"
// subsegment open when the first response byte came before the request was
// reported written, and the trace was never sent.) The caller's request is
// not modified; the URL is recorded without query or credentials.
func TestRemoteCallClosesWhateverTheHookOrder(t *testing.T) {
	for _, order := range [][]string{
		{"GetConn", "GotConn", "WroteRequest", "GotFirstResponseByte"},
		{"GetConn", "GotConn", "GotFirstResponseByte", "WroteRequest"},
		{"GotFirstResponseByte"},
	} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			tr, daemon := traced(t, "fn", nil)
			base := &hookOrder{order: order}
			client := &http.Client{Transport: tr.Transport(base)}
			const root = "1-6740a1b2-0123456789abcdef01234568"
			ctx, end := tr.StartRequest(lambdaCtx("Root="+root+";Parent=53995c3f42cd8ad8;Sampled=1"), "payments")
			req := mustRequest(t, ctx, "https://user:secret@upstream.example/v71/payments?x=1")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			end(httpapi.RequestTrace{Status: 200})

			if req.Header.Get("X-Amzn-Trace-Id") != "" || base.sent.Header.Get("X-Amzn-Trace-Id") == "" {
				t.Errorf("trace header: caller's %q, sent %q", req.Header.Get("X-Amzn-Trace-Id"), base.sent.Header.Get("X-Amzn-Trace-Id"))
			}
			seg := daemon.Next(t)
			if seg.TraceID != root || seg.InProgress {
				t.Fatalf("request subsegment: trace %q in progress %v", seg.TraceID, seg.InProgress)
			}
			var remote int
			for _, s := range flatten(t, seg)[1:] {
				if s.InProgress {
					t.Errorf("subsegment %q still in progress", s.Name)
				}
				if s.Namespace == "remote" {
					remote++
					if s.Name != "upstream.example" || s.HTTP == nil ||
						s.HTTP.Request.URL != "https://upstream.example/v71/payments" || s.HTTP.Response.Status != 200 {
						t.Errorf("remote subsegment %q: %+v", s.Name, s.HTTP)
					}
				}
			}
			if remote != 1 {
				t.Errorf("%d remote subsegments, want 1", remote)
			}
		})
	}
}
