package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/lookup"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// Issue 27's stress cases and its cost criteria, on both stores (the
// embedded store, and DynamoDB on moto): concurrent captures and refunds
// of one payment, with the platform's notifications arriving meanwhile,
// leave the record equal to what the platform holds; 50 concurrent
// operations each answer — success, the guard's 400 or 409 yp_2005 —
// within the bound; and what a capture and a GET cost does not grow with
// the payment's history.

// TestLedgerConcurrentCapturesAndRefunds is the case, repeated
// since it was racy: authorised 100000 and 10000 captured, 2 captures of
// 1000 and 2 refunds of 400 at once are all accepted and, the
// notifications delivered as they come (concurrently with the operations
// and with each other), the record is the platform's — 12000 captured, 800
// refunded, 11200 refundable — and takes a later refund of 100.
func TestLedgerConcurrentCapturesAndRefunds(t *testing.T) {
	eachStore(t, func(t *testing.T, dyn bool) {
		e, n := lsNotified(t, dyn)
		for round := range lsRounds {
			psp := lsPay(t, e, 100000, fmt.Sprintf("order-a%d", round))
			if r := lsModify(e, context.Background(), psp, "captures", 10000, fmt.Sprintf("a%d-capture", round)); r.Status != 200 {
				t.Fatalf("round %d: first capture: %d %s", round, r.Status, r.Body)
			}
			answers := lsAtOnce(t, 4, func(i int) testenv.Response {
				if i < 2 {
					return lsModify(e, context.Background(), psp, "captures", 1000, fmt.Sprintf("a%d-capture-%d", round, i))
				}
				return lsModify(e, context.Background(), psp, "refunds", 400, fmt.Sprintf("a%d-refund-%d", round, i))
			})
			for i, r := range answers {
				if r.Status != 200 {
					t.Fatalf("round %d: operation %d: %d %s; want each accepted", round, i, r.Status, r.Body)
				}
			}
			n.drain()
			v := lsAgrees(t, e, psp).View()
			if v.Captured != 12000 || v.Refunded != 800 || v.Refundable != 11200 || v.Capturable != 88000 ||
				v.State != payments.StatePartiallyRefunded {
				t.Fatalf("round %d: record %+v; want 12000 captured, 800 refunded, 11200 refundable, 88000 capturable, PartiallyRefunded", round, v)
			}
			if r := lsModify(e, context.Background(), psp, "refunds", 100, fmt.Sprintf("a%d-refund-later", round)); r.Status != 200 {
				t.Fatalf("round %d: a later refund of 100: %d %s", round, r.Status, r.Body)
			}
			n.drain()
			if v := lsAgrees(t, e, psp).View(); v.Refunded != 900 || v.Refundable != 11100 {
				t.Fatalf("round %d: after the later refund: %+v; want 900 refunded, 11100 refundable", round, v)
			}
			e.Clock.Advance(time.Minute)
		}
	})
}

// lsRounds is how many times TestLedgerConcurrentCapturesAndRefunds plays
// its case on each store (the seeded simulation covers interleavings
// systematically; these rounds are real goroutine races).
const lsRounds = 3

// TestLedgerFiftyWayContention: 25 captures and 25 refunds of one payment
// at once, the platform's notifications delivered as they are emitted.
// Every client is answered — accepted, 400 with the guard's reason, or
// 409 yp_2005 (retry) — never a 5xx, never hung, each within the issue's
// bound of 5 s in modelled time (lsCounts.modelled); no notification is
// answered 500; and once they are all delivered the record is what the
// platform holds, nothing in flight, every accepted operation in the
// timeline.
func TestLedgerFiftyWayContention(t *testing.T) {
	eachStore(t, func(t *testing.T, dyn bool) {
		e, n := lsNotified(t, dyn)
		psp := lsPay(t, e, 1000, "order-b")
		if r := lsModify(e, context.Background(), psp, "captures", 500, "b-capture"); r.Status != 200 {
			t.Fatalf("first capture: %d %s", r.Status, r.Body)
		}
		// 25 × 34 captures exceed the 500 left; 25 × 34 refunds the 500
		// captured so far: the guards refuse some, depending on the order.
		const ops, amount = 50, 34
		costs := make([]*lsCost, ops)
		answers := lsAtOnce(t, ops, func(i int) testenv.Response {
			costs[i] = &lsCost{}
			ctx := context.WithValue(context.Background(), lsCostKey{}, costs[i])
			return lsModify(e, ctx, psp, lsKind(i), amount, fmt.Sprintf("b-%s-%d", lsKind(i), i))
		})
		accepted := map[string]int{}
		statuses := map[int]int{}
		var slowest time.Duration
		for i, r := range answers {
			statuses[r.Status]++
			switch r.Status {
			case 200:
				accepted[lsKind(i)]++
			case 400:
				if b := string(r.Body); !strings.Contains(b, `"yp_2002"`) || !strings.Contains(b, "amount.value") || !strings.Contains(b, "must be at most") {
					t.Errorf("%s %d: 400 %s; want the guard's reason (amount.value must be at most …)", lsKind(i), i, b)
				}
			case 409:
				if !strings.Contains(string(r.Body), `"yp_2005"`) {
					t.Errorf("%s %d: 409 %s; want yp_2005", lsKind(i), i, r.Body)
				}
			default:
				t.Errorf("%s %d: %d %s; want 200, the guard's 400 or 409 yp_2005", lsKind(i), i, r.Status, r.Body)
			}
			c := costs[i].snapshot()
			if d := c.modelled(); d > lsBound {
				t.Errorf("%s %d answered in %v, modelled (%+v); the bound is %v", lsKind(i), i, d, c, lsBound)
			}
			slowest = max(slowest, c.modelled())
		}
		t.Logf("answers %v, accepted %v; slowest request %v, modelled", statuses, accepted, slowest)
		n.drain()
		h := lsAgrees(t, e, psp)
		sim, _ := e.Sim.Payment(psp)
		if sim.CapturedValue != int64(500+amount*accepted["captures"]) || sim.RefundedValue != int64(amount*accepted["refunds"]) {
			t.Fatalf("the platform captured %d and refunded %d; the service accepted %v (after 500 captured)", sim.CapturedValue, sim.RefundedValue, accepted)
		}
		if h.View().Captured > sim.AuthorisedValue {
			t.Fatalf("captured %d of %d authorised", h.View().Captured, sim.AuthorisedValue)
		}
		kinds := map[string]int{}
		for _, f := range e.Timeline(psp) {
			kinds[f.Kind+"/"+f.Origin]++
		}
		if kinds["capture/api"] != 1+accepted["captures"] || kinds["refund/api"] != accepted["refunds"] ||
			kinds["CAPTURE/notification"] != 1+accepted["captures"] || kinds["REFUND/notification"] != accepted["refunds"] {
			t.Fatalf("timeline %v; accepted %v (after a first capture)", kinds, accepted)
		}
	})
}

// lsKind is the operation of TestLedgerFiftyWayContention's request i.
func lsKind(i int) string {
	if i%2 == 0 {
		return "captures"
	}
	return "refunds"
}

// TestLedgerCostWithLongHistories: a payment with 2,500 notifications
// costs a capture and a GET no more than one with 10 (within 10 %),
// counted deterministically in store calls and bytes (lsMetered); the GET
// answers a bounded first page of its timeline with timelineNext, and
// paging GET …/timeline?startingAfter= returns every entry once, in order
// (on DynamoDB, its first pages: lsDynamoPages).
// On DynamoDB no item of the payment is over 8 KB and its head does not
// grow with the history.
func TestLedgerCostWithLongHistories(t *testing.T) {
	eachStore(t, func(t *testing.T, dyn bool) {
		e := lsEnv(t, dyn)
		// The short payment is measured before the long one is made: on
		// moto every write of a transaction copies the whole table.
		short, _ := lsHistory(t, e, "short", 10)
		shortCapture, shortGet, shortPage := lsCaptureAndGet(t, e, short)
		long, refunds := lsHistory(t, e, "long", 2500)
		longCapture, longGet, longPage := lsCaptureAndGet(t, e, long)
		t.Logf("capture: 10 notifications %+v, 2,500 %+v", shortCapture, longCapture)
		t.Logf("GET: 10 notifications %+v, 2,500 %+v", shortGet, longGet)
		within := func(what string, long, short int64) {
			t.Helper()
			if float64(long) > 1.1*float64(short) {
				t.Errorf("%s: %d with 2,500 notifications, %d with 10: more than 10 %% over", what, long, short)
			}
		}
		// A capture reads nothing and writes its request and its answer,
		// whatever the history.
		within("capture: store calls", longCapture.reads+longCapture.writes, shortCapture.reads+shortCapture.writes)
		within("capture: bytes read", longCapture.readBytes, shortCapture.readBytes)
		within("capture: bytes written", longCapture.writtenBytes, shortCapture.writtenBytes)
		// A GET reads the head and one page of the timeline: the head does
		// not grow, and the page is bounded. The payment with 10
		// notifications has fewer facts than a page; its cost with a full
		// page (of facts as large as its largest) is the bound.
		within("GET: store calls", longGet.reads+longGet.writes, shortGet.reads+shortGet.writes)
		within("GET: head bytes read", longGet.headBytes, shortGet.headBytes)
		within("GET: largest fact read", longGet.maxFact, shortGet.maxFact)
		within("GET: bytes read", longGet.readBytes, shortGet.headBytes+lookup.TimelinePage*shortGet.maxFact)
		if longGet.facts != lookup.TimelinePage || len(longPage.Timeline) != lookup.TimelinePage || longPage.TimelineNext == "" {
			t.Fatalf("GET of the long payment read %d facts, answered %d with timelineNext %q; want a first page of %d and timelineNext",
				longGet.facts, len(longPage.Timeline), longPage.TimelineNext, lookup.TimelinePage)
		}
		if shortPage.TimelineNext != "" || int64(len(shortPage.Timeline)) != shortGet.facts {
			t.Fatalf("GET of the short payment: %d entries, timelineNext %q; want all %d and none", len(shortPage.Timeline), shortPage.TimelineNext, shortGet.facts)
		}
		if !dyn {
			lsPageThrough(t, e, long, longPage, refunds, 0)
		} else {
			// moto answers each page's query by reading the whole
			// table (DynamoDB reads the page): the first pages prove
			// the cursor's round trip; the store contract suite
			// (storetest testTimeline) pages to the end on both stores.
			lsPageThrough(t, e, long, longPage, refunds, lsDynamoPages)

			shortHead, _ := lsItemSizes(t, e, short)
			longHead, largest := lsItemSizes(t, e, long)
			within("DynamoDB: head item bytes", int64(longHead), int64(shortHead))
			if largest > 8192 {
				t.Errorf("an item of the long payment is %d bytes; want none over 8 KB", largest)
			}
			t.Logf("DynamoDB: head %d bytes (short %d), largest item %d bytes", longHead, shortHead, largest)
		}
	})
}

// eachStore runs test as the subtests "embedded" and "dynamo" (dyn).
func eachStore(t *testing.T, test func(t *testing.T, dyn bool)) {
	t.Helper()
	for _, dyn := range []bool{false, true} {
		t.Run(map[bool]string{false: "embedded", true: "dynamo"}[dyn], func(t *testing.T) { test(t, dyn) })
	}
}

// lsEnv is an Env whose payments store, lookups and idempotency store are
// metered and whose conflict waits are counted (lsCost, from each
// request's context), on DynamoDB when dyn. The platform's notifications
// are not delivered (lsNotified delivers them).
func lsEnv(t *testing.T, dyn bool) *testenv.Env {
	t.Helper()
	return lsEnvWith(t, dyn, nil)
}

// lsNotified is lsEnv delivering the platform's notifications as they are
// emitted (lsNotifier).
func lsNotified(t *testing.T, dyn bool) (*testenv.Env, *lsNotifier) {
	t.Helper()
	n := &lsNotifier{t: t}
	e := lsEnvWith(t, dyn, n)
	n.connect(e)
	return e, n
}

func lsEnvWith(t *testing.T, dyn bool, notifier simulator.Notifier) *testenv.Env {
	t.Helper()
	e := testenv.NewWith(t, testenv.Options{Dynamo: dyn,
		WrapPayments: func(s payments.Store) payments.Store { return lsMetered{s} },
		WrapIdem:     func(s idempotency.Store) idempotency.Store { return lsMeteredIdem{s} },
		Simulator:    func(o *simulator.Options) { o.Notifier = notifier },
	})
	e.Payments.SleepWith(lsSleeper{})
	e.Deps.Lookup = lookup.New(lsMetered{e.Store}, e.SelfService, e.SelfService)
	if dyn { // moto keeps every table, in memory, until it stops
		t.Cleanup(func() {
			_, _ = e.DynamoDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(e.DynamoTable)})
		})
	}
	return e
}

// The contention bound (issue 27: each of 50 concurrent operations on one
// payment answers within 5 s) is asserted in modelled time, not on moto's
// wall time (nor on a shared fake clock, which concurrent requests would
// all move): a request takes what it waited before its retries (the
// Service's Sleeper counts it) plus a generous budget per round trip
// to the store and to the platform. Round trips made concurrently (the
// idempotency result beside the record write) are counted one after the
// other.
const (
	lsBound        = 5 * time.Second
	lsReadTrip     = 10 * time.Millisecond // a DynamoDB read (single-digit ms)
	lsWriteTrip    = 25 * time.Millisecond // a DynamoDB transaction
	lsUpstreamTrip = time.Second           // the platform's modification call
	// lsUnmetered are the reads a request makes besides those counted:
	// its API key, its merchant and site, its rate limit.
	lsUnmetered = 4
	// lsMaxConflictWait bounds one wait before a retry (conflictWait in
	// shared/payments/store.go).
	lsMaxConflictWait = 25 * time.Millisecond
)

// lsCost is what one request cost: the calls of the payments store (and
// the bytes they moved, as JSON), the writes refused by a condition, the
// idempotency store's calls and the conflict waits. A nil *lsCost counts
// nothing.
type lsCost struct {
	mu sync.Mutex
	lsCounts
}

// lsCounts are an lsCost's numbers.
type lsCounts struct {
	reads, writes, conflicts int64
	readBytes, writtenBytes  int64
	headBytes                int64 // of the heads read
	facts, maxFact           int64 // timeline facts read, the largest's bytes
	idem                     int64
	waits                    int64
	waited                   time.Duration
}

type lsCostKey struct{}

// lsCostOf is the lsCost of ctx's request (nil: none).
func lsCostOf(ctx context.Context) *lsCost {
	c, _ := ctx.Value(lsCostKey{}).(*lsCost)
	return c
}

func (c *lsCost) add(f func(n *lsCounts)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	f(&c.lsCounts)
	c.mu.Unlock()
}

func (c *lsCost) snapshot() lsCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lsCounts
}

// modelled is the request's time as modelled (see lsBound).
// A conflict the Sleeper did not see a wait for (the record writes after
// the platform's answer wait in real time) counts the longest wait,
// lsMaxConflictWait.
func (n lsCounts) modelled() time.Duration {
	unslept := max(n.conflicts-n.waits, 0)
	return n.waited + time.Duration(unslept)*lsMaxConflictWait +
		time.Duration(n.reads+lsUnmetered)*lsReadTrip + time.Duration(n.writes+n.idem)*lsWriteTrip + lsUpstreamTrip
}

// lsSize is v's size as JSON.
func lsSize(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return int64(len(b))
}

// lsMetered meters a payments store into the lsCost of each call's
// context.
type lsMetered struct{ payments.Store }

func (m lsMetered) GetPayment(ctx context.Context, psp string) (payments.Head, error) {
	h, err := m.Store.GetPayment(ctx, psp)
	lsCostOf(ctx).add(func(n *lsCounts) {
		n.reads++
		if err == nil {
			s := lsSize(h)
			n.readBytes += s
			n.headBytes += s
		}
	})
	return h, err
}

func (m lsMetered) GetEntries(ctx context.Context, psp string, refs ...string) ([]payments.Entry, error) {
	es, err := m.Store.GetEntries(ctx, psp, refs...)
	lsCostOf(ctx).add(func(n *lsCounts) {
		n.reads++
		for _, e := range es {
			n.readBytes += lsSize(e)
		}
	})
	return es, err
}

func (m lsMetered) Timeline(ctx context.Context, psp, cursor string, limit int) ([]payments.Fact, string, error) {
	fs, next, err := m.Store.Timeline(ctx, psp, cursor, limit)
	lsCostOf(ctx).add(func(n *lsCounts) {
		n.reads++
		for _, f := range fs {
			s := lsSize(f)
			n.readBytes += s
			n.facts++
			n.maxFact = max(n.maxFact, s)
		}
	})
	return fs, next, err
}

func (m lsMetered) Write(ctx context.Context, w payments.Write) error {
	err := m.Store.Write(ctx, w)
	lsCostOf(ctx).add(func(n *lsCounts) {
		n.writes++
		n.writtenBytes += lsSize(w)
		if errors.Is(err, storeerr.ErrConflict) {
			n.conflicts++
		}
	})
	return err
}

func (m lsMetered) GetSession(ctx context.Context, id string) (payments.Session, error) {
	s, err := m.Store.GetSession(ctx, id)
	lsCostOf(ctx).add(func(n *lsCounts) { n.reads++; n.readBytes += lsSize(s) })
	return s, err
}

func (m lsMetered) PutSession(ctx context.Context, s payments.Session) error {
	lsCostOf(ctx).add(func(n *lsCounts) { n.writes++; n.writtenBytes += lsSize(s) })
	return m.Store.PutSession(ctx, s)
}

// lsMeteredIdem counts an idempotency store's calls.
type lsMeteredIdem struct{ idempotency.Store }

func (m lsMeteredIdem) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	lsCostOf(ctx).add(func(n *lsCounts) { n.idem++ })
	return m.Store.Claim(ctx, rec, now)
}

func (m lsMeteredIdem) Complete(ctx context.Context, scope, key, token string, resp idempotency.Response, exp time.Time) error {
	lsCostOf(ctx).add(func(n *lsCounts) { n.idem++ })
	return m.Store.Complete(ctx, scope, key, token, resp, exp)
}

func (m lsMeteredIdem) Release(ctx context.Context, scope, key, token string) error {
	lsCostOf(ctx).add(func(n *lsCounts) { n.idem++ })
	return m.Store.Release(ctx, scope, key, token)
}

// lsSleeper counts the conflict waits into the request's lsCost, and
// waits them (so that contention plays out as in production).
type lsSleeper struct{}

func (lsSleeper) Sleep(ctx context.Context, d time.Duration) error {
	lsCostOf(ctx).add(func(n *lsCounts) { n.waits++; n.waited += d })
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// lsDo sends a request with merchant A's key in ctx (its lsCost meters it).
func lsDo(e *testenv.Env, ctx context.Context, method, path, body string, headers ...string) testenv.Response {
	return e.DoContext(ctx, method, path, "A", body, headers...)
}

const lsPayments = "/v1/ecom/" + testenv.SiteA + "/payments"

// lsPay makes an authorised card payment of value (merchant A: captured
// manually) and returns its pspReference.
func lsPay(t *testing.T, e *testenv.Env, value int, ref string) string {
	t.Helper()
	body := cardBody(value, ref, "https://shop.example/r")
	r := lsDo(e, context.Background(), "POST", lsPayments, body, "Idempotency-Key", "pay-"+ref)
	var out struct{ PSPReference, ResultCode string }
	if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || out.ResultCode != "Authorised" {
		t.Fatalf("payment %s: %d %s", ref, r.Status, r.Body)
	}
	return out.PSPReference
}

// lsModify posts a capture or refund ("captures", "refunds") of value
// EUR under Idempotency-Key key.
func lsModify(e *testenv.Env, ctx context.Context, psp, kind string, value int, key string) testenv.Response {
	return lsDo(e, ctx, "POST", lsPayments+"/"+psp+"/"+kind,
		fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"},"reference":"%s"}`, value, key), "Idempotency-Key", key)
}

// lsHang is how long lsAtOnce and the notifier wait before calling a
// request hung: far beyond any answer (a failure only on a real hang).
const lsHang = 2 * time.Minute

// lsAtOnce runs do(0) … do(n−1) at once and returns their answers; it
// fails t if they are not all answered within lsHang.
func lsAtOnce(t *testing.T, n int, do func(i int) testenv.Response) []testenv.Response {
	t.Helper()
	out := make([]testenv.Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			out[i] = do(i)
		})
	}
	close(start)
	lsWait(t, &wg, fmt.Sprintf("%d concurrent requests", n))
	return out
}

// lsWait waits for wg, failing t after lsHang.
func lsWait(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(lsHang):
		t.Fatalf("%s not all answered after %v: hung", what, lsHang)
	}
}

// lsNotifier is the platform's delivery of notifications (the simulator's
// Notifier): each is posted to the service's notifications endpoint as it
// is emitted, from its own goroutine — concurrently with the others and
// with the operations running — and the answers that are not 200
// "[accepted]" are kept.
type lsNotifier struct {
	t    *testing.T
	sim  *simulator.Simulator
	h    http.Handler
	logs *bytes.Buffer // the service's log
	// slots bounds the posts in flight on DynamoDB (nil: none). moto
	// copies every table for each transaction, so that concurrent
	// notifications of one payment, which invalidate each other's reads
	// (the payment's head), cost seconds each there; two at a time keep
	// them concurrent.
	slots chan struct{}
	posts sync.WaitGroup

	mu      sync.Mutex
	refused []string
}

// lsNotifySlots is how many notifications are posted at once on DynamoDB.
const lsNotifySlots = 2

// lsNotifyAttempts bounds the posts of one notification: as the platform
// does, one not accepted is sent again (so that the record can still be
// checked), but not accepting it the first time is a failure.
const lsNotifyAttempts = 10

// connect points n at e's notifications endpoint, as the platform's
// notification settings do; e must not have emitted any notification yet.
func (n *lsNotifier) connect(e *testenv.Env) {
	signer, err := upstream.NewSigner(testenv.HMACKey)
	if err != nil {
		n.t.Fatal(err)
	}
	inbox := &connector.Inbox{Signer: signer, Log: e.Deps.Log, Receiver: &notifications.Receiver{
		Events: e.SelfService, Payments: e.Store, Tenants: e.Store,
		Deliveries: e.SelfService, Queue: e.Queue, Clock: e.Clock, Log: e.Deps.Log}}
	n.sim, n.logs = e.Sim, e.Logs
	n.h = httpapi.Notifications(e.Deps, inbox, httpapi.BasicAuth{}, e.Handler)
	if e.DynamoDB != nil {
		n.slots = make(chan struct{}, lsNotifySlots)
	}
}

// Notify posts body, a notification as the platform signed it, from a
// goroutine of its own.
func (n *lsNotifier) Notify(_ context.Context, body []byte) error {
	n.posts.Go(func() {
		if n.slots != nil {
			n.slots <- struct{}{}
			defer func() { <-n.slots }()
		}
		n.post(body)
	})
	return nil
}

func (n *lsNotifier) post(body []byte) {
	for attempt := 1; attempt <= lsNotifyAttempts; attempt++ {
		req := httptest.NewRequest(http.MethodPost, httpapi.NotificationsPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		n.h.ServeHTTP(w, req)
		if w.Code == 200 && w.Body.String() == "[accepted]" {
			return
		}
		var sent upstream.Notification
		_ = json.Unmarshal(body, &sent)
		it := sent.NotificationItems[0].Item
		n.mu.Lock()
		n.refused = append(n.refused, fmt.Sprintf("%s %s of %s (attempt %d): %d %s", it.EventCode, it.PSPReference, it.OriginalReference, attempt, w.Code, w.Body))
		n.mu.Unlock()
	}
}

// drain waits until every notification emitted so far is answered (the
// operations that emit them are done); it fails t for each post not
// answered 200.
func (n *lsNotifier) drain() {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), lsHang)
	defer cancel()
	if err := n.sim.Flush(ctx); err != nil { // each handed to Notify
		n.t.Fatalf("notifications not handed over after %v: %v", lsHang, err)
	}
	lsWait(n.t, &n.posts, "notifications")
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.refused) > 0 {
		n.t.Errorf("%d posts of notifications not accepted:\n%s\nwhy, as logged:\n%s", len(n.refused), strings.Join(n.refused, "\n"), n.failures())
		n.refused = nil
	}
}

// failures are the logged errors of the notifications answered 5xx.
func (n *lsNotifier) failures() string {
	var out []string
	for l := range strings.SplitSeq(n.logs.String(), "\n") {
		var rec struct {
			Route  string
			Status int
			Err    string
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Route == "notifications" && rec.Status >= 500 {
			out = append(out, rec.Err)
		}
	}
	return strings.Join(out, "\n")
}

// headOf is payment psp's head.
func headOf(t *testing.T, e *testenv.Env, psp string) payments.Head {
	t.Helper()
	h, err := e.Store.GetPayment(context.Background(), psp)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// lsAgrees checks payment psp's record against the platform's: the
// amounts, the state (the platform keeps PartiallyCaptured after partial
// refunds, the service shows PartiallyRefunded), what can still be
// captured and refunded, nothing in flight, the cached Totals equal to
// the fold of the entries, and the merchant's GET alike. It returns the
// head.
func lsAgrees(t *testing.T, e *testenv.Env, psp string) payments.Head {
	t.Helper()
	ctx := context.Background()
	h := headOf(t, e, psp)
	sim, _ := e.Sim.Payment(psp)
	v := h.View()
	want := payments.State(sim.State)
	switch {
	case sim.RefundedValue > 0 && sim.RefundedValue >= sim.CapturedValue:
		want = payments.StateRefunded
	case sim.RefundedValue > 0:
		want = payments.StatePartiallyRefunded
	}
	tt := h.Totals
	if v.Authorised != sim.AuthorisedValue || v.Captured != sim.CapturedValue || v.Refunded != sim.RefundedValue ||
		v.State != want || v.Capturable != sim.AuthorisedValue-sim.CapturedValue || v.Refundable != sim.CapturedValue-sim.RefundedValue ||
		tt.CapturesInFlight != 0 || tt.RefundsInFlight != 0 || tt.ReversalsInFlight != 0 || tt.AmountUpdatesInFlight != 0 {
		t.Fatalf("record %+v (totals %+v); the platform: authorised %d, captured %d, refunded %d, %s",
			v, tt, sim.AuthorisedValue, sim.CapturedValue, sim.RefundedValue, sim.State)
	}
	entries := timelineEntries(t, e, psp)
	if fold := payments.Fold(h, entries); fold != h.Totals {
		t.Fatalf("cached totals %+v, the fold of the %d entries %+v", h.Totals, len(entries), fold)
	}
	r := lsDo(e, ctx, "GET", lsPayments+"/"+psp, "")
	var got lookup.PaymentView
	if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != 200 {
		t.Fatalf("GET payment: %d %s", r.Status, r.Body)
	}
	if got.State != v.State || got.Captured.Value != v.Captured || got.Refunded.Value != v.Refunded ||
		got.Refundable.Value != v.Refundable || got.CapturesInFlight.Value != 0 || got.RefundsInFlight.Value != 0 {
		t.Fatalf("GET payment %s; record %+v", r.Body, v)
	}
	return h
}

// lsHistory makes a payment of 100000 with 10000 captured and gives it n
// notifications (n even): the REFUNDs of n/2 distinct refunds made on the
// platform (the service learns them from their notifications), of 1 EUR
// cent each, then their REFUND_FAILEDs. Each is applied as the
// receiver applies it — payments.Notify on the payment as it stands, each
// at its own time, one millisecond apart — and their writes are made in
// bulk (lsBulk). It returns the payment and the pspReferences of its
// REFUNDs, in the order applied.
func lsHistory(t *testing.T, e *testenv.Env, name string, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	psp := lsPay(t, e, 100000, "order-"+name)
	if r := lsModify(e, ctx, psp, "captures", 10000, name+"-capture"); r.Status != 200 {
		t.Fatalf("capture: %d %s", r.Status, r.Body)
	}
	h := headOf(t, e, psp)
	start := e.Clock.Now()
	var refunds []string
	bulk := lsBulk{t: t, e: e, psp: psp}
	for i := range n {
		item := payments.Notification{EventCode: upstream.EventRefund, Success: "true",
			PSPReference: fmt.Sprintf("R%s%07d", strings.ToUpper(name[:1]), i%(n/2)), OriginalReference: psp,
			MerchantAccountCode: "AlphaECOM", MerchantReference: "order-" + name, Amount: money.Amount{Value: 1, Currency: "EUR"},
			PaymentMethod: "visa"}
		if i < n/2 {
			refunds = append(refunds, item.PSPReference)
		} else {
			item.EventCode, item.Reason = upstream.EventRefundFailed, "Refund failed (simulated)"
		}
		res, err := payments.Notify(ctx, e.Store, &h, bulk.entry(item.PSPReference), item,
			payments.NotificationOptions{Now: start.Add(time.Duration(i+1) * time.Millisecond)})
		if err != nil || !res.Applied || res.Write == nil || res.Write.Put != nil {
			t.Fatalf("notification %d: %+v, %v", i, res, err)
		}
		h = res.Head
		bulk.add(*res.Write)
	}
	bulk.flush()
	if h, err := e.Store.GetPayment(ctx, psp); err != nil || h.Seq != int64(n) || h.Totals.Refunded != 0 || h.Totals.RefundsInFlight != 0 {
		t.Fatalf("after %d notifications: head %+v, %v", n, h, err)
	}
	e.Clock.Set(start.Add(time.Duration(n+1)*time.Millisecond + time.Second))
	return psp, refunds
}

// lsBulk writes the delta writes of notifications of one payment in
// bulk: merged, 49 at a time, through the store (a transaction holds 100
// items: the head, 49 entries and 49 facts). On DynamoDB the entries and
// facts go in BatchWriteItem calls, as the store's item builders make
// them, and the head's delta in one write through the store at the end:
// moto copies the whole table for every item of a transaction, which
// makes 5,000 items written in transactions take minutes.
type lsBulk struct {
	t     *testing.T
	e     *testenv.Env
	psp   string
	batch *payments.Write
	items []types.WriteRequest
	ttl   types.AttributeValue
	// entries are the entries written, by reference, latest version.
	entries map[string]payments.Entry
	queued  map[string]int // entries' positions in items
}

// entry is entry ref as the notifications added so far left it (nil:
// none).
func (b *lsBulk) entry(ref string) *payments.Entry {
	if e, ok := b.entries[ref]; ok {
		return &e
	}
	return nil
}

// add merges w into the batch.
func (b *lsBulk) add(w payments.Write) {
	if b.entries == nil {
		b.entries = map[string]payments.Entry{}
	}
	for _, e := range w.Entries {
		if b.batch != nil && slices.ContainsFunc(b.batch.Entries, func(x payments.Entry) bool { return x.Ref == e.Ref }) {
			b.flush() // a write holds an entry once
		}
		b.entries[e.Ref] = e
	}
	if b.batch == nil {
		b.batch = &w
	} else {
		b.batch.Delta, b.batch.SeqStep, b.batch.At = b.batch.Delta.Add(w.Delta), b.batch.SeqStep+w.SeqStep, w.At
		b.batch.Entries, b.batch.Facts = append(b.batch.Entries, w.Entries...), append(b.batch.Facts, w.Facts...)
	}
	if b.e.DynamoDB != nil {
		b.raw(w)
		b.batch.Entries, b.batch.Facts = nil, nil
	} else if len(b.batch.Entries) == 49 {
		b.flush()
	}
}

// raw queues w's entries and facts as items (DynamoDB).
func (b *lsBulk) raw(w payments.Write) {
	if b.ttl == nil { // the ttl of the payment's items: its head's
		h := headOf(b.t, b.e, b.psp)
		head, err := dynamo.HeadItem(h)
		if err != nil {
			b.t.Fatal(err)
		}
		b.ttl = head["ttl"]
	}
	for _, en := range w.Entries {
		it, err := dynamo.EntryItem(b.psp, en, b.ttl)
		if err != nil {
			b.t.Fatal(err)
		}
		put := types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
		if i, ok := b.queued[en.Ref]; ok { // a BatchWriteItem holds a key once
			b.items[i] = put
			continue
		}
		if b.queued == nil {
			b.queued = map[string]int{}
		}
		b.queued[en.Ref] = len(b.items)
		b.items = append(b.items, put)
	}
	for _, f := range w.Facts {
		it, err := dynamo.FactItem(b.psp, f, b.ttl)
		if err != nil {
			b.t.Fatal(err)
		}
		b.items = append(b.items, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
}

// flush writes what is batched.
func (b *lsBulk) flush() {
	ctx := context.Background()
	for chunk := range slices.Chunk(b.items, 25) {
		for len(chunk) > 0 {
			out, err := b.e.DynamoDB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{b.e.DynamoTable: chunk}})
			if err != nil {
				b.t.Fatal(err)
			}
			chunk = out.UnprocessedItems[b.e.DynamoTable]
		}
	}
	b.items, b.queued = nil, nil
	if b.batch != nil {
		if err := b.e.Store.Write(ctx, *b.batch); err != nil {
			b.t.Fatalf("write %d notifications: %v", b.batch.SeqStep, err)
		}
		b.batch = nil
	}
}

// lsCaptureAndGet captures 100 of payment psp and reads it, and returns
// what each cost and the GET's answer.
func lsCaptureAndGet(t *testing.T, e *testenv.Env, psp string) (capture, get lsCounts, page lookup.PaymentView) {
	t.Helper()
	c := &lsCost{}
	if r := lsModify(e, context.WithValue(context.Background(), lsCostKey{}, c), psp, "captures", 100, "cost-"+psp); r.Status != 200 {
		t.Fatalf("capture: %d %s", r.Status, r.Body)
	}
	g := &lsCost{}
	r := lsDo(e, context.WithValue(context.Background(), lsCostKey{}, g), "GET", lsPayments+"/"+psp, "")
	if err := json.Unmarshal(r.Body, &page); err != nil || r.Status != 200 {
		t.Fatalf("GET: %d %s", r.Status, r.Body)
	}
	return c.snapshot(), g.snapshot(), page
}

// lsDynamoPages is how many pages of the long timeline
// TestLedgerCostWithLongHistories reads on DynamoDB.
const lsDynamoPages = 4

// lsPageThrough pages through payment psp's timeline from its GET's first
// page (first) with GET …/timeline?startingAfter=, to the end or to page
// most (0: no limit): every entry once, in order — the stored timeline,
// the refunds' REFUNDs in the order applied.
func lsPageThrough(t *testing.T, e *testenv.Env, psp string, first lookup.PaymentView, refunds []string, most int) {
	t.Helper()
	got := first.Timeline
	next, pages := first.TimelineNext, 1
	for next != "" && pages != most {
		r := lsDo(e, context.Background(), "GET", lsPayments+"/"+psp+"/timeline?startingAfter="+url.QueryEscape(next), "")
		var page lookup.TimelineView
		if err := json.Unmarshal(r.Body, &page); err != nil || r.Status != 200 {
			t.Fatalf("timeline after %q: %d %s", next, r.Status, r.Body)
		}
		if len(page.Data) == 0 || len(page.Data) > lookup.TimelinePage || page.HasMore != (page.Next != "") {
			t.Fatalf("timeline page %d: %d entries, hasMore %v, next %q", pages+1, len(page.Data), page.HasMore, page.Next)
		}
		got = append(got, page.Data...)
		next = page.Next
		pages++
	}
	stored := e.Timeline(psp)
	if next != "" { // stopped at page most: the beginning of the timeline
		stored = stored[:min(len(got), len(stored))]
	}
	if len(got) != len(stored) {
		t.Fatalf("%d entries in %d pages; %d stored", len(got), pages, len(stored))
	}
	var refunded []string
	for i, g := range got {
		s := stored[i]
		if !g.Time.Equal(s.At) || g.Kind != s.Kind || g.Source != s.Origin || (g.PSPReference != "" && g.PSPReference != s.PSPReference) {
			t.Fatalf("entry %d: %+v; stored %+v", i, g, s)
		}
		if i > 0 && g.Time.Before(got[i-1].Time) {
			t.Fatalf("entry %d at %v before entry %d at %v", i, g.Time, i-1, got[i-1].Time)
		}
		if g.Kind == upstream.EventRefund {
			refunded = append(refunded, g.PSPReference)
		}
	}
	if next != "" {
		refunds = refunds[:min(len(refunded), len(refunds))]
	}
	if !slices.Equal(refunded, refunds) {
		t.Fatalf("%d REFUND entries; want the %d refunds once each, in order", len(refunded), len(refunds))
	}
	t.Logf("timeline: %d entries in %d pages", len(got), pages)
}

// lsItemSizes reads every item of payment psp's partition (DynamoDB) and
// returns its head's size and the largest item's, as DynamoDB meters
// them.
func lsItemSizes(t *testing.T, e *testenv.Env, psp string) (head, largest int) {
	t.Helper()
	in := &dynamodb.QueryInput{
		TableName: aws.String(e.DynamoTable), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": "pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "PAYMENT#" + psp}},
	}
	items := 0
	for {
		out, err := e.DynamoDB.Query(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			size := dynamo.ItemSize(it)
			largest = max(largest, size)
			if _, sk := dynamo.Keys(it); sk == "HEAD" {
				head = size
			}
		}
		items += len(out.Items)
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if head == 0 || items < 2 {
		t.Fatalf("payment %s: %d items, head %d bytes", psp, items, head)
	}
	return head, largest
}
