package adminapi

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

func TestApplySets(t *testing.T) {
	base := upstream.NotificationRequestItem{
		AdditionalData: upstream.AdditionalData{"metadata.siteId": "s"}, Amount: money.Amount{Value: 1000, Currency: "EUR"},
		EventCode: "CAPTURE", EventDate: "2026-01-01T00:00:00Z", MerchantAccountCode: "Acct", MerchantReference: "r",
		OriginalReference: "P1", PSPReference: "M1", Success: "true",
	}
	for _, tc := range []struct {
		sets  []string
		check func(upstream.NotificationRequestItem) bool
		err   string
	}{
		{[]string{"success=false", "reason=Insufficient balance"}, func(it upstream.NotificationRequestItem) bool {
			return it.Success == "false" && it.Reason == "Insufficient balance"
		}, ""},
		{[]string{"amount.value=500", "amount.currency=GBP"}, func(it upstream.NotificationRequestItem) bool {
			return it.Amount == money.Amount{Value: 500, Currency: "GBP"}
		}, ""},
		{[]string{"additionalData.modification.action=refund"}, func(it upstream.NotificationRequestItem) bool {
			return it.AdditionalData["modification.action"] == "refund" && it.AdditionalData["metadata.siteId"] == "s"
		}, ""},
		{[]string{"amount.value=ten"}, nil, "whole number"},
		{[]string{"nope=1"}, nil, "unknown field"},
		{[]string{"amount.value.x=1"}, nil, "not an object"},
		{[]string{"success"}, nil, "field=value"},
	} {
		got, err := applySets(base, tc.sets)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: err %v, want %q", tc.sets, err, tc.err)
		case tc.err == "" && (err != nil || !tc.check(got)):
			t.Errorf("%v: %+v %v", tc.sets, got, err)
		}
	}
}

func TestLocalRoutesOnlyOnLoopbackInTest(t *testing.T) {
	for _, tc := range []struct {
		addr string
		env  tenant.Environment
		ok   bool
	}{
		{"127.0.0.1:3000", tenant.EnvTest, true},
		{"[::1]:3000", tenant.EnvTest, true},
		{"0.0.0.0:3000", tenant.EnvTest, false},
		{"192.168.1.5:3000", tenant.EnvTest, false},
		{"127.0.0.1:3000", tenant.EnvLive, false},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if why := LocalRoutesRefused(addr, tc.env); (why == "") != tc.ok {
			t.Errorf("%s in %s: %q", tc.addr, tc.env, why)
		}
	}
}

func TestGuardHosts(t *testing.T) {
	addr, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:3000")
	h := GuardHosts(AllowedHosts(addr), []string{"/_dashboard", "/_sim/"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, tc := range []struct {
		path, host string
		status     int
	}{
		{"/_dashboard/", "127.0.0.1:3000", http.StatusTeapot},
		{"/_dashboard", "localhost:3000", http.StatusTeapot},
		{"/_dashboard/", "LOCALHOST:3000", http.StatusTeapot},
		{"/_dashboard/", "localhost:3001", http.StatusForbidden},
		{"/_dashboard/", "attacker.example:3000", http.StatusForbidden},
		{"/_sim/payments/x", "127.0.0.1", http.StatusForbidden},
		{"/v1/ecom/config", "attacker.example:3000", http.StatusTeapot},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		r.Host = tc.host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Errorf("%s Host %s: %d, want %d", tc.path, tc.host, w.Code, tc.status)
		}
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadFiles(dir); ok || err != nil {
		t.Fatalf("no server: %v %v", ok, err)
	}
	tok := NewToken()
	// A token file left by another run with a wider mode is replaced.
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(dir, Endpoint{URL: "http://127.0.0.1:3000", PID: 42, Token: tok}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{TokenFile, ServerFile} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, info, err)
		}
	}
	e, ok, err := ReadFiles(dir)
	if !ok || err != nil || e.URL != "http://127.0.0.1:3000" || e.PID != 42 || e.Token != tok {
		t.Fatalf("read back: %+v %v %v", e, ok, err)
	}
	RemoveFiles(dir)
	if _, ok, _ := ReadFiles(dir); ok {
		t.Fatal("files left after RemoveFiles")
	}
}

// A modification's code is for the payment's latest operation of its kind.
func TestLatestOperation(t *testing.T) {
	timeline := []any{
		map[string]any{"time": "2026-01-01T10:00:00Z", "kind": "authorisation", "pspReference": "P1"},
		map[string]any{"time": "2026-01-01T10:01:00Z", "kind": "capture-requested", "source": "api", "pspReference": "op_1"},
		map[string]any{"time": "2026-01-01T10:01:01Z", "kind": "capture", "source": "api", "pspReference": "C1", "amount": map[string]any{"value": 400.0, "currency": "EUR"}},
		map[string]any{"time": "2026-01-01T10:02:00Z", "kind": "CAPTURE", "source": "notification", "pspReference": "C1"},
		map[string]any{"time": "2026-01-01T10:03:01Z", "kind": "capture", "source": "api", "pspReference": "C2", "amount": map[string]any{"value": 600.0, "currency": "EUR"}},
		map[string]any{"time": "2026-01-01T10:04:00Z", "kind": "capture-requested", "source": "api", "pspReference": "op_3"},
		map[string]any{"time": "2026-01-01T10:04:01Z", "kind": "refund", "source": "api", "pspReference": "R1"},
	}
	for _, tc := range []struct {
		code, psp string
		value     int64
	}{
		{upstream.EventCaptureFailed, "C2", 600},
		{upstream.EventCapture, "C2", 600},
		{upstream.EventRefundFailed, "R1", 0},
		{upstream.EventCancelOrRefund, "", 0},
		{"SOMETHING_ELSE", "", 0},
	} {
		op, ok := latestOperation(timeline, opOfCode[tc.code])
		if ok != (tc.psp != "") || op.psp != tc.psp || op.amount.Value != tc.value {
			t.Errorf("%s: %+v %v, want %s %d", tc.code, op, ok, tc.psp, tc.value)
		}
	}
}

// What trigger says of a subscription's delivery.
func TestDeliveryOutcome(t *testing.T) {
	next := time.Date(2026, 1, 1, 10, 0, 5, 0, time.UTC)
	for _, tc := range []struct {
		d      webhooks.Delivery
		status string
		detail string
	}{
		{webhooks.Delivery{ID: "msg_1", Status: webhooks.StatusDelivered, Attempts: 1, LastStatusCode: 204}, TargetDelivered, "204, attempt 1"},
		{webhooks.Delivery{ID: "msg_1", Status: webhooks.StatusPending}, TargetPending, "attempt 1 is under way"},
		{webhooks.Delivery{ID: "msg_1", Status: webhooks.StatusPending, Attempts: 1}, TargetPending, "attempt 1 is under way"},
		{webhooks.Delivery{ID: "msg_1", Status: webhooks.StatusPending, Attempts: 1, LastError: "connection refused", NextAttemptAt: &next},
			TargetPending, "attempt 1 failed: connection refused, next at 10:00:05 UTC"},
		{webhooks.Delivery{ID: "msg_1", Status: webhooks.StatusFailed, Attempts: 10, LastStatusCode: 500}, TargetFailed, "500 after 10 attempts"},
	} {
		status, detail := deliveryOutcome(tc.d)
		if status != tc.status || !strings.Contains(detail, tc.detail) {
			t.Errorf("%+v: %s %q, want %s %q", tc.d, status, detail, tc.status, tc.detail)
		}
	}
}
