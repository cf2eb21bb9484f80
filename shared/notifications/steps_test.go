package notifications_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/webhooks"
)

// stepCounter wraps every store port and the queue of a Receiver and
// counts sequential store steps: a step starts when a call starts while no
// other call is under way; calls that overlap belong to one step. Every
// call first sleeps hold: in a synctest bubble (the test) that is fake
// time, which passes only once every goroutine is blocked, so calls made
// concurrently always overlap and calls made one after the other never
// do, however the machine schedules them.
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
			if strings.HasPrefix(name, "Save") || strings.HasPrefix(name, "Put") || name == "Write" || name == "CommitItem" || name == "Enqueue" {
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

func (s *counted) ListEvents(ctx context.Context, status notifications.EventStatus, limit int) (es []notifications.Event, err error) {
	s.c.call("ListEvents", func() { es, err = s.st.ListEvents(ctx, status, limit) })
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

func (s *counted) GetPayment(ctx context.Context, psp string) (h payments.Head, err error) {
	s.c.call("GetPayment", func() { h, err = s.st.GetPayment(ctx, psp) })
	return
}

func (s *counted) GetEntries(ctx context.Context, psp string, refs ...string) (es []payments.Entry, err error) {
	s.c.call("GetEntries", func() { es, err = s.st.GetEntries(ctx, psp, refs...) })
	return
}

func (s *counted) Timeline(ctx context.Context, psp, cursor string, limit int) (fs []payments.Fact, next string, err error) {
	s.c.call("Timeline", func() { fs, next, err = s.st.Timeline(ctx, psp, cursor, limit) })
	return
}

func (s *counted) Write(ctx context.Context, w payments.Write) (err error) {
	s.c.call("Write", func() { err = s.st.Write(ctx, w) })
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

// TestStoreStepsPerItem: a notification item takes at most 4 sequential
// store steps (the target) — the reads, the commit, the enqueue, the mark
// — and 2 writes plus one enqueue per delivery, on the embedded store with
// the notifications function's tenant read cache; a duplicate takes 2
// steps and 1 write. The steps are
// listed in the log.
func TestStoreStepsPerItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		c := &stepCounter{hold: time.Millisecond}
		w := &counted{Store: f.st, st: f.st, q: f.q, c: c}
		f.r.Events, f.r.Payments, f.r.Deliveries, f.r.Queue = w, w, w, w
		// Merchant and subscription reads cached per instance, as the
		// notifications function wires them (app.NotificationsHandler).
		f.r.Tenants = tenant.NewReadCache(w, f.clk, time.Minute)
		auth := f.signed(authorisation("PSP1", true))
		for _, step := range []struct {
			name             string
			item             func() error
			maxSteps, writes int
		}{
			{"AUTHORISATION (routed by metadata, record created)", func() error { return f.accept(note(auth)) }, 4, 3},
			{"CAPTURE (routed by the payment record; two deliveries)", func() error { return f.accept(note(f.signed(capture("PSP1", "CAP1")))) }, 4, 4},
			{"duplicate AUTHORISATION", func() error { return f.accept(note(auth)) }, 2, 1},
		} {
			c.reset()
			f.must(step.item())
			writes := c.writes()
			steps := c.reset()
			t.Logf("%s: %d sequential store steps, %d writes: %v", step.name, len(steps), writes, steps)
			if len(steps) > step.maxSteps {
				t.Errorf("%s: %d sequential store steps, want at most %d: %v", step.name, len(steps), step.maxSteps, steps)
			}
			if writes != step.writes {
				t.Errorf("%s: %d writes, want %d: %v", step.name, writes, step.writes, steps)
			}
		}
		if n := len(f.deliveries("m_a")); n != 3 || f.jobs() != 3 {
			t.Fatalf("%d deliveries and %d jobs, want 3 each", n, f.jobs())
		}
		h, err := f.st.GetPayment(f.ctx, "PSP1")
		f.must(err)
		facts, _, err := f.st.Timeline(f.ctx, "PSP1", "", 10)
		f.must(err)
		if h.View().Captured != 400 || len(facts) != 2 || facts[0].Kind != "AUTHORISATION" || facts[1].Kind != "CAPTURE" {
			t.Fatalf("payment: %+v, timeline %+v", h, facts)
		}
		// The merchant's event history holds both, once, newest first.
		evs, err := f.st.ListMerchantEvents(f.ctx, "m_a", notifications.EventQuery{Limit: 10})
		f.must(err)
		if len(evs) != 2 || evs[0].EventCode != "CAPTURE" || evs[1].EventCode != "AUTHORISATION" {
			t.Fatalf("merchant event history: %+v", evs)
		}
	})
}

// BenchmarkNotificationItem reports the sequential store steps and the
// writes of one notification item (an AUTHORISATION and a CAPTURE of the
// same payment alternate) on the embedded store: steps/op and writes/op,
// for BENCHMARKS.md. Every store call is held 2 ms of real time so that
// concurrent calls are seen to overlap (TestStoreStepsPerItem counts the
// same on fake time); time/op is therefore not the pipeline's speed.
func BenchmarkNotificationItem(b *testing.B) {
	f := newFixture(b)
	c := &stepCounter{hold: 2 * time.Millisecond}
	w := &counted{Store: f.st, st: f.st, q: f.q, c: c}
	f.r.Events, f.r.Payments, f.r.Deliveries, f.r.Queue = w, w, w, w
	f.r.Tenants = tenant.NewReadCache(w, f.clk, time.Minute) // as app.NotificationsHandler wires it
	steps, writes, items := 0, 0, 0
	i := 0
	for b.Loop() {
		i++
		psp := "PSPB" + strconv.Itoa(i)
		for _, it := range []upstream.NotificationRequestItem{authorisation(psp, true), capture(psp, "CAPB"+strconv.Itoa(i))} {
			c.reset()
			f.must(f.accept(note(f.signed(it))))
			writes += c.writes()
			steps += len(c.reset())
			items++
		}
	}
	b.ReportMetric(float64(steps)/float64(items), "steps/op")
	b.ReportMetric(float64(writes)/float64(items), "writes/op")
}

// An unroutable item is kept with its reason and the time it was first
// found unroutable, so the operator's list shows it.
func TestUnroutableKeepsItsReason(t *testing.T) {
	f := newFixture(t)
	counted := &unroutableCount{}
	f.r.Metrics = counted
	auth := authorisation("PSP9", true)
	auth.AdditionalData["metadata.merchantId"], auth.MerchantAccountCode = "m_none", "NoneECOM"
	f.must(f.accept(note(f.signed(auth))))
	list, err := f.r.ListUnroutable(f.ctx, 0)
	f.must(err)
	if len(list) != 1 || list[0].UnroutableReason != "unknown merchant m_none" || list[0].UnroutableAt == nil {
		t.Fatalf("unroutable list: %+v", list)
	}
	if len(counted.reasons) != 1 || counted.reasons[0] != "unknown merchant m_none" {
		t.Fatalf("unroutable metric: %v", counted.reasons)
	}
}

// unroutableCount records the unroutable, live-mismatch and account-level
// metrics.
type unroutableCount struct {
	reasons    []string
	mismatches int
	account    []string
}

func (c *unroutableCount) NotificationAccountLevel(code string) { c.account = append(c.account, code) }

func (c *unroutableCount) NotificationUnroutable(reason string) {
	c.reasons = append(c.reasons, reason)
}

func (c *unroutableCount) NotificationLiveMismatch() { c.mismatches++ }

// A notification whose live flag is not the service's environment is
// accepted (so the platform stops sending it), kept unroutable with why,
// counted and never applied or delivered: not on a repeat, not by an
// operator's route. The same item with the right flag is.
func TestNotificationOfTheOtherEnvironmentIsKept(t *testing.T) {
	for _, tc := range []struct {
		name       string
		live       bool
		sent, good string
	}{
		{"live flag in the test environment", false, "true", "false"},
		{"test flag in the live environment", true, "false", "true"},
		{"no flag in the live environment", true, "", "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			counted := &unroutableCount{}
			f.r.Metrics, f.r.Live = counted, tc.live
			auth := f.signed(authorisation("PSPENV1", true))
			sent := note(auth)
			sent.Live = tc.sent
			f.must(f.accept(sent))
			f.must(f.accept(sent)) // sent again: counted, nothing changes
			ev := f.event(auth)
			if ev.Status != notifications.EventUnroutable || !strings.Contains(ev.UnroutableReason, "live flag") || ev.Received != 1 {
				t.Fatalf("event: %+v", ev)
			}
			if _, err := f.st.GetPayment(f.ctx, "PSPENV1"); !errors.Is(err, storeerr.ErrNotFound) {
				t.Fatalf("payment record: %v, want none", err)
			}
			if _, err := f.r.Route(f.ctx, ev.ID, &notifications.RouteTo{MerchantID: "m_a"}); err == nil {
				t.Fatal("an operator routed it")
			}
			if len(f.deliveries("m_a")) != 0 || f.jobs() != 0 || counted.mismatches != 2 || len(counted.reasons) != 0 {
				t.Fatalf("deliveries %d, jobs %d, metrics %+v", len(f.deliveries("m_a")), f.jobs(), counted)
			}
			if !strings.Contains(f.logs.String(), "its live flag is not this service's environment") {
				t.Fatalf("not logged:\n%s", f.logs.String())
			}
			good := note(auth)
			good.Live = tc.good
			f.must(f.accept(good))
			if ev := f.event(auth); !ev.DeliveriesEnqueued() || len(f.deliveries("m_a")) != 1 {
				t.Fatalf("with the environment's flag: %+v", ev)
			}
		})
	}
}
