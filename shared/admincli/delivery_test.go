package admincli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/webhooks"
)

func TestDeliveries(t *testing.T) {
	h := newEmbedded(t)
	h.ok("merchant", "create", "--id", "m_hook", "--name", "Hook", "--country", "NL")
	now := h.clk.Now()
	st, err := embedded.Open(h.dbPath, embedded.WithClock(h.clk))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []webhooks.Delivery{
		{ID: "msg_failed1", MerchantID: "m_hook", SubscriptionID: "sub_1", EventCode: "AUTHORISATION", PSPReference: "PSP0000000000001",
			Payload: []byte(`{}`), Status: webhooks.StatusFailed, Attempts: 10, LastStatusCode: 503, LastError: "HTTP 503", CreatedAt: now, UpdatedAt: now},
		{ID: "msg_done1", MerchantID: "m_hook", SubscriptionID: "sub_1", EventCode: "CAPTURE", PSPReference: "PSP0000000000001",
			Payload: []byte(`{}`), Status: webhooks.StatusDelivered, Attempts: 1, CreatedAt: now, UpdatedAt: now},
		{ID: "msg_other", MerchantID: "m_other", SubscriptionID: "sub_2", EventCode: "AUTHORISATION", PSPReference: "PSP0000000000002",
			Payload: []byte(`{}`), Status: webhooks.StatusFailed, Attempts: 10, CreatedAt: now, UpdatedAt: now,
			History: []webhooks.AttemptRecord{
				{Number: 9, At: now, Signature: "v1,bmluZQ==", StatusCode: 502, Body: "bad\ngateway", Error: "HTTP 502 Bad Gateway", DurationMS: 7},
				{Number: 10, At: now, Signature: "v1,dGVu", Error: "timeout: no complete answer within 15s", DurationMS: 15000},
			}},
	} {
		if _, _, err := webhooks.CreateDelivery(context.Background(), st, d); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	// The merchant of a delivery known only by its id (a dead letter's
	// deliveryId), then its failed deliveries.
	show := h.ok("delivery", "show", "--id", "msg_other")
	for _, want := range []string{"m_other", "sub_2", "failed", "PSP0000000000002",
		"attempt 10  " + now.UTC().Format(time.RFC3339) + "  no answer  15000 ms  timeout: no complete answer within 15s\n  X-Webhook-HMAC-Signature: v1,dGVu\n  answer: (no body)\n",
		"attempt 9  " + now.UTC().Format(time.RFC3339) + "  HTTP 502  7 ms  HTTP 502 Bad Gateway\n  X-Webhook-HMAC-Signature: v1,bmluZQ==\n  answer: \"bad\\ngateway\"\n"} {
		if !strings.Contains(show, want) {
			t.Errorf("delivery show lacks %q:\n%s", want, show)
		}
	}
	if strings.Index(show, "attempt 10") > strings.Index(show, "attempt 9") {
		t.Errorf("delivery show: attempts not newest first:\n%s", show)
	}
	var shown webhooks.Delivery
	h.jsonOK(&shown, "delivery", "show", "--id", "msg_failed1")
	if shown.MerchantID != "m_hook" || shown.LastError != "HTTP 503" || shown.Attempts != 10 || len(shown.Payload) != 0 {
		t.Errorf("delivery show --json: %+v", shown)
	}
	out := h.ok("delivery", "list", "--merchant", "m_hook", "--status", "failed")
	if !strings.Contains(out, "msg_failed1") || !strings.Contains(out, "HTTP 503") || strings.Contains(out, "msg_done1") || strings.Contains(out, "msg_other") {
		t.Fatalf("list:\n%s", out)
	}
	var listed []webhooks.Delivery
	h.jsonOK(&listed, "delivery", "list", "--merchant", "m_hook")
	if len(listed) != 2 {
		t.Fatalf("json list %+v", listed)
	}
	// Another merchant's delivery cannot be redriven through this merchant.
	if code, _, errs := h.run("delivery", "redrive", "--merchant", "m_hook", "--id", "msg_other"); code == 0 || !strings.Contains(errs, "unknown delivery") {
		t.Fatalf("foreign redrive: %d %s", code, errs)
	}
	var redriven struct {
		Redriven []string `json:"redriven"`
	}
	h.jsonOK(&redriven, "delivery", "redrive", "--merchant", "m_hook")
	if len(redriven.Redriven) != 1 || redriven.Redriven[0] != "msg_failed1" {
		t.Fatalf("redriven %+v", redriven)
	}
	h.jsonOK(&listed, "delivery", "list", "--merchant", "m_hook", "--status", "pending")
	if len(listed) != 1 || listed[0].ID != "msg_failed1" || listed[0].Attempts != 0 || listed[0].Redrives != 1 {
		t.Fatalf("after redrive %+v", listed)
	}
	if out := h.ok("delivery", "redrive-dlq"); !strings.Contains(out, "redriven 0") {
		t.Fatalf("empty local DLQ: %s", out)
	}
	if code, _, _ := h.run("delivery", "list", "--merchant", "m_hook", "--status", "lost"); code != 2 {
		t.Fatal("bad status accepted")
	}
}
