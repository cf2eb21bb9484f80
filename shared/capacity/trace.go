package capacity

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
)

// Mix is a synthetic trace: one merchant starting Rate payments per second
// for Seconds seconds, through one API key, and what follows each payment.
// Shares are of payments unless said otherwise; which payment does what is
// a fixed function of its number, so a trace is reproducible.
type Mix struct {
	Rate    int // payments started per second
	Seconds int
	// Sample simulates one payment in Sample and weighs each of its
	// operations by Sample (1: every payment). Partition loads of keys
	// shared by many payments come out the same; per-payment keys are
	// overstated by at most the factor, far below any limit.
	Sample int

	ThreeDS  float64 // answered RedirectShopper, finished by POST payments/details
	Refused  float64 // refused (no capture)
	Captured float64 // of the authorised: captured by POST captures (manual capture)
	Refunded float64 // of the captured: refunded by POST reversals
	Replayed float64 // POST payments sent again with its Idempotency-Key (a replay)
	// Sessions: checkouts that create a session first (POST sessions; the
	// payment itself is still metered as a POST payments, which
	// overstates a sessions flow's payment).
	Sessions float64
	// AmountUpdates: of the authorised, an amount update (POST
	// amount-updates) after the AUTHORISATION notification, notified by
	// AUTHORISATION_ADJUSTMENT, before any capture. A pre-authorisation's
	// (hotels, car rental): none in FullMix's web shop; cmd/paysvc-bench's
	// probe mix has some.
	AmountUpdates float64
	// PartRefunds: of the captured and not reversed, a partial refund (POST
	// refunds) after the CAPTURE notification.
	PartRefunds float64
	// Lookups: of the payments, one looked up by the merchant (GET
	// payment: its head and the first page of its timeline) a second
	// after its AUTHORISATION notification. None in FullMix (issue 16's
	// trace has no merchant reads); the probe mix has some.
	Lookups float64
	// TimelinePages: of the payments, a page of the timeline read (GET
	// payment timeline) a second after its AUTHORISATION notification.
	// None in FullMix either.
	TimelinePages float64
	// RateOnly: of the checkouts, one GET config and one POST
	// payment-methods before the payment, and one DELETE of a stored
	// payment method (each writes only its rate-limit hit). None in
	// FullMix either.
	RateOnly float64
	// NoKey: of the payments, sent without an Idempotency-Key (no claim,
	// no stored answer). None in FullMix either.
	NoKey float64
	// Redrives: of the payments, its AUTHORISATION's delivery to the first
	// subscription retried by the merchant (POST webhook-deliveries
	// retry) a second after the notification, as after it ended failed.
	// None in FullMix either.
	Redrives float64
	// WebhookTests: of the payments, one POST webhooks/test by its
	// merchant (it lists the merchant's subscriptions from the store, not
	// a cache: a test is sent to the subscriptions as they are now). None
	// in FullMix either.
	WebhookTests float64

	Subscriptions int     // the merchant's webhook subscriptions (every event code)
	Failing       float64 // of the deliveries: to a failing receiver
	FailAttempts  int     // attempts a failing receiver fails before one succeeds

	KeyRate  int           // the API key's rate limit (requests/s; burst the same)
	CacheTTL time.Duration // per-instance tenant cache (PAYSVC_AUTH_CACHE_TTL)
	// Instances are the warm Lambda instances of each function (its
	// concurrency): each refreshes its tenant cache once per CacheTTL.
	Instances map[string]int

	// Timing, in seconds after the step before.
	DetailsAfter, CaptureAfter, RefundAfter, NotifyAfter int

	// Listings of the merchant's failed deliveries per second (a dashboard
	// polling): each reads every delivery shard of gsi2 and the page's
	// items.
	Listings int
	// EventListings are pages of the merchant's event history read per
	// second (GET /v1/ecom/events, default limit): each reads every shard
	// of the history, up to a page from each.
	EventListings int
	// DeliveryShards and EventShards are the merchant's listing shard
	// counts (0: the table's, dynamo.DeliveryShards and EventLogShards,
	// what a merchant at this rate is raised to).
	DeliveryShards, EventShards int
}

// FullMix is issue 16's trace: 10,000 payments/s for 60 s with a realistic
// mix. Instances follow from Little's law at the durations of docs/scale.md
// (payments 0.35 s with the upstream, modifications 0.3 s, notifications
// 0.05 s, dispatcher 0.1 s per batch of 10).
func FullMix() Mix {
	return Mix{
		Rate: 10_000, Seconds: 60, Sample: 1,
		ThreeDS: 0.25, Refused: 0.08, Captured: 0.6, Refunded: 0.03, PartRefunds: 0.02, Replayed: 0.01, Sessions: 0.2,
		Subscriptions: 2, Failing: 0.05, FailAttempts: 3,
		KeyRate: 20_000, CacheTTL: 5 * time.Second,
		Instances: map[string]int{
			"payments": 4_400, "modifications": 1_900, "notifications": 900, "dispatcher": 400,
		},
		DetailsAfter: 8, CaptureAfter: 2, RefundAfter: 5, NotifyAfter: 1,
		Listings: 1, EventListings: 1,
	}
}

// SmallMix is FullMix for 1 s with every step of a payment in the second
// it started (retries aside): that second carries what a second of the
// sustained full trace carries, at the full rate, for go test.
func SmallMix() Mix {
	m := FullMix()
	m.Seconds = 1
	m.DetailsAfter, m.CaptureAfter, m.RefundAfter, m.NotifyAfter = 0, 0, 0, 0
	return m
}

// Trace identities (the merchant, its site and key).
const (
	traceMerchant = "m_bigshop"
	traceSite     = "site_bigshop_web"
	traceKeyID    = "key_server_1"
	traceAccount  = "BigShopECOM"
)

// Request kinds counted per payment (cost.go).
const (
	ReqPayments = "POST payments"
	// ReqPaymentsAction is, in TraceResult.Calls and Shapes, a POST
	// payments the platform answers with an action and no pspReference
	// (a 3-D Secure payment: its pending record and its action's alias);
	// counted as ReqPayments in Requests.
	ReqPaymentsAction = "POST payments (an action answered)"
	// ReqPaymentsNoKeyAction is the same without an Idempotency-Key
	// (counted as ReqPaymentsNoKey).
	ReqPaymentsNoKeyAction = "POST payments (no Idempotency-Key, an action answered)"
	ReqReplay              = "POST payments (replay)"
	ReqDetails             = "POST payments/details"
	ReqCaptures            = "POST captures"
	ReqReversals           = "POST reversals"
	ReqRefunds             = "POST refunds"
	ReqAmountUpdates       = "POST amount-updates"
	ReqSessions            = "POST sessions"
	ReqLookups             = "GET payment"
	ReqTimeline            = "GET payment timeline (a page)"
	ReqConfig              = "GET config"
	ReqMethods             = "POST payment-methods"
	ReqDeleteStored        = "DELETE stored-payment-methods"
	ReqPaymentsNoKey       = "POST payments (no Idempotency-Key)"
	ReqRedrives            = "POST webhook-deliveries retry"
	ReqWebhookTest         = "POST webhooks/test"
	// Listings (a page each), for TraceResult.Calls and Shapes only: the
	// trace makes Mix.Listings and EventListings per second.
	ReqListDeliveries = "GET webhook-deliveries (a page)"
	ReqListEvents     = "GET events (a page)"
	ReqNotifications  = "notification (receiver)"
	// ReqAuthorisationBinding is, in TraceResult.Calls and Shapes, the
	// AUTHORISATION notification of a payment recorded from bare details:
	// it reads the pending record and binds it.
	ReqAuthorisationBinding = "notification AUTHORISATION (binding a pending record)"
	ReqAttempts             = "webhook attempt (dispatcher)"
	// ReqAttemptsFailed is, in TraceResult.Calls, Shapes and Units, an
	// attempt whose receiver failed (its retry scheduled); counted as
	// ReqAttempts in Requests.
	ReqAttemptsFailed = "webhook attempt, the receiver failing (dispatcher)"
	ReqHops           = "webhook retry hop (dispatcher, not yet due)"
	ReqSQSSend        = "SQS SendMessage"
)

// TraceResult is a replayed trace: the meter's counts and the requests
// made, weighted.
type TraceResult struct {
	Mix      Mix
	Payments float64
	Requests map[string]float64
	// Calls are the DynamoDB calls of one request of each kind, tenant
	// reads (cached) aside: what cmd/paysvc-bench counts on moto.
	Calls map[string]float64
	// Shapes are those calls by shape (shape.go): how many of each a
	// request of the kind makes.
	Shapes map[string]map[string]float64
	// Units are the write and read units one request of each kind takes,
	// by key family (Part.Family), tenant reads aside.
	Units map[string]map[string]Units
	// SQSDelayed is how many messages of the deliveries queue wait out a
	// delay at once under this traffic sustained: a failed attempt's
	// retry is a new message delayed by the backoff (in hops of at most
	// 15 minutes), not in flight (see InFlight).
	SQSDelayed float64
	// PaymentMeta and PaymentEntry are the largest payment META item and
	// history item of the trace, in bytes: a record's items do not grow
	// with its history (each entry is its own item).
	PaymentMeta, PaymentEntry int
	// UnroutableWCU is the unroutable list's write load if every
	// notification of the trace arrived for an unknown merchant account
	// (the account not configured yet): each event's list entry written in
	// a transaction with the event (2 units per KB), at the trace's
	// notifications per second. It sizes dynamo.UnroutableShards.
	UnroutableWCU float64
	Result
}

// SQSInFlightQuota is SQS's in-flight limit of a standard queue (about
// 120,000; raised on request to AWS support).
const SQSInFlightQuota = 120_000

// InFlight is how many messages of the deliveries queue are in flight
// (received, not yet deleted) at once under this traffic sustained, when
// each is in flight while its batch runs: m's billed durations of a batch
// of attempts and of a batch of hops (Little's law; the event source's own
// receive and delete latency is not included).
func (t *TraceResult) InFlight(m Measured) float64 {
	perSecond := func(req string) float64 { return t.Requests[req] / float64(t.Mix.Seconds) }
	return perSecond(ReqAttempts)*m.Functions[ReqAttempts].DurationMS/1000 +
		perSecond(ReqHops)*m.Functions[ReqHops].DurationMS/1000
}

type taskKind uint8

const (
	kPay taskKind = iota
	kReplay
	kDetails
	kNotify
	kCapture
	kRefund
	kAttempt
	kSession
	kAmountUpdate
	kPartRefund
	kLookup
	kTimeline
	kConfig
	kMethods
	kPayNoKey
	kRedrive
	kDeleteStored
	kWebhookTest
)

// task is one step of one payment's life, at a second of the trace.
type task struct {
	kind    taskKind
	code    uint8 // kNotify, kAttempt: index in eventCodes
	sub     uint8 // kAttempt: subscription
	attempt uint8 // kAttempt: 1-based
	i       int   // the payment's number
}

var eventCodes = []string{upstream.EventAuthorisation, upstream.EventCapture, upstream.EventRefund, upstream.EventAuthorisationAdjustment}

// Indexes in eventCodes.
const (
	codeAuthorisation = iota
	codeCapture
	codeRefund
	codeAdjustment
)

// Run replays m and meters it: each request's DynamoDB calls are those
// the adapter made for a request of its kind in rec, templated for the
// simulated request (templ.go); m's merchant must be rec's (its
// subscriptions and listing shard counts).
func Run(m Mix, rec *Recordings) (*TraceResult, error) {
	if m.Rate <= 0 || m.Seconds <= 0 || m.Sample <= 0 || m.Subscriptions <= 0 || m.KeyRate <= 0 {
		return nil, fmt.Errorf("capacity: invalid mix %+v", m)
	}
	r := &replay{
		mix: m, rec: rec, meter: NewMeter(), queue: map[int][]task{}, requests: map[string]float64{}, rateCounts: map[string]int{},
		shapes: map[string]map[string]int{}, units: map[string]map[string]Units{}, runs: map[string]int{},
	}
	r.meter.Weight = float64(m.Sample)
	if err := r.tenants(); err != nil {
		return nil, err
	}
	if err := rec.check(m, r.deliveryShards, r.eventShards); err != nil {
		return nil, err
	}
	for s := 0; s < m.Seconds || len(r.queue) > 0; s++ {
		if s < m.Seconds {
			r.arrive(s)
		}
		if err := r.second(s); err != nil {
			return nil, err
		}
	}
	r.meter.Close()
	calls, shapes, units := r.perRequest()
	unroutable, err := r.unroutableEntry()
	if err != nil {
		return nil, err
	}
	return &TraceResult{
		Mix: m, Payments: float64(m.Rate * m.Seconds), Requests: r.requests, Calls: calls, Shapes: shapes, Units: units,
		SQSDelayed: r.delayed / float64(m.Seconds), PaymentMeta: rec.largest("HEAD"), PaymentEntry: rec.largest("E#"),
		UnroutableWCU: r.requests[ReqNotifications] / float64(m.Seconds) * 2 * writeUnits(dynamo.ItemSize(unroutable)),
		Result:        r.meter.Result(),
	}, nil
}

// arrive queues the checkouts that start in second s (one per Sample).
func (r *replay) arrive(s int) {
	for i := s * r.mix.Rate; i < (s+1)*r.mix.Rate; i += r.mix.Sample {
		l := r.life(i)
		if l.rateOnly { // the checkout's configuration and methods
			r.queue[s] = append(r.queue[s], task{kind: kConfig, i: i}, task{kind: kMethods, i: i}, task{kind: kDeleteStored, i: i})
		}
		if l.webhookTest {
			r.queue[s] = append(r.queue[s], task{kind: kWebhookTest, i: i})
		}
		if l.session { // the checkout's session first
			r.queue[s] = append(r.queue[s], task{kind: kSession, i: i})
		}
		pay := kPay
		if l.noKey {
			pay = kPayNoKey
		}
		r.queue[s] = append(r.queue[s], task{kind: pay, i: i})
	}
}

// second runs the tasks queued for second s, and those they queue for the
// same second, after the caches' refreshes.
func (r *replay) second(s int) error {
	tasks, ok := r.queue[s]
	if !ok {
		return nil
	}
	delete(r.queue, s)
	r.meter.At(s)
	if err := r.cacheRefresh(s); err != nil {
		return err
	}
	r.meter.TakeShapes() // cached reads are no request's
	r.meter.TakeUnits()
	for k := 0; k < len(tasks); k++ {
		if err := r.run(s, tasks[k]); err != nil {
			return err
		}
		r.took(r.label(tasks[k]))
		if more := r.queue[s]; len(more) > 0 { // same-second follow-ups
			tasks = append(tasks, more...)
			delete(r.queue, s)
		}
	}
	return nil
}

// perRequest are the calls, calls by shape and units by key family of one
// request of each label, averaged over its runs.
func (r *replay) perRequest() (map[string]float64, map[string]map[string]float64, map[string]map[string]Units) {
	calls, shapes, units := map[string]float64{}, map[string]map[string]float64{}, map[string]map[string]Units{}
	for label, n := range r.runs {
		shapes[label] = map[string]float64{}
		for sh, c := range r.shapes[label] {
			shapes[label][sh] = float64(c) / float64(n)
			calls[label] += float64(c) / float64(n)
		}
		units[label] = map[string]Units{}
		for fam, u := range r.units[label] {
			units[label][fam] = Units{W: u.W / float64(n), R: u.R / float64(n)}
		}
	}
	if r.requests[ReqHops] > 0 {
		calls[ReqHops] = 0 // a hop reads and writes nothing
		shapes[ReqHops] = map[string]float64{}
	}
	return calls, shapes, units
}

// unroutableEntry is the unroutable list's entry of a typical notification
// kept unroutable.
func (r *replay) unroutableEntry() (dynamo.Item, error) {
	now := r.at(0, 0)
	e := r.eventRecord(0, 0, now, notifications.EventUnroutable)
	e.UnroutableAt, e.UnroutableReason = &now, "no merchant for merchantAccountCode "+traceAccount
	return dynamo.ListedItem(e, dynamo.UnroutableShards)
}

// label names a task's request kind in TraceResult.Calls.
func (t task) label() string {
	if t.kind == kNotify {
		return "notification " + eventCodes[t.code]
	}
	return kindLabels[t.kind]
}

// kindLabels are the labels of the task kinds but kNotify.
var kindLabels = [...]string{
	kPay: ReqPayments, kReplay: ReqReplay, kDetails: ReqDetails, kCapture: ReqCaptures, kRefund: ReqReversals,
	kAttempt: ReqAttempts, kSession: ReqSessions, kAmountUpdate: ReqAmountUpdates, kPartRefund: ReqRefunds,
	kLookup: ReqLookups, kTimeline: ReqTimeline, kConfig: ReqConfig, kMethods: ReqMethods, kPayNoKey: ReqPaymentsNoKey,
	kRedrive: ReqRedrives, kDeleteStored: ReqDeleteStored, kWebhookTest: ReqWebhookTest,
}

// label is t's request kind in TraceResult.Calls and Shapes: task.label,
// but for a 3-D Secure payment's POST payments and AUTHORISATION
// notification, whose calls differ.
func (r *replay) label(t task) string {
	switch {
	case t.kind == kPay && r.life(t.i).tds:
		return ReqPaymentsAction
	case t.kind == kPayNoKey && r.life(t.i).tds:
		return ReqPaymentsNoKeyAction
	case t.kind == kNotify && t.code == codeAuthorisation && r.life(t.i).tds:
		return ReqAuthorisationBinding
	case t.kind == kAttempt && r.failing(t):
		return ReqAttemptsFailed
	}
	return t.label()
}

type replay struct {
	mix        Mix
	rec        *Recordings
	meter      *Meter
	queue      map[int][]task
	requests   map[string]float64
	rateCounts map[string]int              // hits per rate-limit counter
	rr         int                         // round robin over a sharded window
	delayed    float64                     // message-seconds delayed by backoffs
	shapes     map[string]map[string]int   // DynamoDB calls per task label, by shape
	units      map[string]map[string]Units // units per task label, by key family
	runs       map[string]int              // tasks per label
	// cached tenant items, refreshed per instance and TTL
	apiKey, site, merchant dynamo.Item
	subs                   []dynamo.Item
	// the merchant's listing shard counts (Mix.DeliveryShards and
	// EventShards) and their item
	deliveryShards, eventShards int
	shards                      dynamo.Item
	subIDs                      []string
}

func (r *replay) later(s int, t task) { r.queue[s] = append(r.queue[s], t) }

// took files the calls metered since the last take as one request of
// kind label.
func (r *replay) took(label string) {
	if r.shapes[label] == nil {
		r.shapes[label] = map[string]int{}
	}
	for _, sh := range r.meter.TakeShapes() {
		r.shapes[label][sh]++
	}
	if r.units[label] == nil {
		r.units[label] = map[string]Units{}
	}
	for fam, u := range r.meter.TakeUnits() {
		addUnits(r.units[label], fam, u.W, u.R)
	}
	r.runs[label]++
}

func (r *replay) count(req string) { r.requests[req] += float64(r.mix.Sample) }

// share reports whether payment i falls in the share p for a purpose:
// a fixed hash of both.
func share(i int, purpose string, p float64) bool {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(purpose))
	return float64(h.Sum64()%1_000_000)/1_000_000 < p
}

// life is what happens to payment i.
type life struct {
	tds, refused, captured, refunded, replayed bool
	session, updated, partRefunded, looked     bool
	timeline, rateOnly, noKey, redriven        bool
	webhookTest                                bool
}

func (r *replay) life(i int) life {
	m := r.mix
	l := life{tds: share(i, "3ds", m.ThreeDS), refused: share(i, "refused", m.Refused), replayed: share(i, "replay", m.Replayed)}
	l.captured = !l.refused && share(i, "capture", m.Captured)
	l.refunded = l.captured && share(i, "refund", m.Refunded)
	l.session = share(i, "session", m.Sessions)
	l.updated = !l.refused && share(i, "amount-update", m.AmountUpdates)
	l.partRefunded = l.captured && !l.refunded && share(i, "part-refund", m.PartRefunds)
	l.looked = share(i, "lookup", m.Lookups)
	l.timeline = share(i, "timeline", m.TimelinePages)
	l.rateOnly = share(i, "rate-only", m.RateOnly)
	l.noKey = share(i, "no-key", m.NoKey)
	l.redriven = share(i, "redrive", m.Redrives)
	l.webhookTest = share(i, "webhook-test", m.WebhookTests)
	l.replayed = l.replayed && !l.noKey // a replay is of a key
	return l
}

// base is the trace's time 0.
var base = time.Date(2026, time.March, 2, 10, 0, 0, 0, time.UTC)

// at is second s of the trace plus payment i's offset within its second.
func (r *replay) at(s, i int) time.Time {
	return base.Add(time.Duration(s)*time.Second + time.Duration(i%r.mix.Rate)*time.Second/time.Duration(r.mix.Rate))
}

func psp(i int) string { return fmt.Sprintf("T%015d", i) }

func idemKey(i int, what string) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8000-%012x", i, len(what), i%4096, i) // a UUID's shape
}

func (r *replay) run(s int, t task) error {
	if err := r.recorded(r.label(t), s, t.i); err != nil { // its DynamoDB calls
		return err
	}
	switch t.kind { // what follows it
	case kPay, kPayNoKey:
		r.pay(s, t.i)
	case kDetails:
		r.notifyLater(s, t.i, codeAuthorisation)
	case kNotify:
		r.notify(s, t.i, int(t.code))
	case kCapture:
		r.notifyLater(s, t.i, codeCapture)
	case kRefund, kPartRefund: // a captured payment's reversal is a refund
		r.notifyLater(s, t.i, codeRefund)
	case kAttempt:
		r.attempt(s, t)
	case kAmountUpdate:
		r.notifyLater(s, t.i, codeAdjustment)
	case kRedrive:
		r.count(ReqSQSSend)
	case kReplay, kSession, kLookup, kTimeline, kConfig, kMethods, kDeleteStored, kWebhookTest: // nothing
	default:
		return fmt.Errorf("capacity: unknown task %d", t.kind)
	}
	if t.kind != kNotify { // its request (notify counts a notification's)
		r.count(t.label())
	}
	return nil
}

// --- tenant reads (cached per instance) ------------------------------------

func (r *replay) tenants() error {
	k := tenant.APIKey{
		ID: traceKeyID, MerchantID: traceMerchant, Hash: tenant.HashKey("yp_live_" + strings.Repeat("x", 43)),
		Environment: tenant.EnvLive, RatePerSecond: r.mix.KeyRate, Burst: r.mix.KeyRate, CreatedAt: base,
	}
	var err error
	if r.apiKey, _, err = dynamo.APIKeyItems(k); err != nil {
		return err
	}
	if r.merchant, err = dynamo.MerchantItem(tenant.Merchant{
		ID: traceMerchant, Name: "Big Shop", Active: true, UpstreamAccount: traceAccount, CreatedAt: base,
	}); err != nil {
		return err
	}
	r.deliveryShards, r.eventShards = cmp.Or(r.mix.DeliveryShards, dynamo.DeliveryShards), cmp.Or(r.mix.EventShards, dynamo.EventLogShards)
	r.shards = dynamo.ShardsItem(traceMerchant, dynamo.ListingShards{Deliveries: r.deliveryShards, Events: r.eventShards, Own: true})
	if r.site, err = dynamo.SiteItem(tenant.Site{
		ID: traceSite, MerchantID: traceMerchant, Name: "Big Shop web", Type: tenant.SiteEcommerce, Flows: []tenant.Flow{tenant.FlowAdvanced, tenant.FlowSessions}, CreatedAt: base,
	}); err != nil {
		return err
	}
	for n := range r.mix.Subscriptions {
		sub := tenant.Subscription{
			ID: fmt.Sprintf("sub_%d", n+1), MerchantID: traceMerchant, URL: fmt.Sprintf("https://hooks%d.bigshop.example/paysvc", n+1),
			Enabled: true, Secrets: []tenant.Secret{{Value: "whsec_" + strings.Repeat("s", 43), CreatedAt: base}}, CreatedAt: base,
		}
		it, err := dynamo.SubscriptionItem(sub)
		if err != nil {
			return err
		}
		r.subs, r.subIDs = append(r.subs, it), append(r.subIDs, sub.ID)
	}
	return nil
}

// deliveryIndex is the index of a merchant's delivery listing.
const deliveryIndex = "gsi2"

// cacheRefresh meters second s's cache refreshes (every instance reads
// each cached item once per TTL) and listings (each its rate-limit hit,
// the merchant's shard counts, its queries).
func (r *replay) cacheRefresh(s int) error {
	per := func(fn string) float64 {
		return float64(r.mix.Instances[fn]) / math.Max(r.mix.CacheTTL.Seconds(), 1) / float64(r.mix.Sample)
	}
	api := per("payments") + per("modifications")
	r.reads(r.apiKey, api)
	r.reads(r.merchant, api+per("notifications"))
	r.reads(r.site, api)
	// Writers of deliveries and event history entries keep the merchant's
	// shard counts for a minute.
	r.reads(r.shards, (float64(r.mix.Instances["notifications"])+float64(r.mix.Instances["dispatcher"]))/dynamo.ShardCacheTTL.Seconds()/float64(r.mix.Sample))
	w := r.meter.Weight
	r.meter.TakeShapes() // cached reads are no request's
	r.meter.TakeUnits()
	// A page of each listing, as recorded (its rate-limit hit, the
	// merchant's shard counts, every shard's query and the page's items).
	for _, l := range []struct {
		req string
		n   int
	}{{ReqListDeliveries, r.mix.Listings}, {ReqListEvents, r.mix.EventListings}} {
		r.meter.Weight = float64(l.n)
		if err := r.recorded(l.req, s, s); err != nil {
			return err
		}
		r.took(l.req)
	}
	// the receiver's subscription list and the dispatcher's subscription reads
	mpk, _ := dynamo.Keys(r.merchant)
	r.meter.Weight = w * per("notifications")
	r.meter.Query(Table, mpk, true, r.subs...)
	r.meter.Weight = w
	for _, it := range r.subs {
		r.reads(it, per("dispatcher"))
	}
	return nil
}

// reads meters n strongly consistent reads of it.
func (r *replay) reads(it dynamo.Item, n float64) {
	w := r.meter.Weight
	r.meter.Weight = w * n
	r.meter.Get(it)
	r.meter.Weight = w
}

// --- API requests ----------------------------------------------------------

// rateHit is the request's rate-limit write: the API key's window counter.
func (r *replay) rateHit(now time.Time) {
	win := ratelimit.Plan(traceKeyID, r.mix.KeyRate, r.mix.KeyRate, now)
	r.rr++
	b := win.Bucket(r.rr % win.Shards)
	r.rateCounts[b] += r.mix.Sample
	n := r.rateCounts[b]
	var old dynamo.Item
	if n > r.mix.Sample {
		old = dynamo.RateWindowItem(b, n-r.mix.Sample, win.End.Add(time.Minute))
	}
	r.meter.Put(old, dynamo.RateWindowItem(b, n, win.End.Add(time.Minute)))
}

func (r *replay) pay(s, i int) {
	l := r.life(i)
	if l.replayed {
		r.later(s+1, task{kind: kReplay, i: i})
	}
	if l.tds {
		r.later(s+r.mix.DetailsAfter, task{kind: kDetails, i: i})
	} else {
		r.notifyLater(s, i, codeAuthorisation)
	}
}

// notifyLater schedules payment i's notification code, after its cause in
// second s.
func (r *replay) notifyLater(s, i, code int) {
	r.later(s+r.mix.NotifyAfter, task{kind: kNotify, code: uint8(code), i: i})
}

// --- notifications and deliveries ------------------------------------------

// item is payment i's notification code as the platform sends it (the
// unroutable list's entry is sized from its AUTHORISATION).
func (r *replay) item(i, code int, now time.Time) upstream.NotificationRequestItem {
	it := upstream.NotificationRequestItem{
		EventCode: eventCodes[code], EventDate: now.Format(time.RFC3339), MerchantAccountCode: traceAccount,
		MerchantReference: fmt.Sprintf("order-%09d", i), PaymentMethod: "visa", PSPReference: psp(i),
		Amount: money.Amount{Value: 4999, Currency: "EUR"}, Success: "true",
		AdditionalData: upstream.AdditionalData{
			"hmacSignature": strings.Repeat("h", 44), "authCode": "012345", "cardSummary": "1111", "expiryDate": "03/2030",
			"cardBin": "411111", "issuerCountry": "NL", "shopperInteraction": "Ecommerce",
			upstream.MetadataPrefix + payments.MetaMerchant: traceMerchant, upstream.MetadataPrefix + payments.MetaSite: traceSite,
			upstream.MetadataPrefix + payments.MetaSource: string(payments.SourceAdvanced),
		},
	}
	if code == codeAuthorisation && r.life(i).refused {
		it.Success, it.Reason = "false", "Refused"
	}
	return it
}

// eventRecord is the stored event of payment i's notification code.
func (r *replay) eventRecord(i, code int, now time.Time, status notifications.EventStatus) notifications.Event {
	item := r.item(i, code, now)
	key := notifications.DedupKey(connector.Notification(item))
	return notifications.Event{
		ID: notifications.EventID(key), Key: key, Live: "true", Item: connector.Notification(item), PaymentPSP: psp(i),
		Status: status, Received: 1, ReceivedAt: now, UpdatedAt: now, Version: 1,
	}
}

// notify is the receiver's processing of one notification item
// (notifications/process.go): the event and the payment record read
// together (the merchant and its subscriptions come from the instance's
// cache, metered in Replay), then CommitItem's concurrent writes (the event
// with its deliveries listed, the record, the history entry, each
// delivery), the SQS sends (and for an AUTHORISATION the payment's events
// listed), then the event marked processed.
func (r *replay) notify(s, i, code int) {
	l := r.life(i)
	r.count(ReqNotifications)
	for sub := range r.subIDs { // a delivery per subscription, each sent
		r.count(ReqSQSSend)
		r.later(s, task{kind: kAttempt, code: uint8(code), sub: uint8(sub), attempt: 1, i: i})
	}
	if code == codeAuthorisation && l.looked {
		r.later(s+1, task{kind: kLookup, i: i})
	}
	if code == codeAuthorisation && l.timeline {
		r.later(s+1, task{kind: kTimeline, i: i})
	}
	if code == codeAuthorisation && l.redriven {
		r.later(s+1, task{kind: kRedrive, i: i})
	}
	switch {
	case code == codeAuthorisation && l.updated:
		r.later(s+r.mix.CaptureAfter, task{kind: kAmountUpdate, i: i})
	case (code == codeAuthorisation || code == codeAdjustment) && l.captured:
		r.later(s+r.mix.CaptureAfter, task{kind: kCapture, i: i})
	case code == codeCapture && l.refunded:
		r.later(s+r.mix.RefundAfter, task{kind: kRefund, i: i})
	case code == codeCapture && l.partRefunded:
		r.later(s+r.mix.RefundAfter, task{kind: kPartRefund, i: i})
	}
}

// failing reports whether attempt t's receiver fails: the first
// Mix.FailAttempts attempts of a Mix.Failing share of deliveries.
func (r *replay) failing(t task) bool {
	return share(t.i*8+int(t.code)*2+int(t.sub), "failing", r.mix.Failing) && int(t.attempt) <= r.mix.FailAttempts
}

// attempt schedules the retry of one dispatcher attempt of one delivery
// when its receiver fails.
func (r *replay) attempt(s int, t task) {
	if !r.failing(t) {
		return
	}
	// The retry is a new message delayed by the wait, and by hops of at
	// most 15 minutes when longer: each hop a receive and a send, no
	// attempt, no DynamoDB access (sqsqueue.LambdaHandler).
	n := int(t.attempt)
	wait := webhooks.NominalDelay(n + 1)
	msgs := sqsqueue.Messages(wait)
	for k := range msgs {
		r.count(ReqSQSSend)
		if k > 0 {
			r.count(ReqHops)
		}
	}
	r.delayed += wait.Seconds() * float64(r.mix.Sample)
	r.later(s+max(int(wait.Seconds()), 1), task{kind: kAttempt, code: t.code, sub: t.sub, attempt: uint8(n + 1), i: t.i})
}
