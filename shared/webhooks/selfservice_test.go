package webhooks_test

import (
	"testing"

	"github.com/yp/paysvc/shared/webhooks"
)

// A merchant's retry reads its delivery once: it resets the delivery from
// that read and marks it enqueued from that save (a concurrent change
// makes a save read again), so it is one read, the reset, the job, the
// mark: four sequential store steps, not six.
func TestRetryReadsItsDeliveryOnce(t *testing.T) {
	e := newEnv(t)
	e.newDelivery("msg_failed")
	_, err := webhooks.MutateDelivery(e.ctx, e.st, "msg_failed", func(d *webhooks.Delivery) error {
		d.Status, d.Enqueued, d.Attempts = webhooks.StatusFailed, false, 10
		return nil
	})
	e.must(err)
	counted := &countingDeliveries{DeliveryStore: e.st}
	s := &webhooks.SelfService{Deliveries: counted, Queue: e.q, Clock: e.clk}
	r, err := s.Retry(e.ctx, "m_a", "msg_failed")
	e.must(err)
	if r.NextAttempt != 11 || r.Delivery.Status != webhooks.StatusPending || !r.Delivery.Enqueued {
		t.Fatalf("retried: %+v", r)
	}
	if got := e.delivery("msg_failed"); got.Status != webhooks.StatusPending || !got.Enqueued || got.Redrives != 1 {
		t.Fatalf("stored after the retry: %+v", got)
	}
	if counted.reads != 1 || counted.saves != 2 {
		t.Fatalf("%d reads and %d saves, want 1 and 2", counted.reads, counted.saves)
	}
}
