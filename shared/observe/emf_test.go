package observe_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/observe"
	"github.com/yp/paysvc/shared/webhooks"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// syncBuffer is a bytes.Buffer safe for the transport test's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// emfDoc is a decoded EMF line.
type emfDoc struct {
	raw  map[string]any
	meta struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	}
}

// docs parses every line of out as an EMF document and validates it
// against the specification's rules that matter here.
func docs(t *testing.T, out string) []emfDoc {
	t.Helper()
	var res []emfDoc
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var d emfDoc
		if err := json.Unmarshal(sc.Bytes(), &d.raw); err != nil {
			t.Fatalf("line is not one JSON object: %q: %v", sc.Text(), err)
		}
		meta, _ := json.Marshal(d.raw["_aws"])
		if err := json.Unmarshal(meta, &d.meta); err != nil {
			t.Fatal(err)
		}
		if len(d.meta.CloudWatchMetrics) == 0 {
			t.Fatalf("no CloudWatchMetrics: %s", sc.Text())
		}
		for _, dir := range d.meta.CloudWatchMetrics {
			if dir.Namespace != observe.Namespace {
				t.Errorf("namespace %q", dir.Namespace)
			}
			for _, set := range dir.Dimensions {
				for _, dim := range set {
					if _, ok := d.raw[dim].(string); !ok {
						t.Errorf("dimension %s has no string value in %s", dim, sc.Text())
					}
				}
			}
			for _, m := range dir.Metrics {
				if _, ok := d.raw[m.Name].(float64); !ok {
					t.Errorf("metric %s has no numeric value in %s", m.Name, sc.Text())
				}
			}
		}
		res = append(res, d)
	}
	return res
}

// value returns the value of metric name and the dimension sets it is
// reported under (nil when the document does not declare it).
func (d emfDoc) value(name string) (float64, [][]string) {
	var sets [][]string
	for _, dir := range d.meta.CloudWatchMetrics {
		for _, m := range dir.Metrics {
			if m.Name == name {
				sets = append(sets, dir.Dimensions...)
			}
		}
	}
	v, _ := d.raw[name].(float64)
	return v, sets
}

func hasSet(sets [][]string, want ...string) bool {
	for _, s := range sets {
		if reflect.DeepEqual(s, want) {
			return true
		}
	}
	return false
}

// emit runs f on fresh Metrics of function fn and returns the n documents
// it wrote.
func emit(t *testing.T, fn string, n int, f func(m *observe.Metrics), opts ...observe.Option) []emfDoc {
	t.Helper()
	var out bytes.Buffer
	f(observe.New(&out, fn, clock.NewFake(t0), opts...))
	ds := docs(t, out.String())
	if len(ds) != n {
		t.Fatalf("%d documents, want %d:\n%s", len(ds), n, out.String())
	}
	return ds
}

var _ httpapi.Metrics = (*observe.Metrics)(nil)

func TestRequestMetricsFollowTheTemplateContract(t *testing.T) {
	ds := emit(t, "paysvc-test-PaymentsFunction-abc", 3, func(m *observe.Metrics) {
		m.Request("payments", 200, "", 1500*time.Microsecond)
		m.Request("payments", 422, "yp_2001", 3*time.Millisecond)
		m.Request("captures", 502, "yp_9002", time.Second)
	})
	for _, d := range ds {
		if d.raw["Service"] != "paysvc" || d.raw["Function"] != "paysvc-test-PaymentsFunction-abc" {
			t.Errorf("Service/Function = %v/%v", d.raw["Service"], d.raw["Function"])
		}
		if d.meta.Timestamp != t0.UnixMilli() {
			t.Errorf("Timestamp = %d, want %d", d.meta.Timestamp, t0.UnixMilli())
		}
		for _, name := range []string{"Requests", "Latency", "ClientErrors", "ServerErrors"} {
			_, sets := d.value(name)
			if !hasSet(sets, "Service", "Function") || !hasSet(sets, "Service", "Function", "Route") {
				t.Errorf("%s dimension sets = %v", name, sets)
			}
		}
	}
	ok, client, server := ds[0], ds[1], ds[2]
	if v, _ := ok.value("Latency"); v != 1.5 {
		t.Errorf("Latency = %v ms, want 1.5", v)
	}
	if _, sets := ok.value("Errors"); sets != nil || ok.raw["ErrorCode"] != nil {
		t.Errorf("a success has no Errors metric / ErrorCode: %v", ok.raw)
	}
	if v, _ := client.value("ClientErrors"); v != 1 {
		t.Errorf("ClientErrors = %v", v)
	}
	if v, _ := client.value("ServerErrors"); v != 0 {
		t.Errorf("ServerErrors = %v", v)
	}
	v, sets := client.value("Errors")
	if v != 1 || !hasSet(sets, "Service", "Function", "ErrorCode") || !hasSet(sets, "Service", "Function", "Route", "ErrorCode") {
		t.Errorf("Errors = %v under %v", v, sets)
	}
	if client.raw["ErrorCode"] != "yp_2001" || client.raw["Route"] != "payments" || client.raw["status"] != float64(422) {
		t.Errorf("properties: %v", client.raw)
	}
	if v, _ := server.value("ServerErrors"); v != 1 {
		t.Errorf("ServerErrors = %v", v)
	}
}

// TestRequestMetricsPerVersion: with the function's version, every request
// metric is also reported under [Service Function Version] and Errors
// under [Service Function Version ErrorCode]: what a deployment's rollback
// alarms read (template.yaml, <fn>-version-5xx and notifications-401-rate).
// Without it, no Version dimension at all.
func TestRequestMetricsPerVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []observe.Option
		version any // the document's Version property
	}{
		{"published version", []observe.Option{observe.WithVersion("7")}, "7"},
		{"no version", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := emit(t, "fn", 2, func(m *observe.Metrics) {
				m.Request("payments", 200, "", time.Millisecond)
				m.Request("payments", 502, "yp_4006", time.Millisecond)
			}, tc.opts...)
			versioned := tc.version != nil
			for i, d := range ds {
				if d.raw["Version"] != tc.version {
					t.Errorf("document %d: Version = %v, want %v", i, d.raw["Version"], tc.version)
				}
				for _, name := range []string{"Requests", "Latency", "ClientErrors", "ServerErrors"} {
					if _, sets := d.value(name); hasSet(sets, "Service", "Function", "Version") != versioned ||
						!hasSet(sets, "Service", "Function") || !hasSet(sets, "Service", "Function", "Route") {
						t.Errorf("document %d: %s dimension sets %v", i, name, sets)
					}
				}
			}
			if v, sets := ds[1].value("ServerErrors"); v != 1 || hasSet(sets, "Service", "Function", "Version") != versioned {
				t.Errorf("ServerErrors = %v under %v", v, sets)
			}
			if _, sets := ds[1].value("Errors"); hasSet(sets, "Service", "Function", "Version", "ErrorCode") != versioned ||
				!hasSet(sets, "Service", "Function", "ErrorCode") {
				t.Errorf("Errors dimension sets %v", sets)
			}
		})
	}
}

// TestNotificationUnroutableAndSecretAge: the operations metrics, each
// under the template's dimension set.
func TestNotificationUnroutableAndSecretAge(t *testing.T) {
	ds := emit(t, "fn", 4, func(m *observe.Metrics) {
		m.NotificationUnroutable("no merchant for upstream account ShopECOM")
		m.UpstreamSecretAge(36 * time.Hour)
		m.NotificationLiveMismatch()
		m.NotificationAccountLevel("REPORT_AVAILABLE")
	}, observe.WithVersion("3"))
	for _, c := range []struct {
		doc    emfDoc
		metric string
		want   float64
	}{
		{ds[0], "NotificationsUnroutable", 1},
		{ds[1], "UpstreamSecretAgeDays", 1.5},
		{ds[2], "NotificationsLiveMismatch", 1},
		{ds[3], "NotificationsAccountLevel", 1},
	} {
		if v, sets := c.doc.value(c.metric); v != c.want || len(sets) != 1 || !hasSet(sets, "Service", "Function") {
			t.Errorf("%s = %v under %v, want %v under [Service Function] only", c.metric, v, sets, c.want)
		}
	}
	if ds[3].raw["eventCode"] != "REPORT_AVAILABLE" {
		t.Errorf("eventCode property: %v", ds[3].raw)
	}
	if ds[0].raw["reason"] != "no merchant for upstream account ShopECOM" {
		t.Errorf("reason property: %v", ds[0].raw)
	}
}

// TestStoredFormatUnknown: counted under the template's dimension set and
// under Service alone, which the template's alarm reads.
func TestStoredFormatUnknown(t *testing.T) {
	ds := emit(t, "fn", 1, (*observe.Metrics).StoredFormatUnknown)
	if v, sets := ds[0].value(observe.MetricFormatUnknown); v != 1 || len(sets) != 2 || !hasSet(sets, "Service", "Function") || !hasSet(sets, "Service") {
		t.Errorf("%s = %v under %v, want 1 under [Service Function] and [Service]", observe.MetricFormatUnknown, v, sets)
	}
}

func TestUpstreamTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/captures"):
			w.WriteHeader(http.StatusInternalServerError)
		case strings.HasSuffix(r.URL.Path, "/sessions"):
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	_ = dead.Close()

	var out syncBuffer
	m := observe.New(&out, "fn", clock.NewFake(t0))
	client := &http.Client{Transport: m.UpstreamTransport(http.DefaultTransport.(*http.Transport).Clone())}
	call := func(url string) {
		resp, err := client.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	call(srv.URL + "/v71/payments")
	call(srv.URL + "/v71/payments/QFQTPCQ8HXSKGK82/captures")
	call(srv.URL + "/checkout/v71/sessions")
	call(deadURL + "/v71/paymentMethods")

	type rec struct {
		op     string
		status float64
		failed float64
	}
	var got []rec
	for _, d := range docs(t, out.String()) {
		failed, sets := d.value("UpstreamErrors")
		if !hasSet(sets, "Service", "Function") || !hasSet(sets, "Service", "Function", "Operation") {
			t.Errorf("UpstreamErrors dimension sets %v", sets)
		}
		if n, _ := d.value("UpstreamRequests"); n != 1 {
			t.Errorf("UpstreamRequests = %v", n)
		}
		if _, sets := d.value("UpstreamLatency"); sets == nil {
			t.Error("no UpstreamLatency")
		}
		op, _ := d.raw["Operation"].(string)
		status, _ := d.raw["status"].(float64)
		got = append(got, rec{op, status, failed})
	}
	want := []rec{
		{"POST /payments", 200, 0},
		{"POST /payments/{id}/captures", 500, 1},
		{"POST /sessions", 422, 0},
		{"POST /paymentMethods", 0, 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("upstream records\n got %v\nwant %v", got, want)
	}
}

func TestOperation(t *testing.T) {
	for path, want := range map[string]string{
		"/v71/payments/details":                         "POST /payments/details",
		"/v71/payments/ABCDEF1234567890/amountUpdates":  "POST /payments/{id}/amountUpdates",
		"/checkout/v71/storedPaymentMethods/M5N7TQ4TG5": "POST /storedPaymentMethods/{id}",
		"/payments": "POST /payments",
	} {
		if got := observe.Operation("POST", path); got != want {
			t.Errorf("Operation(%s) = %s, want %s", path, got, want)
		}
	}
}

func TestWebhookDelivery(t *testing.T) {
	ds := emit(t, "paysvc-test-WebhookDispatcherFunction-x", 2, func(m *observe.Metrics) {
		m.WebhookDelivery(webhooks.Attempt{MerchantID: "m_demo", SubscriptionID: "sub_1", DeliveryID: "dlv_1",
			EventCode: "AUTHORISATION", Attempt: 1, StatusCode: 200, Success: true, Latency: 20 * time.Millisecond})
		m.WebhookDelivery(webhooks.Attempt{MerchantID: "m_demo", Attempt: 10, StatusCode: 503, Exhausted: true, Latency: time.Second})
	})
	check := func(d emfDoc, name string, want float64) {
		t.Helper()
		v, sets := d.value(name)
		if v != want || !hasSet(sets, "Service", "Function") {
			t.Errorf("%s = %v under %v, want %v under [Service Function]", name, v, sets, want)
		}
	}
	check(ds[0], "WebhookDeliveries", 1)
	check(ds[0], "WebhookFailures", 0)
	check(ds[0], "WebhookLatency", 20)
	check(ds[0], "WebhookAttempt", 1)
	check(ds[0], "WebhookExhausted", 0)
	check(ds[1], "WebhookDeliveries", 1)
	check(ds[1], "WebhookFailures", 1)
	check(ds[1], "WebhookAttempt", 10)
	check(ds[1], "WebhookExhausted", 1)
	if ds[0].raw["merchant"] != "m_demo" || ds[0].raw["eventCode"] != "AUTHORISATION" || ds[0].raw["deliveryId"] != "dlv_1" {
		t.Errorf("properties: %v", ds[0].raw)
	}
}

func TestColdStart(t *testing.T) {
	ds := emit(t, "fn", 1, func(m *observe.Metrics) { m.ColdStart(250 * time.Millisecond) })
	if v, _ := ds[0].value("InitDuration"); v != 250 {
		t.Errorf("InitDuration = %v", v)
	}
	if v, _ := ds[0].value("ColdStarts"); v != 1 {
		t.Errorf("ColdStarts = %v", v)
	}
}

// TestRecordUpdateLost: a lost record write, counted under the
// template's dimension set with its kind.
func TestRecordUpdateLost(t *testing.T) {
	ds := emit(t, "fn", 1, func(m *observe.Metrics) { m.RecordUpdateLost("refund") })
	if l, sets := ds[0].value("RecordUpdatesLost"); l != 1 || ds[0].raw["update"] != "refund" || !hasSet(sets, "Service", "Function") {
		t.Errorf("lost %v update %v sets %v; want 1 refund", l, ds[0].raw["update"], sets)
	}
}

func TestNilMetricsIsANoOp(t *testing.T) {
	var m *observe.Metrics
	m.RecordUpdateLost("capture")
	m.Request("config", 200, "", time.Millisecond)
	m.Upstream("POST /payments", 200, false, time.Millisecond)
	m.WebhookDelivery(webhooks.Attempt{Attempt: 1})
	m.ColdStart(time.Millisecond)
	m.NotificationUnroutable("x")
	m.NotificationLiveMismatch()
	m.NotificationAccountLevel("REPORT_AVAILABLE")
	m.UpstreamSecretAge(time.Hour)
	m.StoredFormatUnknown()
	base := http.DefaultTransport
	if m.UpstreamTransport(base) != base {
		t.Error("nil Metrics must return the base transport")
	}
}

// Concurrent writers never interleave documents.
func TestConcurrentWritesStayLines(t *testing.T) {
	var out syncBuffer
	m := observe.New(&out, "fn", clock.System{})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				m.Request("payments", 200+i, "", time.Millisecond)
			}
		}()
	}
	wg.Wait()
	ds := docs(t, out.String())
	if len(ds) != 1000 {
		t.Fatalf("%d documents, want 1000", len(ds))
	}
	statuses := map[float64]int{}
	for _, d := range ds {
		statuses[d.raw["status"].(float64)]++
	}
	keys := make([]float64, 0, len(statuses))
	for k := range statuses {
		keys = append(keys, k)
	}
	sort.Float64s(keys)
	if len(keys) != 20 || statuses[keys[0]] != 50 {
		t.Errorf("statuses %v", statuses)
	}
}

// errWriter fails every write: metrics must never break the caller.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestWriteErrorsAreIgnored(t *testing.T) {
	observe.New(errWriter{}, "fn", nil).Request("config", 200, "", 0)
}

// BenchmarkRequest is the EMF document of one API request (in Lambda it is
// on every request's path, after the answer is written): with the Version
// dimension sets, as deployed.
func BenchmarkRequest(b *testing.B) {
	m := observe.New(io.Discard, "paysvc-live-PaymentsFunction-AbCdEf123456", clock.System{}, observe.WithVersion("42"))
	b.ReportAllocs()
	for b.Loop() {
		m.Request("payments", 200, "", 1500*time.Microsecond)
	}
}
