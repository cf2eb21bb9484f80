package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/webhooks"
)

// EventHistory is a store of merchants' event histories (written with
// each processed notification item, notifications.ItemCommit, or alone,
// and listed by the event history endpoint).
type EventHistory interface {
	PutMerchantEvent(ctx context.Context, e notifications.MerchantEvent) error
	ListMerchantEvents(ctx context.Context, merchantID string, q notifications.EventQuery) ([]notifications.MerchantEvent, error)
}

// DeliveryPages is a delivery store that lists pages of a merchant's
// deliveries after a cursor.
type DeliveryPages interface {
	webhooks.DeliveryStore
	ListDeliveryPage(ctx context.Context, merchantID string, q webhooks.DeliveryQuery) ([]webhooks.Delivery, error)
}

// SelfServiceStores bundles the ports behind merchants' event history and
// delivery listing.
type SelfServiceStores struct {
	History    EventHistory
	Deliveries DeliveryPages
}

// RunSelfService runs the event-history and delivery-page contracts.
func RunSelfService(t *testing.T, newStores Factory[SelfServiceStores]) {
	t.Helper()
	t.Run("EventHistory", func(t *testing.T) { testEventHistory(t, newStores(t, newClock()).History) })
	t.Run("DeliveryPages", func(t *testing.T) { testDeliveryPages(t, newStores(t, newClock()).Deliveries) })
}

func merchantEvent(id, merchant, code, psp string, at time.Time) notifications.MerchantEvent {
	return notifications.MerchantEvent{
		ID: id, MerchantID: merchant, EventCode: code, PSPReference: "MOD_" + id, PaymentPSP: psp,
		Payload:   json.RawMessage(fmt.Sprintf(`{"live":false,"notificationItems":[{"NotificationRequestItem":{"eventCode":%q,"pspReference":"MOD_%s"}}]}`, code, id)),
		CreatedAt: at.In(elsewhere()),
	}
}

// testEventHistory: a merchant's events are listed newest first (ties by
// id), in pages after a cursor, filtered by pspReference (the item's or
// the payment's) and event code, never another merchant's (not even one
// whose id extends it), each stored once however often it is put, with
// its payload byte for byte and times in UTC.
func testEventHistory(t *testing.T, s EventHistory) {
	ctx := context.Background()
	put := func(e notifications.MerchantEvent) {
		t.Helper()
		noErr(t, s.PutMerchantEvent(ctx, e), "PutMerchantEvent "+e.ID)
	}
	for i := range 5 {
		code, psp := "CAPTURE", "PSP_A"
		if i%2 == 0 {
			code, psp = "REFUND", "PSP_B"
		}
		put(merchantEvent(name("evt", i), "m_a", code, psp, epoch().Add(time.Duration(i)*time.Second)))
	}
	put(merchantEvent("evt_tie_a", "m_a", "CAPTURE", "PSP_C", epoch().Add(10*time.Second)))
	put(merchantEvent("evt_tie_b", "m_a", "CAPTURE", "PSP_C", epoch().Add(10*time.Second)))
	put(merchantEvent("evt_00", "m_a", "REFUND", "PSP_B", epoch())) // again: still one
	put(merchantEvent("evt_other", "m_b", "CAPTURE", "PSP_A", epoch().Add(time.Hour)))
	put(merchantEvent("evt_prefix", "m_a2", "CAPTURE", "PSP_A", epoch().Add(time.Hour)))

	idOf := func(e notifications.MerchantEvent) string { return e.ID }
	list := func(q notifications.EventQuery) []notifications.MerchantEvent {
		t.Helper()
		got, err := s.ListMerchantEvents(ctx, "m_a", q)
		noErr(t, err, "ListMerchantEvents")
		return got
	}
	all := list(notifications.EventQuery{Limit: 100})
	same(t, ids(all, idOf), []string{"evt_tie_b", "evt_tie_a", "evt_04", "evt_03", "evt_02", "evt_01", "evt_00"}, "all events of m_a")
	want := merchantEvent("evt_04", "m_a", "REFUND", "PSP_B", epoch().Add(4*time.Second))
	got := all[2]
	sameTime(t, got.CreatedAt, want.CreatedAt, "createdAt")
	if string(got.Payload) != string(want.Payload) || got.PaymentPSP != "PSP_B" || got.PSPReference != "MOD_evt_04" || got.EventCode != "REFUND" {
		t.Fatalf("round trip: got %+v", got)
	}

	// Pages of 3 after each page's last event.
	var pages [][]string
	var after *notifications.EventCursor
	for range 4 {
		page := list(notifications.EventQuery{Limit: 3, After: after})
		if len(page) == 0 {
			break
		}
		pages = append(pages, ids(page, idOf))
		last := page[len(page)-1]
		after = &notifications.EventCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	same(t, fmt.Sprint(pages), "[[evt_tie_b evt_tie_a evt_04] [evt_03 evt_02 evt_01] [evt_00]]", "pages of 3")

	same(t, ids(list(notifications.EventQuery{Limit: 10, PSPReference: "PSP_A"}), idOf), []string{"evt_03", "evt_01"}, "payment PSP_A")
	same(t, ids(list(notifications.EventQuery{Limit: 10, PSPReference: "MOD_evt_02"}), idOf), []string{"evt_02"}, "the item's own pspReference")
	same(t, ids(list(notifications.EventQuery{Limit: 2, EventCode: "REFUND"}), idOf), []string{"evt_04", "evt_02"}, "REFUND, limit 2")
	cursor := &notifications.EventCursor{CreatedAt: epoch().Add(4 * time.Second), ID: "evt_04"}
	same(t, ids(list(notifications.EventQuery{Limit: 10, EventCode: "REFUND", After: cursor}), idOf), []string{"evt_02", "evt_00"}, "REFUND after evt_04")
	same(t, ids(list(notifications.EventQuery{Limit: 10, EventCode: "CANCELLATION"}), idOf), []string{}, "no such code")
	other, err := s.ListMerchantEvents(ctx, "m_nobody", notifications.EventQuery{Limit: 10})
	noErr(t, err, "ListMerchantEvents of a merchant without events")
	same(t, len(other), 0, "events of a merchant without events")
}

// testDeliveryPages: a merchant's deliveries in pages after a cursor,
// newest first, per status or across all of them.
func testDeliveryPages(t *testing.T, s DeliveryPages) {
	ctx := context.Background()
	for i := range 6 {
		noErr(t, s.SaveDelivery(ctx, delivery(name("msg", i), "m_a", epoch().Add(time.Duration(i)*time.Second)), 0), "create")
	}
	noErr(t, s.SaveDelivery(ctx, delivery("msg_other", "m_b", epoch().Add(time.Hour)), 0), "create other merchant's")
	failDeliveries(t, s, 1, 2, 4)
	idOf := func(d webhooks.Delivery) string { return d.ID }
	pagesOf := func(status webhooks.Status, limit int) string {
		t.Helper()
		var pages [][]string
		var after *webhooks.DeliveryCursor
		for range 10 {
			page, err := s.ListDeliveryPage(ctx, "m_a", webhooks.DeliveryQuery{Status: status, Limit: limit, After: after})
			noErr(t, err, "ListDeliveryPage")
			if len(page) == 0 {
				break
			}
			pages = append(pages, ids(page, idOf))
			last := page[len(page)-1]
			after = &webhooks.DeliveryCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		return fmt.Sprint(pages)
	}
	check := func(status webhooks.Status, limit int, want string) {
		t.Helper()
		eventually(t, want, fmt.Sprintf("pages of %q deliveries, limit %d", status, limit), func() string { return pagesOf(status, limit) })
	}
	check(webhooks.StatusFailed, 2, "[[msg_04 msg_02] [msg_01]]")
	check("", 4, "[[msg_05 msg_04 msg_03 msg_02] [msg_01 msg_00]]")
	check(webhooks.StatusPending, 10, "[[msg_05 msg_03 msg_00]]")
	check(webhooks.StatusDelivered, 10, "[]")
}
