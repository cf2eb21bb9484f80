package embedded_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

// Every kind of record without an expiry of its own is deleted by the
// sweep once past its retention, with its index entries, and not before.
func TestSweepRetention(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	s := openTemp(t, clk)
	must(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &payments.Head{PSPReference: "PSP1", MerchantID: "m_a", Version: 1, CreatedAt: t0, UpdatedAt: t0},
		Entries: []payments.Entry{{Ref: "op_1", Kind: payments.OpCapture, Version: 1}},
		Facts:   []payments.Fact{{ID: "f1", At: t0, Kind: "payment", Origin: "api"}}}))
	must(t, s.SaveEvent(ctx, notifications.Event{ID: "evt_1", PaymentPSP: "PSP1", Status: notifications.EventUnroutable,
		ReceivedAt: t0, UpdatedAt: t0, Version: 1}, 0))
	must(t, s.SaveDelivery(ctx, webhooks.Delivery{ID: "dlv_1", MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1",
		Status: webhooks.StatusFailed, CreatedAt: t0, UpdatedAt: t0, Version: 1}, 0))
	must(t, s.PutMerchantEvent(ctx, notifications.MerchantEvent{ID: "evt_2", MerchantID: "m_a", EventCode: "AUTHORISATION",
		PSPReference: "PSP1", PaymentPSP: "PSP1", Payload: []byte(`{}`), CreatedAt: t0}))
	must(t, s.PutJob(ctx, localqueue.StoredJob{ID: "job_1", Job: queue.Job{DeliveryID: "dlv_1", Attempt: 10}, Due: t0, Dead: true, CreatedAt: t0}))

	steps := []struct {
		at      time.Time
		deleted int
	}{
		{t0.Add(store.DeadJobRetention - time.Second), 0},
		{t0.Add(store.DeadJobRetention), 1}, // the dead job
		{t0.Add(store.EventRetention - time.Second), 0},
		{t0.Add(max(store.EventRetention, store.DeliveryRetention)), 3}, // the event, its merchant's history entry and the delivery
		{t0.Add(store.PaymentRetention - time.Second), 0},
		{t0.Add(store.PaymentRetention), 1}, // the payment record
	}
	for _, st := range steps {
		n, err := s.Sweep(st.at)
		must(t, err)
		if n != st.deleted {
			t.Fatalf("Sweep at t0+%s deleted %d, want %d", st.at.Sub(t0), n, st.deleted)
		}
		switch st.deleted {
		case 1:
			if dead, err := s.DeadJobs(ctx, 10); err != nil || len(dead) != 0 {
				t.Fatalf("dead jobs after their retention: %v, %v", dead, err)
			}
		case 3:
			if evs, err := s.ListMerchantEvents(ctx, "m_a", notifications.EventQuery{Limit: 10}); err != nil || len(evs) != 0 {
				t.Fatalf("merchant history after its retention: %v, %v", evs, err)
			}
			if _, err := s.GetEvent(ctx, "evt_1"); !errors.Is(err, storeerr.ErrNotFound) {
				t.Fatalf("event after its retention: %v", err)
			}
			if evs, err := s.ListPaymentEvents(ctx, "PSP1"); err != nil || len(evs) != 0 {
				t.Fatalf("events of PSP1 after their retention: %v, %v", evs, err)
			}
			if ds, err := s.ListDeliveries(ctx, "m_a", "", 0); err != nil || len(ds) != 0 {
				t.Fatalf("deliveries after their retention: %v, %v", ds, err)
			}
		}
	}
	clk.Set(t0)
	if _, err := s.GetPayment(ctx, "PSP1"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("payment after the sweep: %v", err)
	}
	// A new payment under the same reference starts with nothing of the old.
	must(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &payments.Head{PSPReference: "PSP1", MerchantID: "m_a", Version: 1, CreatedAt: t0, UpdatedAt: t0}}))
	if es, err := s.GetEntries(ctx, "PSP1", "op_1"); err != nil || len(es) != 0 {
		t.Fatalf("entries of the swept payment: %v, %v", es, err)
	}
	if fs, _, err := s.Timeline(ctx, "PSP1", "", 10); err != nil || len(fs) != 0 {
		t.Fatalf("timeline of the swept payment: %v, %v", fs, err)
	}
}

// SweepEvery sweeps at the store's clock until its context ends. In a
// synctest bubble: the sweeps' ticker runs on the bubble's fake time, and
// synctest.Wait returns once a sweep due has run.
func TestSweepEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		t0 := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
		clk := clock.NewFake(t0)
		s := openTemp(t, clk)
		must(t, s.SaveEvent(ctx, notifications.Event{ID: "evt_1", PaymentPSP: "PSP1", ReceivedAt: t0, UpdatedAt: t0, Version: 1}, 0))
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.SweepEvery(ctx, time.Millisecond, slog.New(slog.NewJSONHandler(io.Discard, nil)))
		}()
		time.Sleep(20 * time.Millisecond) // twenty sweeps before the retention ends
		synctest.Wait()
		if _, err := s.GetEvent(ctx, "evt_1"); err != nil {
			t.Fatalf("event swept before its retention: %v", err)
		}
		clk.Set(t0.Add(store.EventRetention))
		time.Sleep(time.Millisecond) // the next sweep
		synctest.Wait()
		if _, err := s.GetEvent(ctx, "evt_1"); !errors.Is(err, storeerr.ErrNotFound) {
			t.Fatalf("event not swept: %v", err)
		}
		cancel()
		<-done
	})
}
