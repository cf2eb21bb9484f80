package localserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/adminapi"
	"github.com/yp/paysvc/shared/admincli"
	"github.com/yp/paysvc/shared/testutil/webhooksink"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// admin runs paysvc-admin beside the server, as a developer would.
func (s *server) admin(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb strings.Builder
	if code := admincli.Run(context.Background(), args, s.getenv, &out, &errb); code != 0 {
		t.Fatalf("paysvc-admin %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String()
}

func (s *server) demoKey(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dataDir, "demo-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// streamWriter passes each line written on.
type streamWriter struct{ lines chan string }

func (w streamWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimSpace(string(p)), "\n") {
		w.lines <- line
	}
	return len(p), nil
}

// While the local server holds the embedded store, paysvc-admin goes
// through its admin API: a subscription is created without stopping it,
// a pending delivery is retried at once, trigger sends a signed
// notification that becomes a webhook, and listen forwards the merchant's
// webhooks signed with its own secret, without a subscription.
func TestAdminCommandsWhileTheServerRuns(t *testing.T) {
	s := start(t, nil)
	key := s.demoKey(t)
	if info, err := os.Stat(filepath.Join(s.dataDir, adminapi.TokenFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v %v", info, err)
	}
	if out := s.admin(t, "merchant", "list"); !strings.Contains(out, "m_demo") {
		t.Fatalf("merchant list through the server:\n%s", out)
	}

	// A subscription while the server runs; its first attempt fails.
	sink := webhooksink.New(t, http.StatusInternalServerError)
	var created struct {
		Subscription struct{ ID string }
		Secret       string
	}
	if err := json.Unmarshal([]byte(s.admin(t, "subscription", "create", "--merchant", "m_demo", "--url", sink.URL, "--allow-insecure-local", "--json")), &created); err != nil || created.Secret == "" {
		t.Fatalf("subscription create: %v %+v", err, created)
	}
	if out := s.admin(t, "subscription", "list", "--merchant", "m_demo"); !strings.Contains(out, created.Subscription.ID) {
		t.Fatalf("subscription list:\n%s", out)
	}
	status, pay := s.do(t, "POST", "/v1/ecom/site_demo/payments", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		`{"amount":{"value":1000,"currency":"EUR"},"reference":"order-admin-1","returnUrl":"https://shop.example/return",
		"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`)
	psp, _ := pay["pspReference"].(string)
	if status != 200 || psp == "" {
		t.Fatalf("payment: %d %v", status, pay)
	}
	first := sink.Next(t)
	if first.Item()["eventCode"] != "AUTHORISATION" || first.Header.Get("X-Webhook-Delivery-Attempt") != "1" {
		t.Fatalf("first attempt %v %s", first.Header, first.Body)
	}
	// The failed attempt is recorded (then logged): the delivery is pending,
	// its next attempt 5 s away. Retry it now.
	s.logs.waitFor(t, s.ended, 1, `"msg":"webhook attempt failed"`)
	var deliveries []struct{ ID, Status string }
	if err := json.Unmarshal([]byte(s.admin(t, "delivery", "list", "--merchant", "m_demo", "--json")), &deliveries); err != nil || len(deliveries) != 1 || deliveries[0].Status != "pending" {
		t.Fatalf("deliveries: %v %+v", err, deliveries)
	}
	if out := s.admin(t, "delivery", "retry", "--merchant", "m_demo", "--id", deliveries[0].ID); !strings.Contains(out, "attempt 2 now") {
		t.Fatalf("delivery retry:\n%s", out)
	}
	second := sink.Next(t)
	if second.Header.Get("X-Webhook-Id") != first.Header.Get("X-Webhook-Id") || second.Header.Get("X-Webhook-Delivery-Attempt") != "2" {
		t.Fatalf("retried attempt %v", second.Header)
	}
	if err := verify.Verify(created.Secret, second.Header, second.Body, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("retried attempt's signature: %v", err)
	}

	// trigger: a signed notification through the service becomes a webhook;
	// it says for which operation (no capture was requested: a new one) and
	// what became of the webhook at the subscription.
	if out := s.admin(t, "trigger", "CAPTURE", "--psp", psp); !strings.Contains(out, "[accepted]") || !strings.Contains(out, "event evt_") ||
		!strings.Contains(out, "operation: no capture of the payment matched") ||
		!strings.Contains(out, "subscription "+created.Subscription.ID+" ("+sink.URL+"): delivered: 204, attempt 1") {
		t.Fatalf("trigger:\n%s", out)
	}
	capture := sink.Next(t)
	if it := capture.Item(); it["eventCode"] != "CAPTURE" || it["originalReference"] != psp {
		t.Fatalf("triggered webhook %s", capture.Body)
	}

	// listen: the merchant's webhooks to another URL, its own secret, no
	// subscription.
	listened := webhooksink.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan string, 16)
	done := make(chan int, 1)
	go func() {
		done <- admincli.Run(ctx, []string{"listen", "--forward-to", listened.URL, "--json"}, s.getenv, streamWriter{lines}, io.Discard)
	}()
	var ready struct{ Type, MerchantID, Secret string }
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.Type != "ready" || ready.MerchantID != "m_demo" || !strings.HasPrefix(ready.Secret, "whsec_") {
			t.Fatalf("listen's first line %q", line)
		}
	case code := <-done:
		t.Fatalf("listen exited %d", code)
	}
	// A second listen prints the webhooks instead of forwarding them.
	printed := make(chan string, 16)
	printDone := make(chan int, 1)
	go func() {
		printDone <- admincli.Run(ctx, []string{"listen", "--json"}, s.getenv, streamWriter{printed}, io.Discard)
	}()
	if line := <-printed; !strings.Contains(line, `"forwardTo":""`) {
		t.Fatalf("printing listen's first line %q", line)
	}
	// Each target said: the subscription, the forwarding listen (its
	// receiver's answer) and the printing one (the signature it checked).
	if out := s.admin(t, "trigger", "REFUND", "--psp", psp, "--set", "amount.value=300"); !strings.Contains(out, "3.00 EUR") ||
		!strings.Contains(out, "subscription "+created.Subscription.ID+" ("+sink.URL+"): delivered") ||
		!strings.Contains(out, "("+listened.URL+"): delivered: your receiver answered 204") ||
		!strings.Contains(out, "(printed by paysvc-admin listen): delivered: printed, signature verified") {
		t.Fatalf("trigger REFUND:\n%s", out)
	}
	fwd := listened.Next(t)
	if err := verify.Verify(ready.Secret, fwd.Header, fwd.Body, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("listen's webhook signature: %v", err)
	}
	if fwd.Item()["eventCode"] != "REFUND" || !strings.HasPrefix(fwd.Header.Get("X-Webhook-Id"), "msg_listen_") {
		t.Fatalf("listened webhook %v %s", fwd.Header, fwd.Body)
	}
	if refund := sink.Next(t); refund.Item()["eventCode"] != "REFUND" {
		t.Fatalf("the subscription's REFUND webhook %s", refund.Body)
	}
	var shown struct {
		EventCode string
		Body      json.RawMessage
	}
	if err := json.Unmarshal([]byte(<-printed), &shown); err != nil || shown.EventCode != "REFUND" || !strings.Contains(string(shown.Body), `"value":300`) {
		t.Fatalf("printed webhook %+v %v", shown, err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("listen exit %d", code)
	}
	if code := <-printDone; code != 0 {
		t.Fatalf("printing listen exit %d", code)
	}
	var subs []json.RawMessage
	_ = json.Unmarshal([]byte(s.admin(t, "subscription", "list", "--merchant", "m_demo", "--json")), &subs)
	if len(subs) != 1 {
		t.Fatalf("listen created a subscription: %d", len(subs))
	}

	s.stop()
	for _, f := range []string{adminapi.TokenFile, adminapi.ServerFile} {
		if _, err := os.Stat(filepath.Join(s.dataDir, f)); !os.IsNotExist(err) {
			t.Errorf("%s after the server stopped: %v", f, err)
		}
	}
	// Without a server the CLI opens the store itself again.
	var out, errb strings.Builder
	if code := admincli.Run(context.Background(), []string{"merchant", "list"}, s.getenv, &out, &errb); code != 0 || !strings.Contains(out.String(), "m_demo") {
		t.Fatalf("merchant list after the server stopped: %d %s %s", code, out.String(), errb.String())
	}
	if code := admincli.Run(context.Background(), []string{"trigger", "CAPTURE"}, s.getenv, &out, &errb); code != 1 || !strings.Contains(errb.String(), "needs a running local server") {
		t.Fatalf("trigger without a server: %d %s", code, errb.String())
	}
}

// The local routes answer only to the server's own Host (no DNS
// rebinding from a web page), the admin API only with its token; the API
// itself is not concerned.
func TestLocalRoutesCheckHostAndToken(t *testing.T) {
	s := start(t, nil)
	tok, err := os.ReadFile(filepath.Join(s.dataDir, adminapi.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + strings.TrimSpace(string(tok))
	for _, tc := range []struct {
		method, path, host, auth string
		status                   int
		code                     string
	}{
		{"GET", "/_dashboard/", "evil.example:3000", "", 403, "local_host_refused"},
		{"GET", "/_dashboard/", "", "", 200, ""},
		{"POST", "/_dashboard/simulator/clock", "", "", 403, ""}, // no CSRF token
		{"GET", "/_admin/v1/status", "evil.example:3000", bearer, 403, "local_host_refused"},
		{"GET", "/_admin/v1/status", "", "", 401, "admin_unauthorized"},
		{"GET", "/_admin/v1/status", "", "Bearer adm_wrong", 401, "admin_unauthorized"},
		{"GET", "/_admin/v1/status", "", bearer, 200, ""},
		{"GET", "/_sim/payments/X", "rebound.example", "", 403, "local_host_refused"},
		{"GET", "/_sim/payments/X", "", "", 404, "sim_not_found"},
		{"GET", "/v1/ecom/config", "evil.example:3000", "", 401, "yp_1001"},
	} {
		req, _ := http.NewRequest(tc.method, s.base+tc.path, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ ErrorCode string }
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != tc.status || e.ErrorCode != tc.code {
			t.Errorf("%s %s (Host %q): %d %s, want %d %s", tc.method, tc.path, tc.host, resp.StatusCode, b, tc.status, tc.code)
		}
	}
	if !strings.Contains(s.banner.String(), "dashboard: "+s.base+"/_dashboard/") {
		t.Errorf("banner:\n%s", s.banner.String())
	}
}
