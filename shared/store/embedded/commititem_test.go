package embedded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

// TestCommitItemIsOneTransaction: on the embedded store a commit whose
// condition fails writes nothing at all (the contract, storetest, allows
// the parts that succeeded to stay; this store writes them in one
// transaction).
func TestCommitItemIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	s := openTemp(t, clock.NewFake(at))
	if err := s.Write(ctx, payments.Write{PSP: "PSP1", Put: &payments.Head{PSPReference: "PSP1", MerchantID: "m_a", Version: 1}}); err != nil {
		t.Fatal(err)
	}
	ev := notifications.Event{ID: "evt_1", PaymentPSP: "PSP1", Status: notifications.EventReceived, Received: 1,
		ReceivedAt: at, UpdatedAt: at, Version: 1}
	d := webhooks.Delivery{ID: "msg_new", MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "CAPTURE",
		PSPReference: "PSP1", Payload: []byte(`{}`), Status: webhooks.StatusPending, Enqueued: true,
		CreatedAt: at, UpdatedAt: at, Version: 1}
	stale := notifications.ItemCommit{Event: ev, Payment: &payments.Write{PSP: "PSP1", Put: &payments.Head{PSPReference: "PSP1", Version: 6}},
		Deliveries: []webhooks.Delivery{d}}
	if err := s.CommitItem(ctx, stale); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("stale payment version: %v, want a conflict", err)
	}
	if _, err := s.GetEvent(ctx, "evt_1"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("event written by a failed commit: %v", err)
	}
	if _, err := s.GetDelivery(ctx, "msg_new"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("delivery written by a failed commit: %v", err)
	}
}
