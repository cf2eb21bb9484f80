package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/openapicheck"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
)

// The upstream's published test vector (docs/webhooks.md).
const (
	vectorKey = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00"
	vectorSig = "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="
	otherKey  = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
)

type countingQueue struct {
	mu sync.Mutex
	n  int
}

func (q *countingQueue) Enqueue(context.Context, queue.Job, time.Duration) error {
	q.mu.Lock()
	q.n++
	q.mu.Unlock()
	return nil
}

// failingEvents is an event store that is down.
type failingEvents struct{ notifications.EventStore }

func (failingEvents) SaveEvent(context.Context, notifications.Event, int64) error {
	return errors.New("table unavailable")
}

type notifyEnv struct {
	t    *testing.T
	st   *embedded.Store
	q    *countingQueue
	recv *connector.Inbox
	h    http.Handler
	logs *bytes.Buffer
}

func newNotifyEnv(t *testing.T, key string, auth httpapi.BasicAuth) *notifyEnv {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	st, err := embedded.Open(filepath.Join(t.TempDir(), "paysvc.db"), embedded.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	signer, err := upstream.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(&syncBuffer{b: logs}, nil))
	q := &countingQueue{}
	recv := &connector.Inbox{Signer: signer, Log: log, Receiver: &notifications.Receiver{Events: st, Payments: st, Tenants: st, Deliveries: st, Queue: q, Clock: clk, Log: log}}
	d := &httpapi.Deps{Log: log, Clock: clk}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	ctx := context.Background()
	if err := st.PutMerchant(ctx, tenant.Merchant{ID: "m_a", Country: "NL", Active: true, UpstreamAccount: "AlphaECOM"}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSubscription(ctx, tenant.Subscription{ID: "sub_1", MerchantID: "m_a", URL: "https://a.example/", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	return &notifyEnv{t: t, st: st, q: q, recv: recv, h: contractCheckedNotifications(t, httpapi.Notifications(d, recv, auth, next)), logs: logs}
}

// contractCheckedNotifications validates every exchange with the
// notifications endpoint against docs/openapi.yaml (the other paths reach
// the test's stand-in API, which is not the service's).
func contractCheckedNotifications(t *testing.T, h http.Handler) http.Handler {
	c, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	checked := c.Handler(t, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == httpapi.NotificationsPath {
			checked.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (e *notifyEnv) post(body any, user, pass string) *httptest.ResponseRecorder {
	e.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, httpapi.NotificationsPath, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return w
}

func (e *notifyEnv) stored(it upstream.NotificationRequestItem) bool {
	_, err := e.st.GetEvent(context.Background(), notifications.EventID(notifications.DedupKey(connector.Notification(it))))
	if err != nil && !errors.Is(err, storeerr.ErrNotFound) {
		e.t.Fatal(err)
	}
	return err == nil
}

func wrap(items ...upstream.NotificationRequestItem) upstream.Notification {
	n := upstream.Notification{Live: "false"}
	for _, it := range items {
		n.NotificationItems = append(n.NotificationItems, upstream.NotificationItem{Item: it})
	}
	return n
}

func signedItem(t *testing.T, key string, it upstream.NotificationRequestItem) upstream.NotificationRequestItem {
	t.Helper()
	sig, err := upstream.SignItem(key, it)
	if err != nil {
		t.Fatal(err)
	}
	it.AdditionalData = map[string]string{"hmacSignature": sig, "metadata.merchantId": "m_a", "metadata.siteId": "site_a", "metadata.paymentSource": "advanced"}
	return it
}

func authItem(psp, ref string) upstream.NotificationRequestItem {
	return upstream.NotificationRequestItem{EventCode: "AUTHORISATION", PSPReference: psp, Success: "true",
		MerchantAccountCode: "AlphaECOM", MerchantReference: ref, Amount: money.Amount{Value: 1000, Currency: "EUR"}}
}

func wantAccepted(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code != http.StatusOK || w.Body.String() != "[accepted]" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("got %d %q (%s), want 200 [accepted] text/plain", w.Code, w.Body, w.Header().Get("Content-Type"))
	}
}

func wantUnauthorized(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "yp_1001") {
		t.Fatalf("got %d %s, want 401 yp_1001", w.Code, w.Body)
	}
}

// TestNotificationHMACVectors: the endpoint accepts exactly the upstream's
// signatures: the published vector, a valid item, fields holding ':' and
// '\' (signed unescaped, as the upstream signs items); it refuses a
// tampered field, an escaped-form signature, a wrong key and a missing
// signature, storing nothing.
func TestNotificationHMACVectors(t *testing.T) {
	t.Run("published vector", func(t *testing.T) {
		e := newNotifyEnv(t, vectorKey, httpapi.BasicAuth{})
		it := upstream.NotificationRequestItem{PSPReference: "pspReference", OriginalReference: "originalReference",
			MerchantAccountCode: "merchantAccount", MerchantReference: "reference", Amount: money.Amount{Value: 1000, Currency: "EUR"},
			EventCode: "EVENT", Success: "true", AdditionalData: map[string]string{"hmacSignature": vectorSig}}
		wantAccepted(t, e.post(wrap(it), "", ""))
		if !e.stored(it) {
			t.Fatal("the item was not stored (it is kept, unroutable)")
		}
		it.Success = "false"
		wantUnauthorized(t, e.post(wrap(it), "", ""))
	})
	e := newNotifyEnv(t, otherKey, httpapi.BasicAuth{})
	valid := signedItem(t, otherKey, authItem("PSP0000000000001", "order-1"))
	escaped := signedItem(t, otherKey, authItem("PSP0000000000002", `order:1\a:b\\`))
	tampered := signedItem(t, otherKey, authItem("PSP0000000000003", "order-3"))
	tampered.Amount.Value = 1
	wrongKey := signedItem(t, vectorKey, authItem("PSP0000000000004", "order-4"))
	escapedForm := authItem("PSP0000000000005", `order:5\x`)
	s, _ := upstream.NewSigner(otherKey)
	escapedForm.AdditionalData = map[string]string{"hmacSignature": s.Sign(strings.Join([]string{
		escapedForm.PSPReference, "", "AlphaECOM", upstream.EscapeSigningValue(escapedForm.MerchantReference), "1000", "EUR", "AUTHORISATION", "true"}, ":"))}
	missing := authItem("PSP0000000000006", "order-6")
	garbage := authItem("PSP0000000000007", "order-7")
	garbage.AdditionalData = map[string]string{"hmacSignature": "not base64!"}

	wantAccepted(t, e.post(wrap(valid), "", ""))
	wantAccepted(t, e.post(wrap(escaped), "", ""))
	for name, it := range map[string]upstream.NotificationRequestItem{
		"tampered": tampered, "wrong key": wrongKey, "escaped form": escapedForm, "missing": missing, "garbage": garbage,
	} {
		wantUnauthorized(t, e.post(wrap(it), "", ""))
		if e.stored(it) {
			t.Fatalf("%s: stored", name)
		}
	}
	// One bad item refuses the whole notification.
	good := signedItem(t, otherKey, authItem("PSP0000000000008", "order-8"))
	wantUnauthorized(t, e.post(wrap(good, tampered), "", ""))
	if e.stored(good) {
		t.Fatal("the good item of a refused notification was stored")
	}
	if !e.stored(valid) || !e.stored(escaped) {
		t.Fatal("accepted items not stored")
	}
	p, err := e.st.GetPayment(context.Background(), "PSP0000000000002")
	if err != nil || p.Reference != `order:1\a:b\\` {
		t.Fatalf("payment of the escaped item: %+v, %v", p, err)
	}
	e.q.mu.Lock()
	jobs := e.q.n
	e.q.mu.Unlock()
	if jobs != 2 {
		t.Fatalf("%d deliveries enqueued, want 2", jobs)
	}
}

func TestNotificationBasicAuth(t *testing.T) {
	e := newNotifyEnv(t, otherKey, httpapi.BasicAuth{Username: "paysvc-notify", Password: "s3cret"})
	it := signedItem(t, otherKey, authItem("PSP0000000000001", "order-1"))
	for _, c := range [][2]string{{"", ""}, {"paysvc-notify", "wrong"}, {"other", "s3cret"}, {"paysvc-notif", "s3cret"}} {
		w := e.post(wrap(it), c[0], c[1])
		wantUnauthorized(t, w)
		if w.Header().Get("WWW-Authenticate") == "" {
			t.Fatal("no WWW-Authenticate challenge")
		}
	}
	if e.stored(it) {
		t.Fatal("stored without credentials")
	}
	wantAccepted(t, e.post(wrap(it), "paysvc-notify", "s3cret"))
	if strings.Contains(e.logs.String(), "s3cret") {
		t.Fatal("the password reached the logs")
	}
}

func TestNotificationEndpointErrors(t *testing.T) {
	e := newNotifyEnv(t, otherKey, httpapi.BasicAuth{})
	req := httptest.NewRequest(http.MethodGet, httpapi.NotificationsPath, nil)
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Fatalf("GET: %d %v", w.Code, w.Header())
	}
	req = httptest.NewRequest(http.MethodPost, httpapi.NotificationsPath, strings.NewReader("{not json"))
	req.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("bad JSON: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/ecom/config", nil))
	if w.Code != http.StatusTeapot {
		t.Fatalf("other paths go to the API handler: %d", w.Code)
	}
	// A store failure answers 500, so the upstream retries.
	e.recv.Receiver.(*notifications.Receiver).Events = failingEvents{e.st}
	w = e.post(wrap(signedItem(t, otherKey, authItem("PSP0000000000009", "order-9"))), "", "")
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "table unavailable") {
		t.Fatalf("store down: %d %s", w.Code, w.Body)
	}
}
