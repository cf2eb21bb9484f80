package tests

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/yp/paysvc/shared/httpapi"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/testutil/hang"
	"github.com/yp/paysvc/shared/testutil/moto"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// The ledger simulation: a seeded generator schedules the steps of many
// concurrent operations of one payment at named points, with faults, on
// both stores, the upstream simulator as the platform; the simulator's own
// ledger (which shares no code with shared/payments) is the oracle.
//
// Per seed: a payment of 100000 EUR, authorised for manual capture (a
// pre-authorisation one seed in three), then 6 to 12 operations —
// captures, refunds, amount updates of a pre-authorisation, a reversal
// sometimes, a cancel of the uncaptured rest sometimes — each sent through
// the service's API by a goroutine of its own (an actor); and one to three
// of the platform's own events (simPlatformEvents, EXPIRE besides one seed
// in three), played on the simulator between steps when their
// precondition holds and delivered like any notification. Every actor stops at the named points (simPoint*)
// and goes on only when the scheduler releases it; the scheduler runs one
// actor at a time, until it stops at its next point or finishes, and
// picks by the seed what happens next: an operation starts, a stopped
// actor goes on, a notification the platform emitted is delivered, a
// merchant retries, the service crashes. Each step runs one actor alone,
// so a seed replays exactly.
//
// Faults (simKind*): an operation's upstream call answered 5xx (the
// platform acted or not), its answer lost (the connection dropped, after
// the platform acted or before) or timed out; notifications duplicated,
// reordered, delayed, or failed (answered 500 by the delivery, before or
// after the service processed them, so that the platform sends them
// again); merchant retries with the same Idempotency-Key, after the
// answer or while the first request still runs; crash-and-restart: every
// actor stopped at a point dies there (its later writes fail, as after a
// crash of the process), the clock moves past the idempotency lease and
// the recovery delay, and the recovery sweeper (payments.Recover) runs as
// the restarted service would: the service is built anew, and the
// embedded store closed and opened again from its file (a DynamoDB table
// outlives the process).
//
// After every step: no guard crossed (captured + captures in flight ≤
// authorised, refunded + refunds in flight ≤ captured, leaving out the
// operations counted twice while their answer is lost: simRun.invariants),
// nothing negative, and the platform never holds more than the service
// knows or has in flight. Once everything has drained (every actor done, every
// notification delivered, Recover run until nothing is in flight): the
// record equals the platform's ledger — amounts, state, what can still
// be captured and refunded — and each operation's outcome is the
// platform's.
//
// Seeds: 1 … PAYSVC_SIM_SEEDS_EMBEDDED (default 200) and 1 …
// PAYSVC_SIM_SEEDS_DYNAMO (default simDynamoSeeds, 50),
// a few at a time, counted from PAYSVC_SIM_SEEDS_FROM instead of 1 when
// set; `make soak` runs 10,000 and 1,000. PAYSVC_SIM_SEED=N
// runs seed N alone on each store, as does
// -run 'TestLedgerSimulation/embedded/seed=N$'. A failure names its store
// and seed and prints the seed's trace (each step, each actor's stops and
// answers) and the payment's entries; PAYSVC_SIM_TRACE=1 prints the trace
// of a passing seed too. A run of every seed of a store (at least
// simKindsSeeds) fails if a fault kind never occurred.
func TestLedgerSimulation(t *testing.T) {
	for _, st := range []struct {
		name    string
		dyn     bool
		env     string
		seeds   int
		workers int
	}{
		{"embedded", false, "PAYSVC_SIM_SEEDS_EMBEDDED", 200, 4},
		{"dynamo", true, "PAYSVC_SIM_SEEDS_DYNAMO", simDynamoSeeds, 8},
	} {
		t.Run(st.name, func(t *testing.T) {
			seeds := simSeeds(t, st.env, st.seeds)
			var counts simCounts
			var ran atomic.Int64
			work := make(chan uint64)
			var wg sync.WaitGroup
			for range st.workers {
				wg.Go(func() {
					for seed := range work {
						t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
							ran.Add(1)
							t.Cleanup(func() {
								if t.Failed() {
									t.Logf("seed=%d store=%s failed: reproduce with PAYSVC_SIM_SEED=%d or -run 'TestLedgerSimulation/%s/seed=%d$'",
										seed, st.name, seed, st.name, seed)
								}
							})
							endpoint := ""
							if st.dyn && seed%2 == 0 { // moto serves one call at a time: two servers, two cores
								endpoint = moto.Second(t)
							}
							runSimulation(t, st.dyn, endpoint, seed, &counts)
						})
					}
				})
			}
			for _, s := range seeds {
				work <- s
			}
			close(work)
			wg.Wait()
			got := counts.snapshot()
			t.Logf("%d seeds; faults injected: %v", ran.Load(), got)
			if int(ran.Load()) < len(seeds) || len(seeds) < simKindsSeeds {
				return // a part of the seeds (-run, PAYSVC_SIM_SEED): the kinds are counted over a whole run
			}
			for _, k := range simKinds {
				if got[k] == 0 {
					t.Errorf("fault kind %q never occurred in %d seeds", k, len(seeds))
				}
			}
		})
	}
}

// simDynamoSeeds is how many seeds run on DynamoDB by default: a seed
// costs moto about 1.7 s of CPU (its table, its tenants, some 470 calls;
// 2.2 s without internal/motoserver/speedups),
// and moto serves one call at a time, so the even seeds go to a second
// server (moto.Second) and the two take both cores when the machine has
// them to spare; `make soak` runs 1,000.
const simDynamoSeeds = 50

// simKindsSeeds is the fewest seeds whose run must have injected every
// fault kind and played every platform event (seeds 1 … 50 do, on both
// stores: the default runs).
const simKindsSeeds = 50

// simSeeds are the seeds to run: PAYSVC_SIM_SEED alone, else 1 … the
// count in env (def when unset).
func simSeeds(t *testing.T, env string, def int) []uint64 {
	t.Helper()
	if s := os.Getenv("PAYSVC_SIM_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PAYSVC_SIM_SEED=%q: %v", s, err)
		}
		return []uint64{n}
	}
	n := def
	if s := os.Getenv(env); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 0 {
			t.Fatalf("%s=%q: want a count", env, s)
		}
	}
	first := uint64(1)
	if s := os.Getenv("PAYSVC_SIM_SEEDS_FROM"); s != "" {
		var err error
		if first, err = strconv.ParseUint(s, 10, 64); err != nil || first == 0 {
			t.Fatalf("PAYSVC_SIM_SEEDS_FROM=%q: want a seed ≥ 1", s)
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = first + uint64(i)
	}
	return seeds
}

// Fault kinds.
const (
	simKind5xx           = "upstream 5xx, not acted"
	simKind5xxActed      = "upstream 5xx after acting"
	simKindLost          = "answer lost (connection dropped) after acting"
	simKindLostBefore    = "connection dropped before acting"
	simKindTimeout       = "upstream timeout after acting"
	simKindTimeoutBefore = "upstream timeout before acting"
	simKindRetry         = "merchant retry after the answer"
	simKindRetryRunning  = "merchant retry while the request runs"
	simKindDuplicated    = "notification duplicated"
	simKindReordered     = "notification reordered"
	simKindDelayed       = "notification delayed"
	simKindFailedBefore  = "notification failed before processing"
	simKindFailedAfter   = "notification failed after processing"
	simKindCrash         = "crash and restart"
	simKindCrashNotify   = "crash between the writes of a notification"
	simKindCrashAnswered = "crash after the upstream answered"
	simKindInterleaved   = "a write released while another operation is stopped"
	// simKindAccepted+kind counts the operations of a kind accepted: no
	// fault, but each kind must have been played.
	simKindAccepted = "accepted: "
	// simKindDoubled is no fault: the steps after which an operation
	// was counted twice (simRun.invariants), counted to be reported.
	simKindDoubled = "(window: an operation in flight and notified apart)"
	// simKindPlatform+code counts the platform's own events played
	// (simulator.PlatformEvent): delivered like any notification.
	simKindPlatform = "platform event: "
	// simKindUnapplied is no fault: the steps after which the platform's
	// own refund, or its undoing, was not applied yet (simWindows).
	simKindUnapplied = "(window: a platform refund or its reversal not applied yet)"
)

// simPlatformEvents are the platform's own events a seed may play (one to
// three, drawn; EXPIRE besides one seed in three): the remainder cancelled
// by the platform or rejected in review, a refund undone or made outside
// the service, and events that move no money (a dispute and its chain —
// NOTIFICATION_OF_CHARGEBACK draws CHARGEBACK and CHARGEBACK_REVERSED after
// it —, a review accepted, a postponed refund, a token, a notice, a code the
// platform adds, an account-level report).
var simPlatformEvents = []string{"REFUNDED_REVERSED", "REFUND_WITH_DATA", "CANCELLATION", "TECHNICAL_CANCEL",
	"MANUAL_REVIEW_ACCEPT", "MANUAL_REVIEW_REJECT", "POSTPONED_REFUND", "RECURRING_CONTRACT", "NOTIFICATION_OF_CHARGEBACK",
	"REQUEST_FOR_INFORMATION", "NOTIFICATION_OF_FRAUD", "FUTURE_CODE_44", "REPORT_AVAILABLE"}

// simNeutral are the platform's events that move no money, as the platform
// has them (read apart from the service's table): each is kept on exactly
// one entry's notices and decides no operation's outcome.
var simNeutral = map[string]bool{"NOTIFICATION_OF_CHARGEBACK": true, "CHARGEBACK": true, "CHARGEBACK_REVERSED": true,
	"REQUEST_FOR_INFORMATION": true, "NOTIFICATION_OF_FRAUD": true, "FUTURE_CODE_44": true, "MANUAL_REVIEW_ACCEPT": true,
	"RECURRING_CONTRACT": true, "POSTPONED_REFUND": true}

// simKinds are the kinds every whole run must inject.
var simKinds = []string{simKind5xx, simKind5xxActed, simKindLost, simKindLostBefore, simKindTimeout, simKindTimeoutBefore,
	simKindRetry, simKindRetryRunning, simKindDuplicated, simKindReordered, simKindDelayed, simKindFailedBefore,
	simKindFailedAfter, simKindCrash, simKindCrashNotify, simKindCrashAnswered, simKindInterleaved,
	simKindAccepted + "captures", simKindAccepted + "refunds", simKindAccepted + "reversals", simKindAccepted + "amount-updates",
	simKindAccepted + "cancels", simKindPlatform + "EXPIRE", simKindPlatform + "CHARGEBACK", simKindPlatform + "CHARGEBACK_REVERSED"}

func init() {
	for _, code := range simPlatformEvents {
		simKinds = append(simKinds, simKindPlatform+code)
	}
}

// simCounts counts the faults injected, by kind, over a run's seeds.
type simCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *simCounts) add(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[kind]++
}

func (c *simCounts) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// Named points where an actor stops until the scheduler releases it.
const (
	simPointReserve  = "before reserve"              // an operation's request write
	simPointAnswered = "after the upstream answered" // its call answered, the answer not back yet
	simPointSettle   = "before settle"               // the write of the answer
	simPointSave     = "before the notification's event write"
	simPointCommit   = "between the writes of a notification" // event saved, payment not yet
	simPointMark     = "after the notification's commit"      // payment written, event not marked processed
)

// errSimCrashed is what a dead actor's writes fail with.
var errSimCrashed = errors.New("simulation: the service crashed")

// simActor is one goroutine of the service's work the scheduler runs: a
// merchant's request, a notification's delivery, a recovery pass.
type simActor struct {
	id     string
	resume chan bool // true: go on; false: die here
	dead   atomic.Bool
	op     *simOp   // a request's operation
	note   *simNote // a delivery's notification
	resp   testenv.Response
	failAt string // a delivery failed by injection: "before", "after" or ""
}

// simActorKey carries the actor in a request's context.
type simActorKey struct{}

func simActorOf(ctx context.Context) *simActor {
	a, _ := ctx.Value(simActorKey{}).(*simActor)
	return a
}

// simEvent is what an actor tells the scheduler: it stopped at point, or
// it is done.
type simEvent struct {
	a     *simActor
	point string
	done  bool
}

// simOp is one operation of the schedule.
type simOp struct {
	kind   string // captures, refunds, reversals, cancels, amount-updates
	amount int64
	key    string       // its Idempotency-Key and reference
	fault  string       // the fault of its first upstream call ("": none)
	calls  atomic.Int32 // its upstream calls so far
	// answered: a request of it was answered (last the status).
	answered bool
	status   int
	retries  int
	running  *simActor // its request running, if any
}

// body is o's request body (psp: the payment's pspReference).
func (o *simOp) body(psp string) string {
	switch o.kind {
	case "reversals", "cancels":
		return fmt.Sprintf(`{"reference":"%s"}`, o.key)
	case "amount-updates":
		return fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"},"pspReference":"%s","reference":"%s"}`, o.amount, psp, o.key)
	default:
		return fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"},"reference":"%s"}`, o.amount, o.key)
	}
}

// simNote is a notification the platform emitted, held until the
// scheduler delivers it.
type simNote struct {
	body    []byte
	item    upstream.NotificationRequestItem
	emitted int // the step it was emitted at (−1 until syncNotes)
	from    int // the first step it may be delivered at (a delay)
}

// simRun is one seed's simulation.
type simRun struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	e       *testenv.Env
	counts  *simCounts
	psp     string
	preAuth bool

	notify  http.Handler
	events  chan simEvent
	running atomic.Pointer[simActor]
	parked  []*simActor // stopped at a point, in the order they stopped
	points  map[*simActor]string
	ops     []*simOp
	byKey   map[string]*simOp
	step    int
	actors  int
	crashed bool
	// platform are the seed's platform events not played yet; played
	// their items, in the order played; dispute the chain's reference.
	platform []string
	played   []upstream.NotificationRequestItem
	dispute  string
	faults   atomic.Bool // faults are injected (off while draining)

	trace []string // what each step did, printed with a failure

	mu   sync.Mutex // guards held (the simulator's dispatcher adds to it)
	held []*simNote
}

// runSimulation plays seed on a fresh service (on DynamoDB when dyn, on
// the moto server at endpoint: "" for the test binary's).
func runSimulation(t *testing.T, dyn bool, endpoint string, seed uint64, counts *simCounts) {
	s := &simRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), counts: counts,
		events: make(chan simEvent), points: map[*simActor]string{}, byKey: map[string]*simOp{}}
	s.faults.Store(true)
	s.e = testenv.NewWith(t, testenv.Options{Dynamo: dyn, DynamoEndpoint: endpoint,
		// No wall-clock bound on upstream calls: an actor stays parked
		// inside its call ("after the upstream answered") for as many
		// steps as the schedule says, which on a loaded machine and moto
		// can outlast the default 30 s — the call then timed out on its
		// own and the actor ran on while parked (the soak saw it: "actor
		// … reported while … ran"). Timeouts are the injected faults; a
		// real hang fails at the binary's deadline (await).
		UpstreamTimeout: 24 * time.Hour,
		WrapPayments:    func(st payments.Store) payments.Store { return simPayments{Store: st, s: s} },
		WrapIdem:        func(st idempotency.Store) idempotency.Store { return simIdem{Store: st} },
		Simulator: func(o *simulator.Options) {
			o.Rand = rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
			o.Notifier = simulator.NotifierFunc(s.emitted)
		},
	})
	if dyn { // moto copies every table for each transaction: fewer tables, faster runs
		t.Cleanup(func() {
			_, err := s.e.DynamoDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(s.e.DynamoTable)})
			if err != nil {
				t.Errorf("delete table %s: %v", s.e.DynamoTable, err)
			}
		})
	}
	s.connect()
	t.Cleanup(s.stop)

	s.pay()
	s.ops = s.schedule()
	for range 1 + s.rng.IntN(3) {
		switch code := simPlatformEvents[s.rng.IntN(len(simPlatformEvents))]; {
		case code != "NOTIFICATION_OF_CHARGEBACK":
			s.platform = append(s.platform, code)
		case !slices.Contains(s.platform, code): // one dispute a seed
			s.platform = append(s.platform, code, "CHARGEBACK", "CHARGEBACK_REVERSED")
		}
	}
	if s.rng.IntN(3) == 0 {
		s.platform = append(s.platform, "EXPIRE")
	}
	for _, o := range s.ops {
		s.byKey[o.key] = o
	}
	s.e.Upstream.InjectRequest(s.inject)
	s.play()
	s.drain()
	s.agrees()
	if os.Getenv("PAYSVC_SIM_TRACE") != "" {
		t.Logf("trace:\n%s", strings.Join(s.trace, "\n"))
	}
}

// simNoSleep waits for nothing.
type simNoSleep struct{}

func (simNoSleep) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// connect tunes the service and builds the notifications endpoint the
// simulation delivers to: the service's, its event writes stopping at the
// notification points.
func (s *simRun) connect() {
	e := s.e
	// Steps wait for nothing: conflicts retry at once, a failed record
	// write (a dead actor's) is given up at once.
	e.Payments.SleepWith(simNoSleep{}).RetryRecordWritesFor(0)
	signer, err := upstream.NewSigner(testenv.HMACKey)
	if err != nil {
		s.t.Fatal(err)
	}
	inbox := &connector.Inbox{Signer: signer, Log: e.Deps.Log, Receiver: &notifications.Receiver{
		Events: simEvents{EventStore: e.SelfService, s: s}, Payments: e.Store, Tenants: e.Store,
		Deliveries: e.SelfService, Queue: e.Queue, Clock: e.Clock, Log: e.Deps.Log, Sleeper: simNoSleep{}}}
	s.notify = httpapi.Notifications(e.Deps, inbox, httpapi.BasicAuth{}, e.Handler)
}

// stop lets every actor still stopped at a point die there, and waits
// until each is done (a dead actor stops nowhere).
func (s *simRun) stop() {
	for _, a := range slices.Clone(s.parked) {
		a.dead.Store(true)
		a.resume <- false
		select {
		case <-s.events:
		case <-hang.Deadline(s.t):
			s.t.Errorf("seed=%d: actor %s never finished (a hang)", s.seed, a.id)
			return
		}
	}
	s.parked = nil
}

// emitted is the platform's delivery (the simulator's Notifier): the
// notification is held until the scheduler delivers it.
func (s *simRun) emitted(_ context.Context, body []byte) error {
	var n upstream.Notification
	if err := json.Unmarshal(body, &n); err != nil || len(n.NotificationItems) != 1 {
		return fmt.Errorf("notification %s: %v", body, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = append(s.held, &simNote{body: body, item: n.NotificationItems[0].Item, emitted: -1}) // stamped by syncNotes
	return nil
}

// pay makes the seed's payment: 100000 EUR, authorised, captured manually;
// a pre-authorisation one seed in three.
func (s *simRun) pay() {
	s.preAuth = s.rng.IntN(3) == 0
	body := cardBody(100000, fmt.Sprintf("order-%d", s.seed), "https://shop.example/r")
	if s.preAuth {
		body = strings.Replace(body, `"returnUrl"`, `"additionalData":{"authorisationType":"PreAuth"},"returnUrl"`, 1)
	}
	r := s.e.Do("POST", lsPayments, "A", body, "Idempotency-Key", fmt.Sprintf("pay-%d", s.seed))
	var out struct{ PSPReference, ResultCode string }
	if err := json.Unmarshal(r.Body, &out); err != nil || r.Status != 200 || out.ResultCode != "Authorised" {
		s.t.Fatalf("payment: %d %s", r.Status, r.Body)
	}
	s.psp = out.PSPReference
}

// schedule draws the seed's operations and the fault of each one's first
// upstream call.
func (s *simRun) schedule() []*simOp {
	n := 6 + s.rng.IntN(7)
	updates := 0 // a pre-authorisation's first operations update its amount (before anything is captured)
	if s.preAuth {
		updates = 1 + s.rng.IntN(3)
	}
	reversal, cancel := s.rng.IntN(4) == 0, s.rng.IntN(4) == 0
	// A reversal comes last, or first (after the amount updates) one time
	// in two: first it is mostly accepted (a cancel), last mostly refused
	// (part of the authorisation still capturable) or, after a cancel, a
	// refund of what was captured.
	reversalAt := n - 1 - s.rng.IntN(3)
	if s.rng.IntN(2) == 0 {
		reversalAt = updates
	}
	var ops []*simOp
	for i := range n {
		o := &simOp{key: fmt.Sprintf("s%d-op%d", s.seed, i)}
		switch r := s.rng.IntN(100); {
		case i < updates:
			o.kind, o.amount = "amount-updates", 50000+s.rng.Int64N(100001)
		case reversal && i == reversalAt:
			o.kind = "reversals"
		case cancel && i >= updates && i == n-1-s.rng.IntN(5) && !slices.ContainsFunc(ops, func(o *simOp) bool { return o.kind == "cancels" }):
			o.kind = "cancels"
		case s.preAuth && r < 10:
			o.kind, o.amount = "amount-updates", 50000+s.rng.Int64N(100001)
		case r < 60:
			o.kind, o.amount = "captures", 1+s.rng.Int64N(30000)
		default:
			o.kind, o.amount = "refunds", 1+s.rng.Int64N(20000)
		}
		switch r := s.rng.IntN(100); {
		case r < 8:
			o.fault = simKind5xx
		case r < 16:
			o.fault = simKind5xxActed
		case r < 26:
			o.fault = simKindLost
		case r < 31:
			o.fault = simKindLostBefore
		case r < 39:
			o.fault = simKindTimeout
		case r < 44:
			o.fault = simKindTimeoutBefore
		}
		ops = append(ops, o)
	}
	return ops
}

// inject is the platform's side of each upstream call: the call's fault,
// if any (the first call of an operation with one), and the stop after
// the platform answered.
func (s *simRun) inject(req testenv.Recorded) testenv.Fault {
	a := s.running.Load()
	if a == nil {
		return testenv.Fault{}
	}
	after := func() { _ = s.gate(a, simPointAnswered) }
	var in struct{ Reference string }
	_ = json.Unmarshal(req.Body, &in)
	o := s.byKey[in.Reference]
	if o == nil || a.dead.Load() {
		return testenv.Fault{After: after}
	}
	if o.calls.Add(1) > 1 || o.fault == "" || !s.faults.Load() {
		return testenv.Fault{After: after}
	}
	s.counts.add(o.fault)
	switch o.fault {
	case simKind5xx:
		return testenv.Fault{Status: 503}
	case simKind5xxActed:
		return testenv.Fault{Status: 500, Forward: true, After: after}
	case simKindLost:
		return testenv.Fault{Drop: true, Forward: true, After: after}
	case simKindLostBefore:
		return testenv.Fault{Drop: true}
	case simKindTimeout:
		return testenv.Fault{Timeout: true, Forward: true, After: after}
	default: // simKindTimeoutBefore
		return testenv.Fault{Timeout: true}
	}
}

// gate stops actor a at point until the scheduler releases it; a dead
// actor (or one released to die) gets errSimCrashed.
func (s *simRun) gate(a *simActor, point string) error {
	if a.dead.Load() {
		return errSimCrashed
	}
	s.events <- simEvent{a: a, point: point}
	if !<-a.resume {
		a.dead.Store(true)
		return errSimCrashed
	}
	return nil
}

// simPayments stops the writes of the actors' requests at their points.
type simPayments struct {
	payments.Store
	s *simRun
}

func (p simPayments) Write(ctx context.Context, w payments.Write) error {
	if a := simActorOf(ctx); a != nil {
		point := simPointSettle
		for _, e := range w.Entries {
			if e.Requested != nil && e.Answered == nil && len(e.Notices) == 0 {
				point = simPointReserve
			}
		}
		if err := p.s.gate(a, point); err != nil {
			return err
		}
	}
	return p.Store.Write(ctx, w)
}

// simIdem fails a dead actor's idempotency writes, as the crash did.
type simIdem struct{ idempotency.Store }

func (m simIdem) Complete(ctx context.Context, scope, key, token string, resp idempotency.Response, exp time.Time) error {
	if a := simActorOf(ctx); a != nil && a.dead.Load() {
		return errSimCrashed
	}
	return m.Store.Complete(ctx, scope, key, token, resp, exp)
}

func (m simIdem) Release(ctx context.Context, scope, key, token string) error {
	if a := simActorOf(ctx); a != nil && a.dead.Load() {
		return errSimCrashed
	}
	return m.Store.Release(ctx, scope, key, token)
}

// simEvents stops a notification's writes at their points.
type simEvents struct {
	notifications.EventStore
	s *simRun
}

func (ev simEvents) SaveEvent(ctx context.Context, e notifications.Event, prev int64) error {
	if a := simActorOf(ctx); a != nil {
		point := simPointSave
		if e.Status == notifications.EventProcessed {
			point = simPointMark
		}
		if err := ev.s.gate(a, point); err != nil {
			return err
		}
	}
	return ev.EventStore.SaveEvent(ctx, e, prev)
}

func (ev simEvents) CommitItem(ctx context.Context, c notifications.ItemCommit) error {
	if a := simActorOf(ctx); a != nil {
		if err := ev.s.gate(a, simPointCommit); err != nil {
			return err
		}
	}
	return ev.EventStore.CommitItem(ctx, c)
}

// log adds a line to the trace.
func (s *simRun) log(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("step %d: ", s.step)+fmt.Sprintf(format, args...))
}

// fatal fails the seed with what, the trace and the payment's entries.
func (s *simRun) fatal(what string) {
	s.t.Helper()
	es := s.entries()
	var lines []string
	for _, e := range es {
		b, _ := json.Marshal(e)
		lines = append(lines, string(b))
	}
	s.t.Fatalf("seed=%d: %s\ntrace:\n%s\nentries:\n%s", s.seed, what, strings.Join(s.trace, "\n"), strings.Join(lines, "\n"))
}

// start runs an actor's work on its own goroutine and waits until it
// stops at a point or is done.
func (s *simRun) start(a *simActor, work func(ctx context.Context)) {
	s.actors++
	a.id = fmt.Sprintf("%d:%s", s.actors, a.id)
	s.log("start %s", a.id)
	a.resume = make(chan bool)
	ctx := context.WithValue(context.Background(), simActorKey{}, a)
	go func() {
		work(ctx)
		s.events <- simEvent{a: a, done: true}
	}()
	s.await(a)
}

// release lets parked actor a go on (or die) and waits until it stops
// again or is done.
func (s *simRun) release(a *simActor, live bool) {
	point := s.points[a]
	s.parked = slices.DeleteFunc(s.parked, func(x *simActor) bool { return x == a })
	delete(s.points, a)
	if !live {
		a.dead.Store(true)
	}
	s.log("release %s at %q (live %v)", a.id, point, live)
	s.running.Store(a)
	a.resume <- live
	s.await(a)
}

// await waits for running actor a's next event.
func (s *simRun) await(a *simActor) {
	s.running.Store(a)
	defer s.running.Store(nil)
	var ev simEvent
	select {
	case ev = <-s.events:
	case <-hang.Deadline(s.t):
		s.t.Fatalf("seed=%d: actor %s neither stopped nor finished (a hang)", s.seed, a.id)
	}
	if ev.a != a {
		s.fatal(fmt.Sprintf("actor %s reported (point %q, done %v) while %s ran: the schedule is not deterministic", ev.a.id, ev.point, ev.done, a.id))
	}
	if !ev.done {
		if a.dead.Load() {
			s.t.Fatalf("seed=%d: dead actor %s stopped at %s", s.seed, a.id, ev.point)
		}
		s.parked = append(s.parked, a)
		s.points[a] = ev.point
		s.log("  %s stopped %q", a.id, ev.point)
		return
	}
	s.finished(a)
}

// finished takes in what actor a's work ended with.
func (s *simRun) finished(a *simActor) {
	s.log("  %s done: %d %s", a.id, a.resp.Status, a.resp.Body)
	switch {
	case a.op != nil:
		o := a.op
		if o.running == a {
			o.running = nil
		}
		o.answered, o.status = true, a.resp.Status
		switch {
		case a.dead.Load():
			o.status = simConnectionLost
		case a.resp.Status == 500 && strings.Contains(string(a.resp.Body), `"yp_9000"`):
			s.t.Errorf("seed=%d: %s answered %d %s", s.seed, a.id, a.resp.Status, a.resp.Body)
		case a.resp.Status == 200:
			s.counts.add(simKindAccepted + o.kind)
		}
	case a.note != nil:
		accepted := a.resp.Status == 200 && string(a.resp.Body) == "[accepted]"
		switch {
		case a.dead.Load():
			s.requeue(a.note) // the crash cut the post: the platform sends it again
		case a.failAt != "":
			s.requeue(a.note)
		case !accepted:
			s.t.Errorf("seed=%d: notification %s %s (success %s) answered %d %s", s.seed, a.note.item.EventCode,
				a.note.item.PSPReference, a.note.item.Success, a.resp.Status, a.resp.Body)
			s.requeue(a.note)
		}
	}
}

func (s *simRun) requeue(n *simNote) {
	s.mu.Lock()
	s.held = append(s.held, n)
	s.mu.Unlock()
}

// simConnectionLost is the status of a request whose service crashed:
// the merchant saw its connection close.
const simConnectionLost = 599

// request starts a request of operation o (a first one or a retry).
func (s *simRun) request(o *simOp) {
	a := &simActor{id: fmt.Sprintf("%s %s %d (fault %q)", o.key, o.kind, o.amount, o.fault), op: o}
	o.running = a
	s.start(a, func(ctx context.Context) {
		a.resp = s.e.DoContext(ctx, "POST", lsPayments+"/"+s.psp+"/"+o.kind, "A", o.body(s.psp), "Idempotency-Key", o.key)
	})
}

// deliver posts held notification n; failAt injects a delivery failure
// ("before": answered 500 unprocessed; "after": processed, then 500).
func (s *simRun) deliver(n *simNote, failAt string) {
	a := &simActor{id: fmt.Sprintf("notify %s %s %s success %s (fail %q)", n.item.EventCode, n.item.PSPReference, n.item.MerchantReference, n.item.Success, failAt), note: n, failAt: failAt}
	s.start(a, func(ctx context.Context) {
		if failAt == "before" {
			a.resp = testenv.Response{Status: 500}
			return
		}
		req := httptest.NewRequest(http.MethodPost, httpapi.NotificationsPath, bytes.NewReader(n.body)).WithContext(ctx)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.notify.ServeHTTP(w, req)
		a.resp = testenv.Response{Status: w.Code, Body: w.Body.Bytes()}
		if failAt == "after" {
			a.resp.Status = 500
		}
	})
}

// recover runs one pass of the recovery sweeper as an actor.
func (s *simRun) recover() payments.Recovered {
	var out payments.Recovered
	var err error
	a := &simActor{id: "recover"}
	s.start(a, func(ctx context.Context) {
		out, err = s.e.Payments.Recover(ctx, s.e.Store.(payments.InFlight), 100)
	})
	for slices.Contains(s.parked, a) {
		s.release(a, true)
	}
	if err != nil {
		s.t.Fatalf("seed=%d: recover: %v", s.seed, err)
	}
	return out
}

// syncNotes waits until every notification emitted so far is held.
func (s *simRun) syncNotes() {
	ctx, cancel := hang.Context(s.t)
	defer cancel()
	if err := s.e.Sim.Flush(ctx); err != nil {
		s.t.Fatalf("seed=%d: notifications not handed over: %v", s.seed, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.held {
		if n.emitted < 0 {
			n.emitted, n.from = s.step, s.step
		}
	}
}

// play runs the schedule with faults.
func (s *simRun) play() {
	next := 0
	for ; ; s.step++ {
		s.syncNotes()
		s.invariants()
		s.e.Clock.Advance(time.Second)
		type choice struct {
			weight int
			do     func()
		}
		var choices []choice
		if next < len(s.ops) {
			choices = append(choices, choice{3, func() { s.request(s.ops[next]); next++ }})
		}
		if len(s.parked) > 0 {
			choices = append(choices, choice{5, func() {
				a := s.parked[s.rng.IntN(len(s.parked))]
				if len(s.parked) > 1 && (s.points[a] == simPointReserve || s.points[a] == simPointSettle) {
					s.counts.add(simKindInterleaved)
				}
				s.release(a, true)
			}})
		}
		if s.deliverable() > 0 {
			choices = append(choices, choice{3, s.deliverOne})
		}
		if o := s.retryable(); o != nil {
			choices = append(choices, choice{1, func() { s.retry(o) }})
		}
		if !s.crashed && len(s.parked) > 0 && s.rng.IntN(6) == 0 {
			choices = append(choices, choice{1, s.crash})
		}
		if len(s.platform) > 0 {
			if len(choices) == 0 && s.heldCount() == 0 { // nothing else will happen: their last chance
				if !s.platformEvent() {
					s.log("platform events not applicable, dropped: %v", s.platform)
					s.platform = nil
				}
				continue
			}
			choices = append(choices, choice{1, func() { s.platformEvent() }})
		}
		if len(choices) == 0 {
			if s.heldCount() > 0 { // only notifications not deliverable yet: time passes
				s.step += 10
				continue
			}
			return
		}
		total := 0
		for _, c := range choices {
			total += c.weight
		}
		r := s.rng.IntN(total)
		for _, c := range choices {
			if r < c.weight {
				c.do()
				break
			}
			r -= c.weight
		}
	}
}

// platformEvent plays the first of the seed's platform events that
// applies now, on the simulator (no actor: it is the platform), and
// reports whether one did; its notification is held and delivered like
// any other. Each has its precondition, read from the platform (a
// succeeded refund to reverse, an uncaptured remainder to cancel or
// expire, …); one that does not apply yet is tried again at a later step.
func (s *simRun) platformEvent() bool {
	sim, _ := s.e.Sim.Payment(s.psp)
	for i, code := range s.platform {
		ev, ok := s.platformArgs(code, sim)
		if !ok {
			continue
		}
		psp := s.psp
		if code == "REPORT_AVAILABLE" {
			psp, ev.Account = "", "AlphaECOM"
		}
		it, err := s.e.Sim.PlatformEvent(psp, ev)
		if err != nil {
			s.log("platform %s: not applicable (%v)", code, err)
			continue
		}
		s.platform = slices.Delete(s.platform, i, i+1)
		s.played = append(s.played, it)
		if code == "NOTIFICATION_OF_CHARGEBACK" {
			s.dispute = it.PSPReference
		}
		s.counts.add(simKindPlatform + code)
		s.log("platform %s %s of %d", code, it.PSPReference, it.Amount.Value)
		return true
	}
	return false
}

// platformArgs is platform event code's event, given the platform's
// payment sim; false: it does not apply now.
func (s *simRun) platformArgs(code string, sim simulator.PaymentState) (simulator.PlatformEvent, bool) {
	ev := simulator.PlatformEvent{Code: code}
	var refunds []simulator.ModificationState // the platform's succeeded refunds
	for _, m := range sim.Modifications {
		if m.Kind == simulator.ModRefund && m.Success {
			refunds = append(refunds, m)
		}
	}
	switch code {
	case "NOTIFICATION_OF_CHARGEBACK": // a dispute of captured money
		ev.Amount = sim.CapturedValue
		return ev, sim.CapturedValue > 0
	case "CHARGEBACK", "CHARGEBACK_REVERSED": // the dispute continued, in order
		ev.Of, ev.Amount = s.dispute, sim.CapturedValue
		prev := "NOTIFICATION_OF_CHARGEBACK"
		if code == "CHARGEBACK_REVERSED" {
			prev = "CHARGEBACK"
		}
		return ev, s.dispute != "" && !slices.Contains(s.platform, prev)
	case "REFUNDED_REVERSED", "POSTPONED_REFUND": // of a refund the platform made
		// Not after a reversal the platform accepted: it took back all
		// that was captured, and how a refund reversed after it comes back
		// is not modelled by either ledger.
		reversed := slices.ContainsFunc(sim.Modifications, func(m simulator.ModificationState) bool {
			o := s.byKey[m.Reference]
			return o != nil && o.kind == "reversals" && m.Success
		})
		if len(refunds) == 0 || reversed {
			return ev, false
		}
		m := refunds[s.rng.IntN(len(refunds))]
		ev.Of, ev.Amount = m.PSPReference, m.Amount.Value
		return ev, true
	case "REFUND_WITH_DATA":
		// At most what the platform and the service both hold refundable,
		// less the service's refunds in flight: a refund outside the
		// service that leaves room for those it has sent; and only once
		// the merchant's refunds are all answered (none to start, run or
		// retry): a refund the service reserves before this one's
		// notification is applied cannot know of it.
		if slices.ContainsFunc(s.ops, func(o *simOp) bool {
			return o.kind == "refunds" && (!o.answered || o.running != nil || o.status >= 500 && o.retries < 2)
		}) {
			return ev, false
		}
		h := headOf(s.t, s.e, s.psp)
		t := h.Totals
		room := min(sim.CapturedValue-sim.RefundedValue, t.Captured-t.Refunded) - t.RefundsInFlight
		if room <= 0 {
			return ev, false
		}
		ev.Amount = 1 + s.rng.Int64N(min(room, 20000))
		return ev, true
	}
	return ev, true
}

// heldCount counts the held notifications.
func (s *simRun) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// deliverable counts the held notifications that may be delivered now.
func (s *simRun) deliverable() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.held {
		if h.from <= s.step || !s.faults.Load() {
			n++
		}
	}
	return n
}

// deliverOne delivers a held notification: the oldest, or (reordered)
// another; some stay held a while (delayed), some are kept to be sent
// again (duplicated), some fail.
func (s *simRun) deliverOne() {
	s.mu.Lock()
	var ready []int
	for i, h := range s.held {
		if h.from <= s.step || !s.faults.Load() {
			ready = append(ready, i)
		}
	}
	i := ready[0]
	if s.faults.Load() && len(ready) > 1 && s.rng.IntN(3) == 0 {
		i = ready[1+s.rng.IntN(len(ready)-1)]
		s.counts.add(simKindReordered)
	}
	n := s.held[i]
	if s.faults.Load() && n.from == n.emitted && s.rng.IntN(5) == 0 { // delay it instead
		n.from = s.step + 2 + s.rng.IntN(6)
		s.mu.Unlock()
		return
	}
	s.held = slices.Delete(s.held, i, i+1)
	if n.from > n.emitted && s.faults.Load() {
		s.counts.add(simKindDelayed)
	}
	failAt := ""
	if s.faults.Load() {
		if s.rng.IntN(5) == 0 {
			c := *n
			s.held = append(s.held, &c)
			s.counts.add(simKindDuplicated)
		}
		switch s.rng.IntN(10) {
		case 0:
			failAt = "before"
			s.counts.add(simKindFailedBefore)
		case 1:
			failAt = "after"
			s.counts.add(simKindFailedAfter)
		}
	}
	s.mu.Unlock()
	s.deliver(n, failAt)
}

// retryable is an operation the merchant may retry now: one answered 5xx,
// or (a client that gave up) one still running.
func (s *simRun) retryable() *simOp {
	var out []*simOp
	for _, o := range s.ops {
		if o.retries < 2 && o.running == nil && o.answered && o.status >= 500 ||
			o.retries < 1 && o.running != nil && !o.answered {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[s.rng.IntN(len(out))]
}

// retry sends operation o again with its Idempotency-Key.
func (s *simRun) retry(o *simOp) {
	o.retries++
	if o.running != nil {
		s.counts.add(simKindRetryRunning)
		a := &simActor{id: o.key + " retry", op: o}
		s.start(a, func(ctx context.Context) {
			a.resp = s.e.DoContext(ctx, "POST", lsPayments+"/"+s.psp+"/"+o.kind, "A", o.body(s.psp), "Idempotency-Key", o.key)
		})
		return
	}
	s.counts.add(simKindRetry)
	s.request(o)
}

// crash kills every actor stopped at a point, there, and restarts the
// service (testenv Env.Restart: on the embedded store the store is closed
// and opened again); the restarted service's clock is past the
// idempotency lease and the recovery delay, and its recovery sweeper
// runs.
func (s *simRun) crash() {
	s.crashed = true
	s.counts.add(simKindCrash)
	s.log("crash")
	for _, a := range slices.Clone(s.parked) {
		switch s.points[a] {
		case simPointSave, simPointCommit, simPointMark:
			s.counts.add(simKindCrashNotify)
		case simPointAnswered:
			s.counts.add(simKindCrashAnswered)
		}
		s.release(a, false)
	}
	s.e.Restart()
	s.connect()
	s.e.Clock.Advance(payments.RecoverAfter + time.Minute)
	s.recover()
}

// drain ends the run without faults: every actor goes on to its end, every
// notification is delivered, and Recover runs until nothing is in flight.
func (s *simRun) drain() {
	s.faults.Store(false)
	for round := 0; ; round++ {
		if round == 20 {
			h, _ := s.e.Store.GetPayment(context.Background(), s.psp)
			s.t.Fatalf("seed=%d: not drained after %d rounds: totals %+v, %d held, %d stopped", s.seed, round, h.Totals, s.heldCount(), len(s.parked))
		}
		for len(s.parked) > 0 {
			s.release(s.parked[0], true)
			s.syncNotes()
			s.invariants()
		}
		for s.syncNotes(); s.deliverable() > 0; s.syncNotes() {
			s.deliverOne()
			for len(s.parked) > 0 {
				s.release(s.parked[0], true)
			}
			s.invariants()
			s.step++
		}
		h := headOf(s.t, s.e, s.psp)
		t := h.Totals
		if t.CapturesInFlight == 0 && t.RefundsInFlight == 0 && t.ReversalsInFlight == 0 && t.AmountUpdatesInFlight == 0 && t.CancelsInFlight == 0 {
			return
		}
		s.e.Clock.Advance(payments.RecoverAfter + time.Minute)
		s.recover()
	}
}

// invariants checks the record after a step: no guard crossed, nothing
// negative, in flight bounded, and the service never believes more than
// the platform did nor misses what the platform did.
//
// One window is allowed for, as docs/payments.md describes it: a
// notification of an operation whose answer was lost (not recorded yet)
// makes an entry of its own, under the platform's pspReference, until the
// answer — repeated by a retry or Recover — merges the two; meanwhile the
// operation's amount is both in flight and notified. The bounds hold for
// the record without those doubles (simRun.doubles), and the raw
// capturable and refundable are at least minus the doubles.
//
// And the window in which the platform has acted on its own and its
// notification has not been applied (simWindows): a REFUND_WITH_DATA the
// service does not know yet, a refund the platform reversed that the
// service still counts.
func (s *simRun) invariants() {
	s.t.Helper()
	h := headOf(s.t, s.e, s.psp)
	sim, _ := s.e.Sim.Payment(s.psp)
	bad := simViolations(h, sim, simWindow{})
	if len(bad) > 0 { // without the doubles and the platform's own refunds not applied (read only then: they cost the entries)
		es := s.entries()
		w := simWindows(sim, es)
		w.dupCaptures, w.dupRefunds = s.doubles(sim, es)
		if w.unapplied+w.notUndone > 0 {
			s.counts.add(simKindUnapplied)
		}
		bad = simViolations(h, sim, w)
	}
	if len(bad) > 0 {
		t := h.Totals
		s.fatal(fmt.Sprintf("step %d: %s\ntotals %+v, authorised %d; the platform: authorised %d, captured %d, refunded %d, %s",
			s.step, strings.Join(bad, "; "), t, h.Authorised, sim.AuthorisedValue, sim.CapturedValue, sim.RefundedValue, sim.State))
	}
}

// simWindow are the amounts the windows account for: the capture and
// refund amounts counted twice (simRun.doubles), the platform's own refunds
// not applied yet and the refunds it reversed that the service still
// counts (simWindows).
type simWindow struct {
	dupCaptures, dupRefunds int64
	unapplied, notUndone    int64
}

// simWindows are the platform's own refunds the service has not applied:
// of each REFUND_WITH_DATA (a succeeded refund of no merchant reference)
// what the entries of its pspReference do not count refunded, and of each
// refund the platform reversed what they still count.
func simWindows(sim simulator.PaymentState, es []payments.Entry) simWindow {
	counted := map[string]int64{} // refunded the service counts, by the platform's reference
	for _, e := range es {
		if e.MergedInto == "" && e.Modification != "" {
			counted[e.Modification] += e.Contribution().Refunded
		}
	}
	var w simWindow
	for _, m := range sim.Modifications {
		switch {
		case m.Kind != simulator.ModRefund:
		case m.Success && m.Reference == "":
			w.unapplied += max(0, m.Amount.Value-counted[m.PSPReference])
		case !m.Success && m.Reason == "Refunded reversed":
			w.notUndone += counted[m.PSPReference]
		}
	}
	return w
}

// simViolations are the invariants head h breaks, given the platform's
// payment sim and the amounts the windows account for.
func simViolations(h payments.Head, sim simulator.PaymentState, w simWindow) []string {
	t := h.Totals
	dupCaptures, dupRefunds := w.dupCaptures, w.dupRefunds
	var bad []string
	for _, c := range []struct {
		name string
		v    int64
	}{{"captured", t.Captured}, {"captures in flight", t.CapturesInFlight}, {"refunded", t.Refunded},
		{"refunds in flight", t.RefundsInFlight}, {"capturable (doubles aside)", t.Capturable + dupCaptures},
		{"refundable (doubles aside)", t.Refundable + dupRefunds}, {"reversals", t.Reversals},
		{"reversals in flight", t.ReversalsInFlight}, {"amount updates in flight", t.AmountUpdatesInFlight},
		{"released", t.Released}, {"expired", t.Expired}, {"cancels in flight", t.CancelsInFlight}} {
		if c.v < 0 {
			bad = append(bad, fmt.Sprintf("%s %d < 0", c.name, c.v))
		}
	}
	if v := h.View(); v.Capturable < 0 || v.Refundable < 0 {
		bad = append(bad, fmt.Sprintf("the API shows capturable %d, refundable %d", v.Capturable, v.Refundable))
	}
	if t.Captured+t.CapturesInFlight-dupCaptures > h.Authorised {
		bad = append(bad, fmt.Sprintf("captured %d + in flight %d (%d of them doubles) > authorised %d", t.Captured, t.CapturesInFlight, dupCaptures, h.Authorised))
	}
	if t.Refunded+t.RefundsInFlight-dupRefunds > t.Captured {
		bad = append(bad, fmt.Sprintf("refunded %d + in flight %d (%d of them doubles) > captured %d", t.Refunded, t.RefundsInFlight, dupRefunds, t.Captured))
	}
	if sim.CapturedValue > t.Captured+t.CapturesInFlight {
		bad = append(bad, fmt.Sprintf("the platform captured %d; the service knows %d and has %d in flight", sim.CapturedValue, t.Captured, t.CapturesInFlight))
	}
	if t.Captured > sim.CapturedValue {
		bad = append(bad, fmt.Sprintf("captured %d; the platform captured %d", t.Captured, sim.CapturedValue))
	}
	if t.Reversals == 0 && t.ReversalsInFlight == 0 && sim.RefundedValue-w.unapplied > t.Refunded+t.RefundsInFlight {
		bad = append(bad, fmt.Sprintf("the platform refunded %d (%d of it not notified yet); the service knows %d and has %d in flight",
			sim.RefundedValue, w.unapplied, t.Refunded, t.RefundsInFlight))
	}
	if t.Refunded-w.notUndone > sim.RefundedValue {
		bad = append(bad, fmt.Sprintf("refunded %d (%d of it reversed by the platform, not notified yet); the platform refunded %d",
			t.Refunded, w.notUndone, sim.RefundedValue))
	}
	return bad
}

// entries are payment psp's entries (those its timeline names, and the
// payment's own entries of the platform's events: expiry, dispute,
// notice).
func (s *simRun) entries() []payments.Entry {
	refs := []string{"expiry", "dispute", "notice"}
	for _, it := range s.played {
		if it.EventCode != "REPORT_AVAILABLE" && !slices.Contains(refs, it.PSPReference) {
			refs = append(refs, it.PSPReference)
		}
	}
	entries := timelineEntries(s.t, s.e, s.psp, refs...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Ref < entries[j].Ref })
	return entries
}

// timelineEntries are payment psp's entries that its timeline names, and
// those of refs.
func timelineEntries(t *testing.T, e *testenv.Env, psp string, refs ...string) []payments.Entry {
	t.Helper()
	for _, f := range e.Timeline(psp) {
		if f.PSPReference != "" && !slices.Contains(refs, f.PSPReference) {
			refs = append(refs, f.PSPReference)
		}
	}
	var entries []payments.Entry
	for chunk := range slices.Chunk(refs, 50) {
		es, err := e.Store.GetEntries(context.Background(), psp, chunk...)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, es...)
	}
	return entries
}

// doubles are the capture and refund amounts counted twice: operations
// awaiting their answer whose platform modification (the platform's
// ledger names it by the operation's reference) has an entry of its own,
// made by its notification.
func (s *simRun) doubles(sim simulator.PaymentState, es []payments.Entry) (captures, refunds int64) {
	if len(sim.Modifications) == 0 {
		return 0, 0
	}
	notified := map[string]bool{} // the references of the operations notified in entries of their own
	for _, e := range es {
		if e.Requested != nil || e.MergedInto != "" {
			continue
		}
		for _, m := range sim.Modifications {
			if m.PSPReference == e.Ref {
				notified[m.Reference] = true
			}
		}
	}
	for _, e := range es {
		if !e.AwaitsAnswer() || !notified[e.Requested.Reference] {
			continue
		}
		if succeeded, failed := simOutcome(e); succeeded || failed {
			continue
		}
		switch e.Kind {
		case payments.OpCapture:
			captures += e.Requested.Amount.Value
		case payments.OpRefund:
			refunds += e.Requested.Amount.Value
		}
	}
	if captures+refunds > 0 {
		s.counts.add(simKindDoubled)
	}
	return captures, refunds
}

// agrees checks the drained record against the platform's ledger: the
// amounts and state, what can still be captured and refunded, nothing in
// flight, the cached totals equal to the fold of the entries, and each
// operation's outcome.
func (s *simRun) agrees() {
	t := s.t
	ctx := context.Background()
	h := headOf(t, s.e, s.psp)
	sim, _ := s.e.Sim.Payment(s.psp)
	byRef := map[string]simulator.ModificationState{}
	reversed := false
	for _, m := range sim.Modifications {
		byRef[m.PSPReference] = m
		if o := s.byKey[m.Reference]; o != nil && o.kind == "reversals" && m.Success {
			reversed = true
		}
	}
	v := h.View()
	want := payments.State(sim.State)
	switch {
	case sim.State == simulator.StateCancelled:
	case sim.RefundedValue > 0 && sim.RefundedValue >= sim.CapturedValue:
		want = payments.StateRefunded
	case sim.RefundedValue > 0:
		want = payments.StatePartiallyRefunded
	}
	capturable, refundable := sim.AuthorisedValue-sim.CapturedValue, sim.CapturedValue-sim.RefundedValue
	if reversed {
		capturable, refundable = 0, 0
	}
	if sim.Released || sim.RemainderClosed || sim.State == simulator.StateCancelled { // expired or cancelled, or a single-capture account's capture released the rest
		capturable = 0
	}
	tt := h.Totals
	if v.Authorised != sim.AuthorisedValue || v.Captured != sim.CapturedValue || v.Refunded != sim.RefundedValue ||
		v.State != want || v.Capturable != capturable || v.Refundable != refundable ||
		tt.CapturesInFlight != 0 || tt.RefundsInFlight != 0 || tt.ReversalsInFlight != 0 || tt.AmountUpdatesInFlight != 0 || tt.CancelsInFlight != 0 {
		t.Fatalf("seed=%d: record %+v (totals %+v); the platform: authorised %d, captured %d, refunded %d, %s; want %s, capturable %d, refundable %d",
			s.seed, v, tt, sim.AuthorisedValue, sim.CapturedValue, sim.RefundedValue, sim.State, want, capturable, refundable)
	}
	entries := s.entries()
	if fold := payments.Fold(h, entries); fold != h.Totals {
		t.Fatalf("seed=%d: cached totals %+v, the fold of the %d entries %+v", s.seed, h.Totals, len(entries), fold)
	}
	// Each operation's outcome: every entry that counts is one of the
	// platform's modifications, with its kind, amount and success.
	kinds := map[payments.OpKind][]string{payments.OpCapture: {simulator.ModCapture}, payments.OpRefund: {simulator.ModRefund},
		payments.OpReversal: {simulator.ModCancel, simulator.ModRefund}, payments.OpAmountUpdate: {simulator.ModAmountUpdate},
		payments.OpCancel: {simulator.ModCancel}, payments.OpKind("expiry"): {simulator.ModExpire}}
	seen := map[string]bool{}
	var problems []string
	for _, e := range entries {
		if e.MergedInto != "" {
			continue
		}
		if e.Kind == "dispute" || e.Kind == "notice" { // the platform's facts that move no money
			if e.Contribution() != (payments.Totals{}) || len(e.Notices) == 0 {
				problems = append(problems, fmt.Sprintf("entry %s (%s) moves money or holds nothing: %+v", e.Ref, e.Kind, e))
			}
			continue
		}
		succeeded, failed := simOutcome(e)
		if !succeeded && !failed {
			problems = append(problems, fmt.Sprintf("entry %s (%s) has no outcome: %+v", e.Ref, e.Kind, e))
			continue
		}
		m, ok := byRef[e.Modification]
		switch {
		case !ok && succeeded:
			problems = append(problems, fmt.Sprintf("entry %s (%s) succeeded as %q, unknown to the platform", e.Ref, e.Kind, e.Modification))
		case !ok:
		case m.Success != succeeded:
			problems = append(problems, fmt.Sprintf("entry %s (%s): succeeded %v; the platform's %s %s: success %v", e.Ref, e.Kind, succeeded, m.Kind, m.PSPReference, m.Success))
		case !slices.Contains(kinds[e.Kind], m.Kind):
			problems = append(problems, fmt.Sprintf("entry %s is a %s; the platform's %s is a %s", e.Ref, e.Kind, m.PSPReference, m.Kind))
		case e.Kind != payments.OpReversal && e.Kind != payments.OpCancel && e.Requested != nil && e.Requested.Amount.Value != m.Amount.Value:
			problems = append(problems, fmt.Sprintf("entry %s: %d; the platform's %s: %d", e.Ref, e.Requested.Amount.Value, m.PSPReference, m.Amount.Value))
		}
		if ok {
			if seen[m.PSPReference] {
				problems = append(problems, fmt.Sprintf("the platform's %s is in two entries", m.PSPReference))
			}
			seen[m.PSPReference] = true
		}
	}
	for _, m := range sim.Modifications {
		if !seen[m.PSPReference] {
			problems = append(problems, fmt.Sprintf("the platform's %s %s of %d (success %v) is in no entry", m.Kind, m.PSPReference, m.Amount.Value, m.Success))
		}
	}
	// Every event that moves no money is on exactly one entry's notices
	// (once, however often the platform sent it), and each report is
	// listed once among the account-level events.
	reports := 0
	on := map[[2]string]int{}
	for _, it := range s.played {
		switch {
		case it.EventCode == "REPORT_AVAILABLE":
			reports++
		case simNeutral[it.EventCode]:
			on[[2]string{it.EventCode, it.PSPReference}] = 0
		}
	}
	for _, e := range entries {
		for _, n := range e.Notices {
			k := [2]string{n.Code, cmp.Or(e.Modification, e.Ref)}
			if _, ok := on[k]; ok && e.MergedInto == "" {
				on[k]++
			}
		}
	}
	for k, n := range on {
		if n != 1 {
			problems = append(problems, fmt.Sprintf("the platform's %s %s is on %d entries' notices", k[0], k[1], n))
		}
	}
	if listed, err := s.e.SelfService.ListEvents(ctx, notifications.EventAccount, 0); err != nil || len(listed) != reports ||
		slices.ContainsFunc(listed, func(ev notifications.Event) bool { return ev.Item.EventCode != "REPORT_AVAILABLE" }) {
		problems = append(problems, fmt.Sprintf("account-level events: %+v, %v; %d reports played", listed, err, reports))
	}
	if len(problems) > 0 {
		t.Fatalf("seed=%d: operations differ from the platform's:\n%s", s.seed, strings.Join(problems, "\n"))
	}
}

// simOutcome is an entry's outcome as the platform's facts say (read
// apart from the service's table): a refusal, a failure notified (a
// *_FAILED code, or a result code with success false) or its undoing
// (REFUNDED_REVERSED) fails it; an acceptance (answered received, or a
// success notified) makes it succeed; the events that move no money
// (simNeutral) decide nothing.
func simOutcome(e payments.Entry) (succeeded, failed bool) {
	if e.Answered != nil && e.Answered.Outcome == payments.Refused {
		return false, true
	}
	ok := e.Answered != nil && e.Answered.Outcome == payments.Received
	for _, n := range e.Notices {
		switch {
		case simNeutral[n.Code]:
		case strings.HasSuffix(n.Code, "_FAILED") || !n.Success || n.Code == "REFUNDED_REVERSED":
			return false, true
		default:
			ok = true
		}
	}
	return ok, false
}
