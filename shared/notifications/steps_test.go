package notifications_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

// testHold is how long every counted store call lasts at least in the
// test, so calls made concurrently overlap however the goroutines are
// scheduled.
const testHold = 50 * time.Millisecond

// stepCounter wraps every store port and the queue of a Receiver and
// counts sequential store steps: a step starts when a call starts while no
// other call is under way; calls that overlap belong to one step.
type stepCounter struct {
	hold     time.Duration
	mu       sync.Mutex
	inflight int
	steps    [][]string // the calls of each step
}

func (c *stepCounter) call(name string, fn func()) {
	c.mu.Lock()
	if c.inflight == 0 {
		c.steps = append(c.steps, nil)
	}
	c.inflight++
	c.steps[len(c.steps)-1] = append(c.steps[len(c.steps)-1], name)
	c.mu.Unlock()
	time.Sleep(c.hold)
	fn()
	c.mu.Lock()
	c.inflight--
	c.mu.Unlock()
}

func (c *stepCounter) reset() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.steps
	c.steps = nil
	return s
}

func (c *stepCounter) writes() (n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.steps {
		for _, name := range s {
			if strings.HasPrefix(name, "Save") || strings.HasPrefix(name, "Put") || name == "CommitItem" || name == "Enqueue" {
				n++
			}
		}
	}
	return n
}

// counted is the embedded store and a queue, every call counted.
type counted struct {
	tenant.Store // only the methods below are used by the receiver
	st           *embedded.Store
	q            queue.Queue
	c            *stepCounter
}

func (s *counted) GetEvent(ctx context.Context, id string) (e notifications.Event, err error) {
	s.c.call("GetEvent", func() { e, err = s.st.GetEvent(ctx, id) })
	return
}

func (s *counted) SaveEvent(ctx context.Context, e notifications.Event, prev int64) (err error) {
	s.c.call("SaveEvent", func() { err = s.st.SaveEvent(ctx, e, prev) })
	return
}

func (s *counted) ListPaymentEvents(ctx context.Context, psp string) (es []notifications.Event, err error) {
	s.c.call("ListPaymentEvents", func() { es, err = s.st.ListPaymentEvents(ctx, psp) })
	return
}

func (s *counted) ListUnroutableEvents(ctx context.Context, limit int) (es []notifications.Event, err error) {
	s.c.call("ListUnroutableEvents", func() { es, err = s.st.ListUnroutableEvents(ctx, limit) })
	return
}

func (s *counted) PutSession(ctx context.Context, x payments.Session) (err error) {
	s.c.call("PutSession", func() { err = s.st.PutSession(ctx, x) })
	return
}

func (s *counted) GetSession(ctx context.Context, id string) (x payments.Session, err error) {
	s.c.call("GetSession", func() { x, err = s.st.GetSession(ctx, id) })
	return
}

func (s *counted) GetPayment(ctx context.Context, psp string) (p payments.Payment, err error) {
	s.c.call("GetPayment", func() { p, err = s.st.GetPayment(ctx, psp) })
	return
}

func (s *counted) SavePayment(ctx context.Context, p payments.Payment, prev int64) (err error) {
	s.c.call("SavePayment", func() { err = s.st.SavePayment(ctx, p, prev) })
	return
}

func (s *counted) GetMerchant(ctx context.Context, id string) (m tenant.Merchant, err error) {
	s.c.call("GetMerchant", func() { m, err = s.st.GetMerchant(ctx, id) })
	return
}

func (s *counted) ListSubscriptions(ctx context.Context, id string) (subs []tenant.Subscription, err error) {
	s.c.call("ListSubscriptions", func() { subs, err = s.st.ListSubscriptions(ctx, id) })
	return
}

func (s *counted) GetDelivery(ctx context.Context, id string) (d webhooks.Delivery, err error) {
	s.c.call("GetDelivery", func() { d, err = s.st.GetDelivery(ctx, id) })
	return
}

func (s *counted) SaveDelivery(ctx context.Context, d webhooks.Delivery, prev int64) (err error) {
	s.c.call("SaveDelivery", func() { err = s.st.SaveDelivery(ctx, d, prev) })
	return
}

func (s *counted) ListDeliveries(ctx context.Context, m string, st webhooks.Status, limit int) (ds []webhooks.Delivery, err error) {
	s.c.call("ListDeliveries", func() { ds, err = s.st.ListDeliveries(ctx, m, st, limit) })
	return
}

func (s *counted) CommitItem(ctx context.Context, ic notifications.ItemCommit) (err error) {
	s.c.call("CommitItem", func() { err = s.st.CommitItem(ctx, ic) })
	return
}

func (s *counted) Enqueue(ctx context.Context, j queue.Job, delay time.Duration) (err error) {
	s.c.call("Enqueue", func() { err = s.q.Enqueue(ctx, j, delay) })
	return
}

// TestStoreStepsPerItem: with the embedded store's Outbox a notification
// item takes at most 4 sequential store steps (issue target), one of them
// its only write, and is durable when accepted; step by step it takes
// about a dozen. The steps are listed in the log.
func TestStoreStepsPerItem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outbox   bool
		maxSteps int
	}{
		{"outbox", true, 4},
		{"stepwise", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			c := &stepCounter{hold: testHold}
			w := &counted{Store: f.st, st: f.st, q: f.q, c: c}
			f.r.Events, f.r.Payments, f.r.Tenants, f.r.Deliveries, f.r.Queue = w, w, w, w, w
			f.r.History = f.st // with the Outbox, written in the item's transaction
			if tc.outbox {
				f.r.Outbox = w
			}
			auth := f.signed(authorisation("PSP1", true))
			for _, step := range []struct {
				name     string
				item     func() error
				maxSteps int // 0: the target
			}{
				{"AUTHORISATION (routed by metadata, record created)", func() error { return f.r.Accept(f.ctx, note(auth)) }, 0},
				{"CAPTURE (routed by the payment record)", func() error { return f.r.Accept(f.ctx, note(f.signed(capture("PSP1", "CAP1")))) }, 0},
				{"duplicate AUTHORISATION", func() error { return f.r.Accept(f.ctx, note(auth)) }, 0},
			} {
				c.reset()
				f.must(step.item())
				writes := c.writes()
				steps := c.reset()
				t.Logf("%s: %d sequential store steps, %d writes: %v", step.name, len(steps), writes, steps)
				if tc.outbox && len(steps) > tc.maxSteps {
					t.Errorf("%s: %d sequential store steps, want at most %d: %v", step.name, len(steps), tc.maxSteps, steps)
				}
				if tc.outbox && writes != 1 {
					t.Errorf("%s: %d writes, want 1: %v", step.name, writes, steps)
				}
			}
			// The outcome is the same either way.
			if n := len(f.deliveries("m_a")); n != 3 || f.jobs() != 3 {
				t.Fatalf("%d deliveries and %d jobs, want 3 each", n, f.jobs())
			}
			p, err := f.st.GetPayment(f.ctx, "PSP1")
			f.must(err)
			if p.CapturedValue != 400 || len(p.History) != 2 {
				t.Fatalf("payment: %+v", p)
			}
			// The merchant's event history holds both, once, newest first.
			evs, err := f.st.ListMerchantEvents(f.ctx, "m_a", notifications.EventQuery{Limit: 10})
			f.must(err)
			if len(evs) != 2 || evs[0].EventCode != "CAPTURE" || evs[1].EventCode != "AUTHORISATION" {
				t.Fatalf("merchant event history: %+v", evs)
			}
		})
	}
}

// BenchmarkNotificationItem reports the sequential store steps and the
// writes of one notification item (an AUTHORISATION and a CAPTURE of the
// same payment alternate), with the embedded store's Outbox and step by
// step (as with SQS): steps/op and writes/op, for BENCHMARKS.md. Every
// store call is held 2 ms so that concurrent calls are seen to overlap;
// time/op is therefore not the pipeline's speed.
func BenchmarkNotificationItem(b *testing.B) {
	for _, outbox := range []bool{true, false} {
		name := "stepwise"
		if outbox {
			name = "outbox"
		}
		b.Run(name, func(b *testing.B) {
			f := newFixture(b)
			c := &stepCounter{hold: 2 * time.Millisecond}
			w := &counted{Store: f.st, st: f.st, q: f.q, c: c}
			f.r.Events, f.r.Payments, f.r.Tenants, f.r.Deliveries, f.r.Queue = w, w, w, w, w
			if outbox {
				f.r.Outbox = w
			}
			steps, writes, items := 0, 0, 0
			i := 0
			for b.Loop() {
				i++
				psp := "PSPB" + strconv.Itoa(i)
				for _, it := range []upstream.NotificationRequestItem{authorisation(psp, true), capture(psp, "CAPB"+strconv.Itoa(i))} {
					c.reset()
					f.must(f.r.Accept(f.ctx, note(f.signed(it))))
					writes += c.writes()
					steps += len(c.reset())
					items++
				}
			}
			b.ReportMetric(float64(steps)/float64(items), "steps/op")
			b.ReportMetric(float64(writes)/float64(items), "writes/op")
		})
	}
}

// Through the Outbox too, an unroutable item is kept with its reason and
// the time it was first found unroutable, so the operator's list shows it.
func TestOutboxKeepsUnroutableReason(t *testing.T) {
	f := newFixture(t)
	f.r.Outbox = f.st
	auth := authorisation("PSP9", true)
	auth.AdditionalData["metadata.merchantId"], auth.MerchantAccountCode = "m_none", "NoneECOM"
	f.must(f.r.Accept(f.ctx, note(f.signed(auth))))
	list, err := f.r.ListUnroutable(f.ctx, 0)
	f.must(err)
	if len(list) != 1 || list[0].UnroutableReason != "unknown merchant m_none" || list[0].UnroutableAt == nil {
		t.Fatalf("unroutable list: %+v", list)
	}
}
