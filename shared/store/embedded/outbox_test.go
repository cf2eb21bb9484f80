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

// TestCommitItem: one transaction writes the event, the payment record, the
// new deliveries and their jobs; a version condition failing writes
// nothing; a delivery stored before keeps its state and gets a job only
// when it is pending without one.
func TestCommitItem(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	s := openTemp(t, clock.NewFake(at))
	dl := func(id string) webhooks.Delivery {
		return webhooks.Delivery{ID: id, MerchantID: "m_a", SubscriptionID: "sub_" + id, EventID: "evt_1", EventCode: "CAPTURE",
			PSPReference: "PSP1", Payload: []byte(`{}`), Status: webhooks.StatusPending, Enqueued: true,
			CreatedAt: at, UpdatedAt: at, Version: 1}
	}
	// Stored before: one delivered, one pending without a job.
	delivered := dl("msg_done")
	delivered.Status, delivered.Enqueued = webhooks.StatusDelivered, false
	waiting := dl("msg_wait")
	waiting.Enqueued = false
	for _, d := range []webhooks.Delivery{delivered, waiting} {
		if err := s.SaveDelivery(ctx, d, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SavePayment(ctx, payments.Payment{PSPReference: "PSP1", MerchantID: "m_a", Version: 1}, 0); err != nil {
		t.Fatal(err)
	}
	ev := notifications.Event{ID: "evt_1", PaymentPSP: "PSP1", Status: notifications.EventProcessed, Received: 1,
		ReceivedAt: at, UpdatedAt: at, Version: 1}
	pay := payments.Payment{PSPReference: "PSP1", MerchantID: "m_a", CapturedValue: 400, Version: 2}
	c := notifications.ItemCommit{Event: ev, Payment: &pay, PrevPaymentVersion: 1,
		Deliveries: []webhooks.Delivery{dl("msg_new"), delivered, waiting}}
	for i := range c.Deliveries {
		c.Deliveries[i].Version, c.Deliveries[i].Status = 1, webhooks.StatusPending
	}

	// The payment moved meanwhile: nothing is written.
	stale := c
	stale.PrevPaymentVersion = 5
	stale.Payment = &payments.Payment{PSPReference: "PSP1", Version: 6}
	if err := s.CommitItem(ctx, stale); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("stale payment version: %v, want a conflict", err)
	}
	if _, err := s.GetEvent(ctx, "evt_1"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("event written by a failed commit: %v", err)
	}
	if _, err := s.GetDelivery(ctx, "msg_new"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("delivery written by a failed commit: %v", err)
	}

	if err := s.CommitItem(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitItem(ctx, c); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("the same commit again: %v, want a conflict (the event exists)", err)
	}
	if e, err := s.GetEvent(ctx, "evt_1"); err != nil || e.Status != notifications.EventProcessed {
		t.Fatalf("event: %+v, %v", e, err)
	}
	if p, err := s.GetPayment(ctx, "PSP1"); err != nil || p.CapturedValue != 400 || p.Version != 2 {
		t.Fatalf("payment: %+v, %v", p, err)
	}
	for id, want := range map[string]webhooks.Delivery{
		"msg_new":  {Status: webhooks.StatusPending, Enqueued: true, Version: 1},
		"msg_done": {Status: webhooks.StatusDelivered, Enqueued: false, Version: 1},
		"msg_wait": {Status: webhooks.StatusPending, Enqueued: true, Version: 2},
	} {
		d, err := s.GetDelivery(ctx, id)
		if err != nil || d.Status != want.Status || d.Enqueued != want.Enqueued || d.Version != want.Version {
			t.Fatalf("delivery %s: %+v, %v; want %+v", id, d, err, want)
		}
	}
	jobs, err := s.DueJobs(ctx, at, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, j := range jobs {
		got[j.Job.DeliveryID] += j.Job.Attempt
	}
	if len(jobs) != 2 || got["msg_new"] != 1 || got["msg_wait"] != 1 {
		t.Fatalf("jobs: %+v, want attempt 1 of msg_new and msg_wait", jobs)
	}
}
