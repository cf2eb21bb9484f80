package webhooks_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/hang"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// t0 is close to the wall clock, so Standard Webhooks timestamps verify.
var t0 = time.Now().UTC().Truncate(time.Second)

// env is a dispatcher over the embedded store and the local queue, with a
// receiver answering from a script.
type env struct {
	t      *testing.T
	ctx    context.Context
	clk    *clock.Fake
	st     *embedded.Store
	q      *localqueue.Queue
	d      *webhooks.Dispatcher
	admin  *webhooks.Admin
	srv    *httptest.Server
	logs   *bytes.Buffer
	mu     sync.Mutex
	got    []*http.Request
	bodies [][]byte
	answer func(n int) int    // status for the n-th request (1-based)
	reply  func(n int) string // body of the n-th answer (none when nil)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), clk: clock.NewFake(t0), logs: &bytes.Buffer{}}
	st, err := embedded.Open(filepath.Join(t.TempDir(), "paysvc.db"), embedded.WithClock(e.clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e.st = st
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.got = append(e.got, r)
		e.bodies = append(e.bodies, body)
		n := len(e.got)
		answer, reply := e.answer, e.reply
		e.mu.Unlock()
		status := http.StatusOK
		if answer != nil {
			status = answer(n)
		}
		w.WriteHeader(status)
		if reply != nil {
			_, _ = io.WriteString(w, reply(n))
		}
	}))
	t.Cleanup(e.srv.Close)
	log := slog.New(slog.NewJSONHandler(&lockedBuffer{b: e.logs}, nil))
	e.q = localqueue.New(st, e.clk, log, 0)
	e.d = &webhooks.Dispatcher{
		Deliveries: st, Tenants: st, Clock: e.clk, Log: log, Rand: func() float64 { return 0.5 },
		Sender: sender.New(sender.Config{Timeout: 30 * time.Second, AllowLocal: true}), // bounds a failure only
	}
	e.admin = &webhooks.Admin{Deliveries: st, Queue: e.q, DeadLetters: e.q, Clock: e.clk}
	e.must(st.PutMerchant(e.ctx, tenant.Merchant{ID: "m_a", Name: "A", Country: "NL", Active: true, CreatedAt: t0}))
	e.must(st.PutSubscription(e.ctx, tenant.Subscription{
		ID: "sub_1", MerchantID: "m_a", URL: e.srv.URL + "/hooks", Enabled: true, CreatedAt: t0,
		Secrets: []tenant.Secret{{Value: secretNew, CreatedAt: t0}},
	}))
	return e
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// newDelivery stores a pending delivery and enqueues its first attempt.
func (e *env) newDelivery(id string) webhooks.Delivery {
	e.t.Helper()
	d, created, err := webhooks.CreateDelivery(e.ctx, e.st, webhooks.Delivery{
		ID: id, MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "AUTHORISATION",
		PSPReference: "PSP1", Payload: []byte(`{"live":false,"notificationItems":[{"NotificationRequestItem":{"eventCode":"AUTHORISATION"}}]}`),
		Status: webhooks.StatusPending, Enqueued: true, CreatedAt: e.clk.Now(), UpdatedAt: e.clk.Now(),
	})
	e.must(err)
	if !created {
		e.t.Fatalf("delivery %s existed", id)
	}
	e.must(e.q.Enqueue(e.ctx, queue.Job{DeliveryID: id, Attempt: 1}, 0))
	return d
}

// run processes the jobs due now.
func (e *env) run() int {
	e.t.Helper()
	n, err := e.q.RunDue(e.ctx, e.d.Process)
	e.must(err)
	return n
}

// advanceTo moves the clock to the next attempt's time of delivery id.
func (e *env) advanceToNext(id string) {
	e.t.Helper()
	d := e.delivery(id)
	if d.NextAttemptAt == nil {
		e.t.Fatalf("delivery %s has no next attempt: %+v", id, d)
	}
	e.clk.Set(*d.NextAttemptAt)
}

func (e *env) delivery(id string) webhooks.Delivery {
	e.t.Helper()
	d, err := e.st.GetDelivery(e.ctx, id)
	e.must(err)
	return d
}

func (e *env) requests() ([]*http.Request, [][]byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*http.Request(nil), e.got...), append([][]byte(nil), e.bodies...)
}

// TestFailTwiceThenSucceed: attempts 1, 2, 3 with one X-Webhook-Id, each
// re-signed with its own timestamp, at the scheduled times.
func TestFailTwiceThenSucceed(t *testing.T) {
	e := newEnv(t)
	e.answer = func(n int) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}
	e.newDelivery("msg_a")
	if e.run() != 1 {
		t.Fatal("first attempt not made")
	}
	d := e.delivery("msg_a")
	if d.Status != webhooks.StatusPending || d.Attempts != 1 || d.LastStatusCode != 500 || d.LastError != "HTTP 500 Internal Server Error" ||
		!d.NextAttemptAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after attempt 1: %+v", d)
	}
	if e.run() != 0 {
		t.Fatal("the retry ran before its time")
	}
	e.advanceToNext("msg_a")
	e.run()
	if d := e.delivery("msg_a"); d.Attempts != 2 || !d.NextAttemptAt.Equal(t0.Add(5*time.Second+5*time.Minute)) {
		t.Fatalf("after attempt 2: %+v", d)
	}
	e.advanceToNext("msg_a")
	e.run()
	d = e.delivery("msg_a")
	if d.Status != webhooks.StatusDelivered || d.Attempts != 3 || d.DeliveredAt == nil || d.LastError != "" {
		t.Fatalf("after attempt 3: %+v", d)
	}
	reqs, bodies := e.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var stamps []string
	for i, r := range reqs {
		if r.Header.Get("X-Webhook-Id") != "msg_a" || r.Header.Get("X-Webhook-Delivery-Attempt") != strconv.Itoa(i+1) {
			t.Fatalf("request %d headers: %v", i+1, r.Header)
		}
		stamps = append(stamps, r.Header.Get("X-Webhook-Timestamp"))
		if err := verify.Verify(secretNew, r.Header, bodies[i], e.clk.Now(), time.Hour); err != nil {
			t.Fatalf("request %d does not verify: %v", i+1, err)
		}
	}
	if stamps[0] == stamps[1] || stamps[1] == stamps[2] {
		t.Fatalf("attempts not re-signed with their own timestamps: %v", stamps)
	}
	if e.run() != 0 {
		t.Fatal("a delivered job ran again")
	}
}

// TestNeverSucceedsEndsFailedThenRedrive: ten attempts on the schedule,
// then failed and dead-lettered; redriving gives it new attempts.
func TestNeverSucceedsEndsFailedThenRedrive(t *testing.T) {
	e := newEnv(t)
	e.answer = func(int) int { return http.StatusBadGateway }
	e.newDelivery("msg_b")
	e.run()
	for attempt := 2; attempt <= webhooks.MaxAttempts; attempt++ {
		before := e.clk.Now()
		e.advanceToNext("msg_b")
		if got, want := e.clk.Now().Sub(before), webhooks.NominalDelay(attempt); got != want {
			t.Fatalf("wait before attempt %d: %s, want %s", attempt, got, want)
		}
		if e.run() != 1 {
			t.Fatalf("attempt %d not made", attempt)
		}
	}
	d := e.delivery("msg_b")
	if d.Status != webhooks.StatusFailed || d.Attempts != webhooks.MaxAttempts || d.NextAttemptAt != nil {
		t.Fatalf("after the last attempt: %+v", d)
	}
	dead, err := e.q.ReceiveDeadLetters(e.ctx, 10)
	e.must(err)
	if len(dead) != 1 || dead[0].Job.DeliveryID != "msg_b" {
		t.Fatalf("dead letters: %+v", dead)
	}
	failed, err := e.admin.ListDeliveries(e.ctx, "m_a", webhooks.StatusFailed, 0)
	e.must(err)
	if len(failed) != 1 || failed[0].ID != "msg_b" || failed[0].LastError != "HTTP 502 Bad Gateway" {
		t.Fatalf("failed deliveries: %+v", failed)
	}

	// The receiver is fixed; redriving the DLQ delivers it.
	e.answer = func(int) int { return http.StatusOK }
	res, err := e.admin.RedriveDeadLetterQueue(e.ctx)
	e.must(err)
	if len(res.Redriven) != 1 || res.Redriven[0] != "msg_b" || res.Dropped != 0 {
		t.Fatalf("DLQ redrive: %+v", res)
	}
	if d := e.delivery("msg_b"); d.Status != webhooks.StatusPending || d.Attempts != 0 || d.Redrives != 1 || !d.Enqueued {
		t.Fatalf("after redrive: %+v", d)
	}
	if e.run() != 1 {
		t.Fatal("the redriven delivery was not attempted")
	}
	d = e.delivery("msg_b")
	if d.Status != webhooks.StatusDelivered || d.Attempts != 1 {
		t.Fatalf("after the redriven attempt: %+v", d)
	}
	// The history keeps the last MaxHistory attempts: 2…10 of the first
	// run, then attempt 1 after the redrive.
	if h := d.History; len(h) != webhooks.MaxHistory || h[0].Number != 2 || h[8].Number != 10 || h[8].StatusCode != 502 ||
		h[9].Number != 1 || h[9].StatusCode != 200 || h[9].Error != "" {
		t.Fatalf("history after the redrive: %+v", h)
	}
	reqs, _ := e.requests()
	if last := reqs[len(reqs)-1]; last.Header.Get("X-Webhook-Delivery-Attempt") != "1" || last.Header.Get("X-Webhook-Id") != "msg_b" {
		t.Fatalf("redriven attempt headers: %v", last.Header)
	}
	if dead, _ := e.q.ReceiveDeadLetters(e.ctx, 10); len(dead) != 0 {
		t.Fatalf("dead letters left: %+v", dead)
	}
}

func TestRedriveDeliveries(t *testing.T) {
	e := newEnv(t)
	e.answer = func(int) int { return http.StatusInternalServerError }
	for _, id := range []string{"msg_1", "msg_2", "msg_3"} {
		e.newDelivery(id)
	}
	e.run()
	// Make msg_1 and msg_2 fail for good (as after their last attempt).
	for _, id := range []string{"msg_1", "msg_2"} {
		_, err := webhooks.MutateDelivery(e.ctx, e.st, id, func(d *webhooks.Delivery) error {
			d.Status, d.Attempts = webhooks.StatusFailed, webhooks.MaxAttempts
			return nil
		})
		e.must(err)
	}
	if _, err := e.admin.RedriveDeliveries(e.ctx, "m_a", webhooks.RedriveOptions{DeliveryID: "msg_3"}); !errors.Is(err, webhooks.ErrNotRedrivable) {
		t.Fatalf("redrive of a pending delivery: %v, want ErrNotRedrivable", err)
	}
	if _, err := e.admin.RedriveDeliveries(e.ctx, "m_other", webhooks.RedriveOptions{DeliveryID: "msg_1"}); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("redrive of another merchant's delivery: %v, want not found", err)
	}
	ids, err := e.admin.RedriveDeliveries(e.ctx, "m_a", webhooks.RedriveOptions{DeliveryID: "msg_1"})
	e.must(err)
	if len(ids) != 1 || ids[0] != "msg_1" {
		t.Fatalf("redrive by id: %v", ids)
	}
	ids, err = e.admin.RedriveDeliveries(e.ctx, "m_a", webhooks.RedriveOptions{})
	e.must(err)
	if len(ids) != 1 || ids[0] != "msg_2" {
		t.Fatalf("redrive of all failed: %v (msg_1 is pending again)", ids)
	}
	for _, id := range []string{"msg_1", "msg_2"} {
		if d := e.delivery(id); d.Status != webhooks.StatusPending || d.Attempts != 0 || !d.Enqueued {
			t.Fatalf("%s after redrive: %+v", id, d)
		}
	}
	e.answer = func(int) int { return http.StatusOK }
	if n := e.run(); n != 2 {
		t.Fatalf("ran %d jobs after the redrive, want 2", n)
	}
	all, err := e.admin.ListDeliveries(e.ctx, "m_a", "", 0)
	e.must(err)
	if len(all) != 3 {
		t.Fatalf("list: %+v", all)
	}
	if _, err := e.admin.ListDeliveries(e.ctx, "m_a", "bogus", 0); err == nil {
		t.Fatal("an unknown status was accepted")
	}
}

// TestGoneDisablesSubscription: 410 ends the delivery and disables the
// subscription; its other pending deliveries end disabled without a request.
func TestGoneDisablesSubscription(t *testing.T) {
	e := newEnv(t)
	e.answer = func(int) int { return http.StatusGone }
	e.newDelivery("msg_g")
	e.run()
	d := e.delivery("msg_g")
	if d.Status != webhooks.StatusDisabled || d.Attempts != 1 || d.LastStatusCode != 410 {
		t.Fatalf("after 410: %+v", d)
	}
	sub, err := e.st.GetSubscription(e.ctx, "m_a", "sub_1")
	e.must(err)
	if sub.Enabled || sub.DisabledReason == "" {
		t.Fatalf("subscription after 410: %+v", sub)
	}
	e.newDelivery("msg_h")
	e.run()
	if d := e.delivery("msg_h"); d.Status != webhooks.StatusDisabled || d.Attempts != 0 {
		t.Fatalf("delivery to a disabled subscription: %+v", d)
	}
	if reqs, _ := e.requests(); len(reqs) != 1 {
		t.Fatalf("%d requests, want only the one answered 410", len(reqs))
	}
}

// TestRefusedTargetFailsAtOnce: a loopback target without the development
// setting is refused (no request); no later attempt could pass, so the
// delivery fails at once with the reason, not after ten attempts.
func TestRefusedTargetFailsAtOnce(t *testing.T) {
	e := newEnv(t)
	e.d.Sender = sender.New(sender.Config{Timeout: time.Second})
	e.newDelivery("msg_r")
	e.run()
	d := e.delivery("msg_r")
	if d.Status != webhooks.StatusFailed || d.Attempts != 1 || d.NextAttemptAt != nil ||
		!bytes.Contains([]byte(d.LastError), []byte("target refused")) || !bytes.Contains([]byte(d.LastError), []byte("local address")) {
		t.Fatalf("refused target: %+v", d)
	}
	if reqs, _ := e.requests(); len(reqs) != 0 {
		t.Fatal("a refused target got a request")
	}
	if out := e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_r", Attempt: 2}, 2); out.Kind != queue.Done {
		t.Fatalf("a failed delivery's job: %+v", out)
	}
}

func TestUnknownOrEndedDeliveriesDropped(t *testing.T) {
	e := newEnv(t)
	if out := e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_none", Attempt: 1}, 1); out.Kind != queue.Done {
		t.Fatalf("unknown delivery: %+v", out)
	}
	e.newDelivery("msg_d")
	e.run()
	if out := e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_d", Attempt: 1}, 2); out.Kind != queue.Done {
		t.Fatalf("delivered delivery: %+v", out)
	}
	if reqs, _ := e.requests(); len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
}

// TestSecretRotationSignsWithBoth: during the overlap both secrets verify.
func TestSecretRotationSignsWithBoth(t *testing.T) {
	e := newEnv(t)
	until := t0.Add(time.Hour)
	e.must(e.st.PutSubscription(e.ctx, tenant.Subscription{
		ID: "sub_1", MerchantID: "m_a", URL: e.srv.URL + "/hooks", Enabled: true, CreatedAt: t0,
		Secrets: []tenant.Secret{{Value: secretOld, CreatedAt: t0, ExpiresAt: &until}, {Value: secretNew, CreatedAt: t0}},
	}))
	e.newDelivery("msg_rot")
	e.run()
	reqs, bodies := e.requests()
	for _, s := range []string{secretOld, secretNew} {
		if err := verify.Verify(s, reqs[0].Header, bodies[0], e.clk.Now(), time.Minute); err != nil {
			t.Fatalf("secret %s…: %v", s[:10], err)
		}
	}
}

// crashAfterSend is a delivery store whose saves fail once armed: the
// dispatcher "crashes" after sending, before it records the result.
type crashAfterSend struct {
	webhooks.DeliveryStore
	mu    sync.Mutex
	saves int
	limit int // saves allowed; later ones fail
}

func (c *crashAfterSend) SaveDelivery(ctx context.Context, d webhooks.Delivery, prev int64) error {
	c.mu.Lock()
	c.saves++
	n := c.saves
	c.mu.Unlock()
	if n > c.limit {
		return errors.New("process killed")
	}
	return c.DeliveryStore.SaveDelivery(ctx, d, prev)
}

// TestAttemptCounterSurvivesCrash: an attempt is counted before it is sent,
// so after a crash between sending and recording the job comes back with
// its old queue number and the receiver sees the next attempt number, never
// attempt 1 again.
func TestAttemptCounterSurvivesCrash(t *testing.T) {
	e := newEnv(t)
	e.answer = func(int) int { return http.StatusInternalServerError }
	e.newDelivery("msg_c")
	crashing := *e.d
	crashing.Deliveries = &crashAfterSend{DeliveryStore: e.st, limit: 1}
	crashing.Process(e.ctx, queue.Job{DeliveryID: "msg_c", Attempt: 1}, 1) // sends, then cannot record

	if d := e.delivery("msg_c"); d.Attempts != 1 || d.Status != webhooks.StatusPending {
		t.Fatalf("after the crash: %+v", d)
	}
	e.answer = nil
	if out := e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_c", Attempt: 1}, 1); out.Kind != queue.Done {
		t.Fatalf("redelivered job: %+v", out)
	}
	reqs, _ := e.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, want := range []string{"1", "2"} {
		if got := reqs[i].Header.Get("X-Webhook-Delivery-Attempt"); got != want {
			t.Errorf("request %d: attempt header %q, want %q", i+1, got, want)
		}
	}
	if d := e.delivery("msg_c"); d.Attempts != 2 || d.Status != webhooks.StatusDelivered {
		t.Fatalf("after redelivery: %+v", d)
	}
}

// TestSupersededCopyDropped: a job the queue sent again for a retry
// carries its due time; a copy of it whose delivery has meanwhile been
// scheduled past that due time by another copy's attempt is dropped
// without an attempt (two copies exist when a batch is received again
// after its invocation failed while its retries were already sent). The
// copy due at the scheduled time, and jobs without a due time (first
// attempts, redrives, a message received again), attempt as before.
func TestSupersededCopyDropped(t *testing.T) {
	e := newEnv(t)
	e.answer = func(int) int { return http.StatusServiceUnavailable }
	e.newDelivery("msg_s")
	out := e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_s", Attempt: 1}, 1)
	if out.Kind != queue.Retry || out.After != 5*time.Second || out.Next != 2 {
		t.Fatalf("attempt 1: %+v, want a retry of attempt 2 in 5 s", out)
	}
	due := e.clk.Now().Add(out.After)
	if d := e.delivery("msg_s"); d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(due) {
		t.Fatalf("next attempt at %v, want %s", d.NextAttemptAt, due)
	}
	// The retry sent by the queue, received when due: attempt 2.
	e.clk.Set(due)
	copyJob := queue.Job{DeliveryID: "msg_s", Attempt: 2, NotBefore: due}
	if out := e.d.Process(e.ctx, copyJob, 2); out.Kind != queue.Retry || out.Next != 3 {
		t.Fatalf("the copy due now: %+v, want attempt 2 made and retried", out)
	}
	// A second copy of the same retry arrives later: attempt 2 was made and
	// attempt 3 scheduled past its due time by the first.
	e.clk.Advance(2 * time.Second)
	if out := e.d.Process(e.ctx, copyJob, 2); out.Kind != queue.Done {
		t.Fatalf("the superseded copy: %+v, want it dropped", out)
	}
	if reqs, _ := e.requests(); len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (the superseded copy made none)", len(reqs))
	}
	if d := e.delivery("msg_s"); d.Attempts != 2 || d.Status != webhooks.StatusPending {
		t.Fatalf("after the superseded copy: %+v", d)
	}
	// Without a due time (a message received again keeps no due time for
	// the dispatcher) the job attempts: its receive may follow a crash.
	if out := e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_s", Attempt: 2}, 3); out.Kind != queue.Retry || out.Next != 4 {
		t.Fatalf("a job without a due time: %+v, want attempt 3 made", out)
	}
	// The copy due at the delivery's next attempt attempts.
	d := e.delivery("msg_s")
	e.clk.Set(*d.NextAttemptAt)
	if out := e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_s", Attempt: 4, NotBefore: *d.NextAttemptAt}, 4); out.Next != 5 {
		t.Fatalf("the copy due at the next attempt: %+v, want attempt 4 made", out)
	}
	if reqs, _ := e.requests(); len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
}

// countingDeliveries counts a delivery store's reads and saves.
type countingDeliveries struct {
	webhooks.DeliveryStore
	mu           sync.Mutex
	reads, saves int
}

func (c *countingDeliveries) GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.DeliveryStore.GetDelivery(ctx, id)
}

func (c *countingDeliveries) SaveDelivery(ctx context.Context, d webhooks.Delivery, prev int64) error {
	c.mu.Lock()
	c.saves++
	c.mu.Unlock()
	return c.DeliveryStore.SaveDelivery(ctx, d, prev)
}

// An attempt reads its delivery once: counting the attempt and recording
// its result each save from what was read or saved before (a concurrent
// change makes the save read again).
func TestAttemptReadsItsDeliveryOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   webhooks.Status
	}{
		{"delivered", http.StatusOK, webhooks.StatusDelivered},
		{"failed, retried later", http.StatusInternalServerError, webhooks.StatusPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.answer = func(int) int { return tc.status }
			e.newDelivery("msg_once")
			counted := &countingDeliveries{DeliveryStore: e.st}
			d := *e.d
			d.Deliveries = counted
			d.Process(e.ctx, queue.Job{DeliveryID: "msg_once", Attempt: 1}, 1)
			if got := e.delivery("msg_once"); got.Status != tc.want || got.Attempts != 1 || got.LastStatusCode != tc.status {
				t.Fatalf("delivery after the attempt: %+v", got)
			}
			if counted.reads != 1 || counted.saves != 2 {
				t.Fatalf("%d reads and %d saves, want 1 and 2", counted.reads, counted.saves)
			}
		})
	}
}

// readsMeet makes the delivery's read and its subscription's meet: each
// waits for the other, so the test fails if they ran one after the other.
type readsMeet struct {
	delivery, subscription chan struct{}
	t                      *testing.T
}

func (m readsMeet) meet(mine, other chan struct{}, what string) {
	close(mine)
	select {
	case <-other:
	case <-hang.Deadline(m.t):
		m.t.Errorf("%s ran alone: the delivery and its subscription are not read at once", what)
	}
}

type meetingDeliveries struct {
	webhooks.DeliveryStore
	readsMeet
}

func (m meetingDeliveries) GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error) {
	m.meet(m.delivery, m.subscription, "delivery read")
	return m.DeliveryStore.GetDelivery(ctx, id)
}

type meetingTenants struct {
	tenant.Store
	readsMeet
}

func (m meetingTenants) GetSubscription(ctx context.Context, merchantID, id string) (tenant.Subscription, error) {
	m.meet(m.subscription, m.delivery, "subscription read")
	return m.Store.GetSubscription(ctx, merchantID, id)
}

// A job naming its delivery's subscription has both read at once; one
// naming another subscription is sent with the delivery's own.
func TestJobNamingItsSubscription(t *testing.T) {
	t.Run("read at once", func(t *testing.T) {
		e := newEnv(t)
		e.newDelivery("msg_named")
		m := readsMeet{delivery: make(chan struct{}), subscription: make(chan struct{}), t: t}
		d := *e.d
		d.Deliveries, d.Tenants = meetingDeliveries{e.st, m}, meetingTenants{e.st, m}
		d.Process(e.ctx, queue.Job{DeliveryID: "msg_named", Attempt: 1, MerchantID: "m_a", SubscriptionID: "sub_1"}, 1)
		if got := e.delivery("msg_named"); got.Status != webhooks.StatusDelivered {
			t.Fatalf("delivery: %+v", got)
		}
	})
	t.Run("another subscription named", func(t *testing.T) {
		e := newEnv(t)
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("the named subscription's URL received %s", r.URL)
		}))
		t.Cleanup(other.Close)
		e.must(e.st.PutSubscription(e.ctx, tenant.Subscription{
			ID: "sub_2", MerchantID: "m_a", URL: other.URL + "/hooks", Enabled: true, CreatedAt: t0,
			Secrets: []tenant.Secret{{Value: secretNew, CreatedAt: t0}},
		}))
		e.newDelivery("msg_other")
		e.d.Process(e.ctx, queue.Job{DeliveryID: "msg_other", Attempt: 1, MerchantID: "m_a", SubscriptionID: "sub_2"}, 1)
		if got := e.delivery("msg_other"); got.Status != webhooks.StatusDelivered || len(e.got) != 1 {
			t.Fatalf("delivery %+v after %d requests to its own subscription", got, len(e.got))
		}
	})
}

// TestAttemptHistory: each attempt is kept with its result in the write
// that records it: time, signature (as sent), status, error and the first
// MaxBodyPrefix bytes of the answer.
func TestAttemptHistory(t *testing.T) {
	e := newEnv(t)
	e.answer = func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	long := strings.Repeat("é", webhooks.MaxBodyPrefix) // 2 bytes each
	e.reply = func(n int) string {
		if n == 1 {
			return `{"error":"down for maintenance"}`
		}
		return long
	}
	e.newDelivery("msg_h1")
	e.run()
	first := e.clk.Now()
	e.advanceToNext("msg_h1")
	e.run()
	d := e.delivery("msg_h1")
	reqs, _ := e.requests()
	if len(d.History) != 2 || len(reqs) != 2 {
		t.Fatalf("history %+v after %d requests", d.History, len(reqs))
	}
	a, b := d.History[0], d.History[1]
	if a.Number != 1 || !a.At.Equal(first) || a.StatusCode != 503 || a.Body != `{"error":"down for maintenance"}` || a.Truncated ||
		a.Error != "HTTP 503 Service Unavailable" || a.Signature != reqs[0].Header.Get(webhooks.HeaderSignature) {
		t.Fatalf("attempt 1: %+v", a)
	}
	if b.Number != 2 || !b.At.Equal(e.clk.Now()) || b.StatusCode != 200 || b.Error != "" || !b.Truncated ||
		len(b.Body) != webhooks.MaxBodyPrefix || b.Body != long[:webhooks.MaxBodyPrefix] || b.Signature != reqs[1].Header.Get(webhooks.HeaderSignature) {
		t.Fatalf("attempt 2: %+v (body %d bytes)", b, len(b.Body))
	}
}
