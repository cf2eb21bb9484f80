package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
)

// WebhookStores bundles the ports of notifications and webhooks one
// adapter implements.
type WebhookStores struct {
	Events     notifications.EventStore
	Deliveries webhooks.DeliveryStore
	Payments   payments.Store // the records CommitItem writes
}

// RunWebhooks runs the event-store and delivery-store contracts.
func RunWebhooks(t *testing.T, newStores Factory[WebhookStores]) {
	t.Helper()
	t.Run("Events", func(t *testing.T) {
		TestEventStore(t, func(t *testing.T, clk clock.Clock) notifications.EventStore { return newStores(t, clk).Events })
	})
	t.Run("Deliveries", func(t *testing.T) {
		TestDeliveryStore(t, func(t *testing.T, clk clock.Clock) webhooks.DeliveryStore { return newStores(t, clk).Deliveries })
	})
	t.Run("CommitItem", func(t *testing.T) { testCommitItem(t, newStores(t, newClock())) })
}

// testCommitItem checks notifications.EventStore.CommitItem: the event,
// the payment record, the deliveries and the merchant's history entry are
// written; a stale event or payment version is a conflict that leaves the
// record as it was; a delivery stored before is left as it is (committing
// an item again is idempotent).
func testCommitItem(t *testing.T, s WebhookStores) {
	ctx := context.Background()
	at := epoch()
	h := payments.Head{PSPReference: "PSP1", MerchantID: "m_a", Version: 1, CreatedAt: at}
	noErr(t, s.Payments.Write(ctx, payments.Write{PSP: "PSP1", Put: &h}), "create payment")
	done := delivery("msg_done", "m_a", at)
	done.Status = webhooks.StatusDelivered
	noErr(t, s.Deliveries.SaveDelivery(ctx, done, 0), "create delivery")

	ev := event("evt_c1", "PSP1", at)
	pay := payments.Head{PSPReference: "PSP1", MerchantID: "m_a", Reference: "order-4", Version: 2, CreatedAt: at}
	newDl := delivery("msg_new", "m_a", at)
	again := done
	again.Status = webhooks.StatusPending
	c := notifications.ItemCommit{Event: ev, Payment: &payments.Write{PSP: "PSP1", Put: &pay},
		Deliveries: []webhooks.Delivery{newDl, again},
		MerchantEvent: &notifications.MerchantEvent{ID: ev.ID, MerchantID: "m_a", EventCode: ev.Item.EventCode,
			PSPReference: ev.Item.PSPReference, PaymentPSP: "PSP1", Payload: []byte(`{"live":false}`), CreatedAt: at}}

	stale := c
	stale.Payment = &payments.Write{PSP: "PSP1", Put: &payments.Head{PSPReference: "PSP1", MerchantID: "m_a", Version: 6, CreatedAt: at}}
	wantErr(t, s.Events.CommitItem(ctx, stale), storeerr.ErrConflict, "CommitItem with a stale payment version")
	p, err := s.Payments.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	same(t, p.Version, int64(1), "payment version after a conflict")

	// Processed again, from the event as stored now (a store that writes
	// the parts independently may have written it).
	if stored, err := s.Events.GetEvent(ctx, ev.ID); err == nil {
		c.PrevEventVersion, c.Event.Version = stored.Version, stored.Version+1
	}
	noErr(t, s.Events.CommitItem(ctx, c), "CommitItem")
	got, err := s.Events.GetEvent(ctx, ev.ID)
	noErr(t, err, "GetEvent")
	same(t, got.Version, c.Event.Version, "event version")
	p, err = s.Payments.GetPayment(ctx, "PSP1")
	noErr(t, err, "GetPayment")
	same(t, [2]any{p.Version, p.Reference}, [2]any{int64(2), "order-4"}, "payment version and reference")
	for id, want := range map[string]webhooks.Status{"msg_new": webhooks.StatusPending, "msg_done": webhooks.StatusDelivered} {
		d, err := s.Deliveries.GetDelivery(ctx, id)
		noErr(t, err, "GetDelivery "+id)
		same(t, d.Status, want, "status of "+id)
	}

	// The same item committed again from the versions it now has (a
	// repeated processing): nothing changes but the event's version.
	c2 := c
	c2.Event.Version, c2.PrevEventVersion, c2.Payment = c.Event.Version+1, c.Event.Version, nil
	noErr(t, s.Events.CommitItem(ctx, c2), "CommitItem again")
	wantErr(t, s.Events.CommitItem(ctx, c2), storeerr.ErrConflict, "CommitItem from a stale event version")
	d, err := s.Deliveries.GetDelivery(ctx, "msg_new")
	noErr(t, err, "GetDelivery msg_new")
	same(t, d.Version, int64(1), "version of a delivery committed twice")
}

// TestEventStore checks the notifications.EventStore contract: events are
// created once by id, updated only from the version read (concurrent
// updaters lose nothing), listed per payment oldest first, times in UTC.
func TestEventStore(t *testing.T, newStore Factory[notifications.EventStore]) {
	t.Helper()
	runCases(t, newStore, []testCase[notifications.EventStore]{
		{"NotFound", testEventNotFound},
		{"CreateOnceRoundTrip", testEventCreateOnce},
		{"OptimisticVersion", testEventVersion},
		{"ConcurrentUpdatersLoseNothing", testEventConcurrent},
		{"ListByPayment", testEventListByPayment},
		{"ListUnroutable", testEventListUnroutable},
		{"ListAccountLevel", testEventListAccount},
	})
}

func event(id, psp string, at time.Time) notifications.Event {
	item := upstream.NotificationRequestItem{
		EventCode: upstream.EventCapture, PSPReference: "MOD_" + id, OriginalReference: psp, Success: "true",
		Amount: money.Amount{Value: 1000, Currency: "EUR"}, MerchantAccountCode: "AlphaECOM", MerchantReference: "order-1",
		AdditionalData: map[string]string{"metadata.merchantId": "m_a", upstream.KeyHMACSignature: "c2ln"},
	}
	return notifications.Event{
		ID: id, Key: notifications.DedupKey(connector.Notification(item)), Live: "false", Item: connector.Notification(item), PaymentPSP: psp,
		Status: notifications.EventReceived, Received: 1, ReceivedAt: at, UpdatedAt: at, Version: 1,
	}
}

func testEventNotFound(t *testing.T, s notifications.EventStore) {
	_, err := s.GetEvent(context.Background(), "evt_missing")
	wantErr(t, err, storeerr.ErrNotFound, "GetEvent")
	got, err := s.ListPaymentEvents(context.Background(), "PSP_NONE")
	noErr(t, err, "ListPaymentEvents")
	if len(got) != 0 {
		t.Fatalf("ListPaymentEvents of an unknown payment: %d events", len(got))
	}
}

func testEventCreateOnce(t *testing.T, s notifications.EventStore) {
	ctx := context.Background()
	e := event("evt_1", "PSP1", epoch().In(elsewhere()))
	noErr(t, s.SaveEvent(ctx, e, 0), "SaveEvent create")
	wantErr(t, s.SaveEvent(ctx, e, 0), storeerr.ErrConflict, "SaveEvent create twice")
	got, err := s.GetEvent(ctx, "evt_1")
	noErr(t, err, "GetEvent")
	sameTime(t, got.ReceivedAt, epoch(), "ReceivedAt")
	sameTime(t, got.UpdatedAt, epoch(), "UpdatedAt")
	want := e
	want.ReceivedAt, want.UpdatedAt = epoch(), epoch()
	same(t, got, want, "event round trip")
}

func testEventVersion(t *testing.T, s notifications.EventStore) {
	ctx := context.Background()
	e := event("evt_1", "PSP1", epoch())
	noErr(t, s.SaveEvent(ctx, e, 0), "create")
	e.Version = 2
	e.Status = notifications.EventProcessed
	done := epoch().Add(time.Second)
	e.ProcessedAt = &done
	e.DeliveryIDs = []string{"msg_a", "msg_b"}
	wrong := e
	wrong.Version = 8
	wantErr(t, s.SaveEvent(ctx, wrong, 7), storeerr.ErrConflict, "update from a wrong version")
	noErr(t, s.SaveEvent(ctx, e, 1), "update from version 1")
	wantErr(t, s.SaveEvent(ctx, e, 1), storeerr.ErrConflict, "update from a stale version")
	missing := event("evt_2", "PSP1", epoch())
	missing.Version = 2
	wantErr(t, s.SaveEvent(ctx, missing, 1), storeerr.ErrConflict, "update of a missing event")
	got, err := s.GetEvent(ctx, "evt_1")
	noErr(t, err, "GetEvent")
	if got.Version != 2 || got.Status != notifications.EventProcessed || len(got.DeliveryIDs) != 2 || got.ProcessedAt == nil {
		t.Fatalf("after update: %+v", got)
	}
	sameTime(t, *got.ProcessedAt, done, "ProcessedAt")
}

func testEventConcurrent(t *testing.T, s notifications.EventStore) {
	ctx := context.Background()
	noErr(t, s.SaveEvent(ctx, event("evt_1", "PSP1", epoch()), 0), "create")
	const n = 8
	runConcurrently(n, func(int) {
		for {
			e, err := s.GetEvent(ctx, "evt_1")
			if err != nil {
				t.Error(err)
				return
			}
			prev := e.Version
			e.Received++
			e.Version = prev + 1
			err = s.SaveEvent(ctx, e, prev)
			if err == nil {
				return
			}
			if !isConflict(err) {
				t.Error(err)
				return
			}
		}
	})
	got, err := s.GetEvent(ctx, "evt_1")
	noErr(t, err, "GetEvent")
	if got.Received != 1+n || got.Version != 1+n {
		t.Fatalf("after %d concurrent increments: received %d, version %d", n, got.Received, got.Version)
	}
}

func testEventListByPayment(t *testing.T, s notifications.EventStore) {
	ctx := context.Background()
	// Saved out of order; listed by ReceivedAt then ID.
	for _, e := range []notifications.Event{
		event("evt_c", "PSP1", epoch().Add(2*time.Second)),
		event("evt_a", "PSP1", epoch()),
		event("evt_x", "PSP2", epoch()),
		event("evt_b", "PSP1", epoch()),
		event("evt_y", "PSP10", epoch()),
	} {
		noErr(t, s.SaveEvent(ctx, e, 0), "SaveEvent "+e.ID)
	}
	got, err := s.ListPaymentEvents(ctx, "PSP1")
	noErr(t, err, "ListPaymentEvents")
	same(t, ids(got, func(e notifications.Event) string { return e.ID }), []string{"evt_a", "evt_b", "evt_c"}, "events of PSP1")
	// An update keeps the event listed once.
	e := got[0]
	e.Status, e.Version = notifications.EventUnroutable, 2
	noErr(t, s.SaveEvent(ctx, e, 1), "update")
	got, err = s.ListPaymentEvents(ctx, "PSP1")
	noErr(t, err, "ListPaymentEvents after update")
	if len(got) != 3 || got[0].Status != notifications.EventUnroutable {
		t.Fatalf("after update: %+v", got)
	}
}

// TestDeliveryStore checks the webhooks.DeliveryStore contract: deliveries
// are created once, updated only from the version read, listed per merchant
// and status newest first (moving between statuses), times in UTC.
func TestDeliveryStore(t *testing.T, newStore Factory[webhooks.DeliveryStore]) {
	t.Helper()
	runCases(t, newStore, []testCase[webhooks.DeliveryStore]{
		{"NotFound", testDeliveryNotFound},
		{"CreateOnceRoundTrip", testDeliveryCreateOnce},
		{"AttemptHistoryRoundTrip", testDeliveryHistory},
		{"OptimisticVersion", testDeliveryVersion},
		{"ConcurrentUpdatersLoseNothing", testDeliveryConcurrent},
		{"ListByMerchantAndStatus", testDeliveryList},
	})
}

func delivery(id, merchant string, at time.Time) webhooks.Delivery {
	return webhooks.Delivery{
		ID: id, MerchantID: merchant, SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "AUTHORISATION",
		PSPReference: "PSP1", Payload: json.RawMessage(`{"live":false,"notificationItems":[]}`),
		Status: webhooks.StatusPending, CreatedAt: at, UpdatedAt: at, Version: 1,
	}
}

func testDeliveryNotFound(t *testing.T, s webhooks.DeliveryStore) {
	_, err := s.GetDelivery(context.Background(), "msg_missing")
	wantErr(t, err, storeerr.ErrNotFound, "GetDelivery")
	got, err := s.ListDeliveries(context.Background(), "m_none", "", 0)
	noErr(t, err, "ListDeliveries")
	if len(got) != 0 {
		t.Fatalf("ListDeliveries of a merchant without deliveries: %d", len(got))
	}
}

func testDeliveryCreateOnce(t *testing.T, s webhooks.DeliveryStore) {
	ctx := context.Background()
	d := delivery("msg_1", "m_a", epoch().In(elsewhere()))
	noErr(t, s.SaveDelivery(ctx, d, 0), "create")
	wantErr(t, s.SaveDelivery(ctx, d, 0), storeerr.ErrConflict, "create twice")
	got, err := s.GetDelivery(ctx, "msg_1")
	noErr(t, err, "GetDelivery")
	sameTime(t, got.CreatedAt, epoch(), "CreatedAt")
	if string(got.Payload) != string(d.Payload) {
		t.Fatalf("payload changed: %s", got.Payload)
	}
	want := d
	want.CreatedAt, want.UpdatedAt = epoch(), epoch()
	same(t, got, want, "delivery round trip")
}

// testDeliveryHistory: a delivery's attempts come back as written, a
// full history (MaxHistory attempts, each with a MaxBodyPrefix body) included.
func testDeliveryHistory(t *testing.T, s webhooks.DeliveryStore) {
	ctx := context.Background()
	d := delivery("msg_1", "m_a", epoch())
	noErr(t, s.SaveDelivery(ctx, d, 0), "create")
	for i := range webhooks.MaxHistory {
		d.History = append(d.History, webhooks.AttemptRecord{
			Number: i + 1, At: epoch().Add(time.Duration(i) * time.Minute).In(elsewhere()), Signature: "v1,c2lnbmF0dXJl",
			StatusCode: 500, Body: strings.Repeat("ü", webhooks.MaxBodyPrefix/2), Truncated: true,
			Error: "HTTP 500 Internal Server Error", DurationMS: 12,
		})
	}
	d.History[0].StatusCode, d.History[0].Body, d.History[0].Truncated, d.History[0].Error = 0, "", false, "timeout: no complete answer within 15s"
	d.Version, d.Attempts = 2, webhooks.MaxHistory
	noErr(t, s.SaveDelivery(ctx, d, 1), "update with the history")
	got, err := s.GetDelivery(ctx, "msg_1")
	noErr(t, err, "GetDelivery")
	if len(got.History) != webhooks.MaxHistory {
		t.Fatalf("history: %d attempts, want %d", len(got.History), webhooks.MaxHistory)
	}
	for i, a := range got.History {
		sameTime(t, a.At, d.History[i].At, "attempt time")
		a.At = d.History[i].At
		same(t, a, d.History[i], "attempt")
	}
}

func testDeliveryVersion(t *testing.T, s webhooks.DeliveryStore) {
	ctx := context.Background()
	d := delivery("msg_1", "m_a", epoch())
	noErr(t, s.SaveDelivery(ctx, d, 0), "create")
	at := epoch().Add(5 * time.Second).In(elsewhere())
	d.Version, d.Attempts, d.Status, d.LastStatusCode, d.LastError, d.LastAttemptAt = 2, 1, webhooks.StatusFailed, 500, "HTTP 500", &at
	wrong := d
	wrong.Version = 4
	wantErr(t, s.SaveDelivery(ctx, wrong, 3), storeerr.ErrConflict, "update from a wrong version")
	noErr(t, s.SaveDelivery(ctx, d, 1), "update")
	wantErr(t, s.SaveDelivery(ctx, d, 1), storeerr.ErrConflict, "update from a stale version")
	got, err := s.GetDelivery(ctx, "msg_1")
	noErr(t, err, "GetDelivery")
	if got.Version != 2 || got.Status != webhooks.StatusFailed || got.LastStatusCode != 500 || got.LastAttemptAt == nil {
		t.Fatalf("after update: %+v", got)
	}
	sameTime(t, *got.LastAttemptAt, at, "LastAttemptAt")
}

func testDeliveryConcurrent(t *testing.T, s webhooks.DeliveryStore) {
	ctx := context.Background()
	noErr(t, s.SaveDelivery(ctx, delivery("msg_1", "m_a", epoch()), 0), "create")
	const n = 8
	runConcurrently(n, func(int) {
		_, err := webhooks.MutateDelivery(ctx, s, "msg_1", func(d *webhooks.Delivery) error {
			d.Attempts++
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})
	got, err := s.GetDelivery(ctx, "msg_1")
	noErr(t, err, "GetDelivery")
	if got.Attempts != n || got.Version != 1+n {
		t.Fatalf("after %d concurrent increments: attempts %d, version %d", n, got.Attempts, got.Version)
	}
}

func testDeliveryList(t *testing.T, s webhooks.DeliveryStore) {
	ctx := context.Background()
	for i := range 5 {
		noErr(t, s.SaveDelivery(ctx, delivery(name("msg", i), "m_a", epoch().Add(time.Duration(i)*time.Second)), 0), "create")
	}
	noErr(t, s.SaveDelivery(ctx, delivery("msg_other", "m_b", epoch()), 0), "create other merchant's")
	noErr(t, s.SaveDelivery(ctx, delivery("msg_prefix", "m_a2", epoch()), 0), "create prefix merchant's")
	failDeliveries(t, s, 1, 3)
	idOf := func(d webhooks.Delivery) string { return d.ID }
	check := func(status webhooks.Status, limit int, want ...string) {
		t.Helper()
		eventually(t, fmt.Sprint(want), fmt.Sprintf("deliveries of m_a in %q (limit %d)", status, limit), func() string {
			got, err := s.ListDeliveries(ctx, "m_a", status, limit)
			noErr(t, err, "ListDeliveries")
			return fmt.Sprint(ids(got, idOf))
		})
	}
	check(webhooks.StatusFailed, 0, "msg_03", "msg_01")
	check(webhooks.StatusPending, 0, "msg_04", "msg_02", "msg_00")
	check(webhooks.StatusPending, 2, "msg_04", "msg_02")
	check("", 0, "msg_04", "msg_03", "msg_02", "msg_01", "msg_00")
	check("", 3, "msg_04", "msg_03", "msg_02")
	check(webhooks.StatusDelivered, 0)
}

// listedEvents checks the ids of ListEvents(status, limit), oldest first
// (the list may lag a write briefly).
func listedEvents(t *testing.T, s notifications.EventStore, status notifications.EventStatus, limit int, what string, want ...string) {
	t.Helper()
	eventually(t, fmt.Sprint(want), what, func() string {
		got, err := s.ListEvents(context.Background(), status, limit)
		noErr(t, err, "ListEvents")
		return fmt.Sprint(ids(got, func(e notifications.Event) string { return e.ID }))
	})
}

// failDeliveries moves deliveries msg_<i> to failed.
func failDeliveries(t *testing.T, s webhooks.DeliveryStore, is ...int) {
	t.Helper()
	for _, i := range is {
		_, err := webhooks.MutateDelivery(context.Background(), s, name("msg", i), func(d *webhooks.Delivery) error {
			d.Status = webhooks.StatusFailed
			return nil
		})
		noErr(t, err, "fail "+name("msg", i))
	}
}

// isConflict reports a storeerr.ErrConflict.
func isConflict(err error) bool { return errors.Is(err, storeerr.ErrConflict) }

// Unroutable events are listed oldest first until they are routed.
func testEventListUnroutable(t *testing.T, s notifications.EventStore) {
	ctx := context.Background()
	got, err := s.ListEvents(ctx, notifications.EventUnroutable, 0)
	noErr(t, err, "ListEvents (none)")
	if len(got) != 0 {
		t.Fatalf("%d unroutable events in an empty store", len(got))
	}
	unroutable := func(id string, at time.Time) notifications.Event {
		e := event(id, "PSP1", at)
		e.Status, e.UnroutableAt, e.UnroutableReason = notifications.EventUnroutable, &at, "unknown merchant m_x"
		return e
	}
	noErr(t, s.SaveEvent(ctx, event("evt_routed", "PSP1", epoch()), 0), "SaveEvent routed")
	newer, older := unroutable("evt_newer", epoch().Add(time.Minute)), unroutable("evt_older", epoch())
	noErr(t, s.SaveEvent(ctx, newer, 0), "SaveEvent newer")
	noErr(t, s.SaveEvent(ctx, older, 0), "SaveEvent older")
	check := func(limit int, what string, want ...string) {
		t.Helper()
		listedEvents(t, s, notifications.EventUnroutable, limit, what, want...)
	}
	check(0, "unroutable events", "evt_older", "evt_newer")
	check(1, "unroutable events, limit 1", "evt_older")
	full, err := s.ListEvents(ctx, notifications.EventUnroutable, 1)
	noErr(t, err, "ListEvents")
	same(t, full[0], older, "listed event")

	routed := older
	routed.Status, routed.MerchantID, routed.Version = notifications.EventProcessed, "m_x", 2
	noErr(t, s.SaveEvent(ctx, routed, 1), "SaveEvent routed")
	check(0, "unroutable events after routing one", "evt_newer")
	stale := newer
	stale.Status, stale.Version = notifications.EventProcessed, 3
	wantErr(t, s.SaveEvent(ctx, stale, 2), storeerr.ErrConflict, "stale SaveEvent of an unroutable event")
	check(0, "unroutable events after a conflict", "evt_newer")
}

// Account-level events are listed oldest first, apart from the unroutable
// ones; one of the other environment kept unroutable first moves from
// that list to this one.
func testEventListAccount(t *testing.T, s notifications.EventStore) {
	ctx := context.Background()
	account := func(id string, at time.Time) notifications.Event {
		e := event(id, "settlement_detail_report_batch_1.csv", at)
		e.Item.EventCode, e.Item.OriginalReference, e.Status, e.ProcessedAt = "REPORT_AVAILABLE", "", notifications.EventAccount, &at
		return e
	}
	noErr(t, s.SaveEvent(ctx, account("evt_acct_newer", epoch().Add(time.Minute)), 0), "SaveEvent account newer")
	older := account("evt_acct_older", epoch())
	noErr(t, s.SaveEvent(ctx, older, 0), "SaveEvent account older")
	mismatch := event("evt_acct_mismatch", "PSP1", epoch().Add(2*time.Minute))
	at := mismatch.ReceivedAt
	mismatch.Status, mismatch.UnroutableAt, mismatch.UnroutableReason = notifications.EventUnroutable, &at, "live flag"
	noErr(t, s.SaveEvent(ctx, mismatch, 0), "SaveEvent unroutable")
	listedEvents(t, s, notifications.EventAccount, 0, "account-level events", "evt_acct_older", "evt_acct_newer")
	listedEvents(t, s, notifications.EventUnroutable, 0, "unroutable events", "evt_acct_mismatch")
	kept := mismatch
	kept.Status, kept.Version = notifications.EventAccount, 2
	noErr(t, s.SaveEvent(ctx, kept, 1), "SaveEvent unroutable → account")
	listedEvents(t, s, notifications.EventAccount, 0, "account-level events after one moved", "evt_acct_older", "evt_acct_newer", "evt_acct_mismatch")
	listedEvents(t, s, notifications.EventUnroutable, 0, "unroutable events after one moved")
	got, err := s.GetEvent(ctx, older.ID)
	noErr(t, err, "GetEvent")
	same(t, got, older, "account-level event")
}
