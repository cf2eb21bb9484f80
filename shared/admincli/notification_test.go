package admincli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/webhooks"
)

// An unroutable notification is listed with its reason, refused routing
// while its merchant is missing, and routed once the merchant exists: its
// payment record is created and its delivery queued.
func TestNotificationsUnroutableListAndRoute(t *testing.T) {
	h := newEmbedded(t)
	now := h.clk.Now()
	item := payments.Notification{EventCode: "AUTHORISATION", PSPReference: "PSP0000000000009", Success: "true",
		MerchantAccountCode: "LateECOM", MerchantReference: "order-9", Amount: money.Amount{Value: 900, Currency: "EUR"},
		PaymentMethod: "visa", AdditionalData: map[string]string{"metadata.merchantId": "m_late", "metadata.siteId": "site_late"}}
	key := notifications.DedupKey(item)
	ev := notifications.Event{ID: notifications.EventID(key), Key: key, Live: "false", Item: item, PaymentPSP: item.PSPReference,
		Status: notifications.EventUnroutable, Received: 1, ReceivedAt: now, UnroutableAt: &now,
		UnroutableReason: "unknown merchant m_late", UpdatedAt: now, Version: 1}
	st, err := embedded.Open(h.dbPath, embedded.WithClock(h.clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveEvent(context.Background(), ev, 0); err != nil {
		t.Fatal(err)
	}
	st.Close()

	if out := h.ok("notification", "list", "--unroutable"); !strings.Contains(out, ev.ID) || !strings.Contains(out, "unknown merchant m_late") ||
		!strings.Contains(out, "LateECOM") {
		t.Fatalf("list:\n%s", out)
	}
	if code, _, _ := h.run("notification", "list"); code != 2 {
		t.Fatalf("list without --unroutable: exit %d, want 2", code)
	}
	if code, _, _ := h.run("notification", "route"); code != 2 {
		t.Fatalf("route without --id or --all: exit %d, want 2", code)
	}
	if code, out, errs := h.run("notification", "route", "--id", ev.ID); code != 1 || !strings.Contains(out, "still unroutable: unknown merchant m_late") {
		t.Fatalf("route before the merchant exists: exit %d\n%s%s", code, out, errs)
	}

	h.ok("merchant", "create", "--id", "m_late", "--name", "Late", "--country", "NL", "--upstream-account", "LateECOM")
	h.ok("subscription", "create", "--merchant", "m_late", "--url", "https://late.example/hooks")
	if out := h.ok("notification", "route", "--all"); !strings.Contains(out, "routed "+ev.ID+" to m_late (1 deliveries)") {
		t.Fatalf("route:\n%s", out)
	}
	var listed []notifications.Event
	h.jsonOK(&listed, "notification", "list", "--unroutable")
	if len(listed) != 0 {
		t.Fatalf("still listed after routing: %+v", listed)
	}
	var deliveries []webhooks.Delivery
	h.jsonOK(&deliveries, "delivery", "list", "--merchant", "m_late")
	if len(deliveries) != 1 || deliveries[0].EventID != ev.ID || deliveries[0].Status != webhooks.StatusPending {
		t.Fatalf("deliveries after routing: %+v", deliveries)
	}
	st, err = embedded.Open(h.dbPath, embedded.WithClock(h.clk))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.GetPayment(context.Background(), item.PSPReference)
	if err != nil || p.MerchantID != "m_late" || p.SiteID != "site_late" {
		t.Fatalf("payment record after routing: %+v, %v", p, err)
	}
	if jobs, err := st.DueJobs(context.Background(), h.clk.Now(), 10); err != nil || len(jobs) != 1 || jobs[0].Job.DeliveryID != deliveries[0].ID {
		t.Fatalf("queued jobs: %+v, %v", jobs, err)
	}
}

// An account-level notification (REPORT_AVAILABLE) is listed by
// --account with the report's file name and download URL, and not by
// --unroutable; both flags at once are refused.
func TestNotificationsAccountLevelList(t *testing.T) {
	h := newEmbedded(t)
	now := h.clk.Now()
	item := payments.Notification{EventCode: "REPORT_AVAILABLE", PSPReference: "settlement_detail_report_batch_7.csv", Success: "true",
		MerchantAccountCode: "AlphaECOM", Amount: money.Amount{Currency: "EUR"},
		Reason: "https://ca-test.example.com/reports/download/AlphaECOM/settlement_detail_report_batch_7.csv"}
	key := notifications.DedupKey(item)
	ev := notifications.Event{ID: notifications.EventID(key), Key: key, Live: "false", Item: item, PaymentPSP: item.PSPReference,
		Status: notifications.EventAccount, Received: 1, ReceivedAt: now, ProcessedAt: &now, UpdatedAt: now, Version: 1}
	st, err := embedded.Open(h.dbPath, embedded.WithClock(h.clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveEvent(context.Background(), ev, 0); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if out := h.ok("notification", "list", "--account"); !strings.Contains(out, ev.ID) || !strings.Contains(out, item.PSPReference) ||
		!strings.Contains(out, item.Reason) || !strings.Contains(out, "REPORT_AVAILABLE") {
		t.Fatalf("list --account:\n%s", out)
	}
	var listed []notifications.Event
	h.jsonOK(&listed, "notification", "list", "--unroutable")
	if len(listed) != 0 {
		t.Fatalf("an account-level event listed unroutable: %+v", listed)
	}
	if code, _, _ := h.run("notification", "list", "--unroutable", "--account"); code != 2 {
		t.Fatalf("list --unroutable --account: exit %d, want 2", code)
	}
}
