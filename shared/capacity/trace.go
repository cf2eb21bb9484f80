package capacity

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/lookup"
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
	// (hotels, car rental): none in FullMix's web shop; the check against
	// moto (cmd/paysvc-bench) runs a mix with some.
	AmountUpdates float64
	// PartRefunds: of the captured and not reversed, a partial refund (POST
	// refunds) after the CAPTURE notification.
	PartRefunds float64
	// Lookups: of the payments, one looked up by the merchant (GET
	// payment: its head and the first page of its timeline) a second
	// after its AUTHORISATION notification. None in FullMix (issue 16's
	// trace has no merchant reads); the check against moto runs some.
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
	ReqHops                 = "webhook retry hop (dispatcher, not yet due)"
	ReqSQSSend              = "SQS SendMessage"
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

var eventCodes = []string{upstream.EventAuthorisation, upstream.EventCapture, upstream.EventRefund, upstream.EventAuthorisationAdjustment,
	upstream.EventCancelOrRefund}

// Indexes in eventCodes.
const (
	codeAuthorisation = iota
	codeCapture
	codeRefund
	codeAdjustment
	codeCancelOrRefund // a reversal's (the platform's answer to /reversals)
)

// Run replays m through the adapter's item builders and meters it.
func Run(m Mix) (*TraceResult, error) {
	if m.Rate <= 0 || m.Seconds <= 0 || m.Sample <= 0 || m.Subscriptions <= 0 || m.KeyRate <= 0 {
		return nil, fmt.Errorf("capacity: invalid mix %+v", m)
	}
	r := &replay{
		mix: m, meter: NewMeter(), queue: map[int][]task{}, requests: map[string]float64{}, rateCounts: map[string]int{},
		shapes: map[string]map[string]int{}, units: map[string]map[string]Units{}, runs: map[string]int{},
	}
	r.meter.Weight = float64(m.Sample)
	if err := r.tenants(); err != nil {
		return nil, err
	}
	for s := 0; s < m.Seconds || len(r.queue) > 0; s++ {
		if s < m.Seconds {
			for i := s * m.Rate; i < (s+1)*m.Rate; i += m.Sample {
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
		tasks, ok := r.queue[s]
		if !ok {
			continue
		}
		delete(r.queue, s)
		r.meter.At(s)
		r.cacheRefresh(s)
		r.meter.TakeShapes() // cached reads are no request's
		r.meter.TakeUnits()
		for k := 0; k < len(tasks); k++ {
			if err := r.run(s, tasks[k]); err != nil {
				return nil, err
			}
			r.took(r.label(tasks[k]))
			if more := r.queue[s]; len(more) > 0 { // same-second follow-ups
				tasks = append(tasks, more...)
				delete(r.queue, s)
			}
		}
	}
	r.meter.Close()
	payments := float64(m.Rate * m.Seconds)
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
	unroutable, err := r.unroutableEntry()
	if err != nil {
		return nil, err
	}
	return &TraceResult{
		Mix: m, Payments: payments, Requests: r.requests, Calls: calls, Shapes: shapes, Units: units,
		SQSDelayed: r.delayed / float64(m.Seconds), PaymentMeta: r.paymentMeta, PaymentEntry: r.paymentEntry,
		UnroutableWCU: r.requests[ReqNotifications] / float64(m.Seconds) * 2 * writeUnits(dynamo.ItemSize(unroutable)),
		Result:        r.meter.Result(),
	}, nil
}

// unroutableEntry is the unroutable list's entry of a typical notification
// kept unroutable.
func (r *replay) unroutableEntry() (dynamo.Item, error) {
	now := r.at(0, 0)
	e := r.eventRecord(0, 0, now, notifications.EventUnroutable)
	e.UnroutableAt, e.UnroutableReason = &now, "no merchant for merchantAccountCode "+traceAccount
	return dynamo.UnroutableItem(e, dynamo.UnroutableShards)
}

// label names a task's request kind in TraceResult.Calls.
func (t task) label() string {
	switch t.kind {
	case kPay:
		return ReqPayments
	case kReplay:
		return ReqReplay
	case kDetails:
		return ReqDetails
	case kCapture:
		return ReqCaptures
	case kRefund:
		return ReqReversals
	case kSession:
		return ReqSessions
	case kAmountUpdate:
		return ReqAmountUpdates
	case kPartRefund:
		return ReqRefunds
	case kLookup:
		return ReqLookups
	case kTimeline:
		return ReqTimeline
	case kConfig:
		return ReqConfig
	case kMethods:
		return ReqMethods
	case kPayNoKey:
		return ReqPaymentsNoKey
	case kRedrive:
		return ReqRedrives
	case kWebhookTest:
		return ReqWebhookTest
	case kDeleteStored:
		return ReqDeleteStored
	case kNotify:
		return "notification " + eventCodes[t.code]
	}
	return ReqAttempts
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
	apiKey, site, merchant, subList dynamo.Item
	subs                            []dynamo.Item
	// the merchant's listing shard counts (Mix.DeliveryShards and
	// EventShards) and their item
	deliveryShards, eventShards int
	shards                      dynamo.Item
	subIDs                      []string
	// largest payment META and history items built
	paymentMeta, paymentEntry int
	sampleEvent               dynamo.Item // a merchant event's item (listings)
	sampleDelivery            dynamo.Item // a delivery's item (listings)
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
		sum := r.units[label][fam]
		r.units[label][fam] = Units{W: sum.W + u.W, R: sum.R + u.R}
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
	switch t.kind {
	case kPay, kPayNoKey:
		return r.pay(s, t.i)
	case kReplay:
		return r.replayPay(s, t.i)
	case kDetails:
		return r.details(s, t.i)
	case kNotify:
		return r.notify(s, t.i, int(t.code))
	case kCapture:
		return r.operation(s, t.i, stageCaptureRequested)
	case kRefund:
		return r.operation(s, t.i, stageReversalRequested)
	case kAttempt:
		return r.attempt(s, t)
	case kSession:
		return r.session(s, t.i)
	case kAmountUpdate:
		return r.operation(s, t.i, stageUpdateRequested)
	case kPartRefund:
		return r.operation(s, t.i, stagePartRefundRequested)
	case kLookup, kTimeline:
		return r.lookup(s, t.i, t.label())
	case kRedrive:
		return r.redrive(s, t.i)
	case kConfig, kMethods, kDeleteStored:
		r.count(t.label())
		r.rateHit(r.at(s, t.i))
		return nil
	case kWebhookTest:
		r.count(t.label())
		r.rateHit(r.at(s, t.i))
		mpk, _ := dynamo.Keys(r.merchant)
		r.meter.Query(Table, mpk, true, r.subs...) // the subscriptions, as they are now
		return nil
	}
	return fmt.Errorf("capacity: unknown task %d", t.kind)
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
	ev := r.eventRecord(0, 1, base, notifications.EventProcessed)
	payload, err := webhooks.BuildPayload(true, ev.Item, string(payments.SourceAdvanced), 3)
	if err != nil {
		return err
	}
	if r.sampleEvent, err = r.merchantEvent(ev, payload); err != nil {
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
	if r.sampleDelivery, err = r.delivery(ev, 0, payload, webhooks.StatusDelivered, 1, true, base); err != nil {
		return err
	}
	return nil
}

// deliveryIndex is the index of a merchant's delivery listing.
const deliveryIndex = "gsi2"

// cacheRefresh meters second s's cache refreshes (every instance reads
// each cached item once per TTL) and listings (each its rate-limit hit,
// the merchant's shard counts, its queries).
func (r *replay) cacheRefresh(s int) {
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
	// A page of deliveries: the merchant's shard counts (strongly
	// consistent), every gsi2 shard queried for a page of index entries,
	// then the page's items in one BatchGetItem.
	r.meter.Weight = float64(r.mix.Listings)
	r.rateHit(r.at(s, 0))
	r.meter.Get(r.shards)
	n := lookup.DefaultLimit + 1 // a page and one more (is there a next page?)
	entries := make([]dynamo.Item, n)
	for k := range entries {
		entries[k], _ = dynamo.IndexEntry(r.sampleDelivery, deliveryIndex)
	}
	for shard := range r.deliveryShards {
		r.meter.Query(deliveryIndex, dynamo.DeliveryShardPartition(traceMerchant, shard), false, entries...)
	}
	items := make([]dynamo.Item, n)
	for k := range items {
		items[k] = r.sampleDelivery
	}
	r.meter.BatchGet(items...)
	r.took(ReqListDeliveries)
	r.meter.Weight = float64(r.mix.EventListings)
	r.rateHit(r.at(s, 0))
	r.meter.Get(r.shards)
	page := make([]dynamo.Item, n) // a page of typical entries from each shard
	for k := range page {
		page[k] = r.sampleEvent
	}
	for shard := range r.eventShards {
		r.meter.Query(Table, dynamo.EventLogShardPartition(traceMerchant, shard), true, page...)
	}
	r.took(ReqListEvents)
	r.meter.Weight = w
	// the receiver's subscription list and the dispatcher's subscription reads
	mpk, _ := dynamo.Keys(r.merchant)
	r.meter.Weight = w * per("notifications")
	r.meter.Query(Table, mpk, true, r.subs...)
	r.meter.Weight = w * per("dispatcher")
	for _, it := range r.subs {
		r.meter.Get(it)
	}
	r.meter.Weight = w
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

// request meters the start of an idempotent API request about payment i
// in second s: its rate-limit hit and its idempotency claim.
func (r *replay) request(req, what string, s, i int) (now time.Time, key string, claimed dynamo.Item, err error) {
	now = r.at(s, i)
	r.count(req)
	r.rateHit(now)
	key = idemKey(i, what)
	claimed, err = r.claim(key, now)
	return now, key, claimed, err
}

// claim meters an idempotency claim and returns the claimed item.
func (r *replay) claim(key string, now time.Time) (dynamo.Item, error) {
	it, err := claimItem(key, now)
	if err != nil {
		return nil, err
	}
	r.meter.Put(nil, it)
	return it, nil
}

// claimItem is the idempotency item of a claim of key at now.
func claimItem(key string, now time.Time) (dynamo.Item, error) {
	return dynamo.IdempotencyItem(idempotency.Record{
		Scope: traceMerchant, Key: key, Fingerprint: strings.Repeat("f", 64), Status: idempotency.StatusInProgress,
		LeaseToken: strings.Repeat("1", 32), LeaseUntil: now.Add(idempotency.DefaultLease), ExpiresAt: now.Add(idempotency.DefaultRetention),
	})
}

// modification meters an operation on payment i (a capture, or a refund
// made as a reversal) in second s, its ledger moving through stage n:
// the rate-limit hit alongside the reservation, which takes the
// idempotency claim in its transaction (httpapi's ClaimOnWrite), the
// answer's write, the claim completed.
func (r *replay) modification(req, what string, s, i, n int, read ...ledgerState) error {
	now := r.at(s, i)
	r.count(req)
	r.rateHit(now)
	key := idemKey(i, what)
	claimed, err := claimItem(key, now)
	if err != nil {
		return err
	}
	before, reserved, settled := r.ledgerAt(i, n-1, now), r.ledgerAt(i, n, now), r.ledgerAt(i, n+1, now)
	if err := r.write(before, reserved, Write{New: claimed}); err != nil { // the request, before the upstream call
		return err
	}
	for _, st := range read { // a read of the head while the platform answers
		if err := r.getPayment(st); err != nil {
			return err
		}
	}
	if err := r.write(reserved, settled); err != nil { // the answer
		return err
	}
	_, err = r.complete(claimed, key, now, modificationResponse(i, "received"))
	return err
}

// complete meters the completion of a claim with the answer body.
func (r *replay) complete(claimed dynamo.Item, key string, now time.Time, body []byte) (dynamo.Item, error) {
	it, err := completedItem(key, now, body)
	if err != nil {
		return nil, err
	}
	r.meter.Put(claimed, it)
	return it, nil
}

// completedItem is the idempotency item of key completed at now with the
// answer body.
func completedItem(key string, now time.Time, body []byte) (dynamo.Item, error) {
	return dynamo.IdempotencyItem(idempotency.Record{
		Scope: traceMerchant, Key: key, Fingerprint: strings.Repeat("f", 64), Status: idempotency.StatusCompleted,
		LeaseUntil: now.Add(idempotency.DefaultLease), ExpiresAt: now.Add(idempotency.DefaultRetention),
		Response: &idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: body},
	})
}

// paymentResponse is a realistic answer body: the result, or for 3DS the
// action (its token is the bulk).
func paymentResponse(i int, resultCode string) []byte {
	if resultCode == "RedirectShopper" || resultCode == "IdentifyShopper" { // the platform's: no pspReference
		return []byte(fmt.Sprintf(`{"resultCode":%q,"merchantReference":"order-%09d","action":{"type":"threeDS2","subtype":"fingerprint","paymentMethodType":"scheme","token":%q,"paymentData":%q,"authorisationToken":%q}}`,
			resultCode, i, strings.Repeat("t", 1200), strings.Repeat("d", 400), strings.Repeat("a", 120)))
	}
	return []byte(fmt.Sprintf(`{"resultCode":%q,"pspReference":%q,"merchantReference":"order-%09d","amount":{"currency":"EUR","value":4999},"paymentMethod":{"brand":"visa","type":"scheme"},"additionalData":{"authCode":"012345","cardSummary":"1111"}}`,
		resultCode, psp(i), i))
}

// detailsResponse is the service's answer to details the platform
// answered with resultCode and pspReference only.
func detailsResponse(i int, resultCode string) []byte {
	return []byte(fmt.Sprintf(`{"resultCode":%q,"pspReference":%q}`, resultCode, psp(i)))
}

func modificationResponse(i int, status string) []byte {
	return []byte(fmt.Sprintf(`{"pspReference":"M%015d","paymentPspReference":%q,"reference":"op-%09d","status":%q,"amount":{"currency":"EUR","value":4999}}`, i, psp(i), i, status))
}

func (r *replay) pay(s, i int) error {
	l := r.life(i)
	now := r.at(s, i)
	if l.noKey { // the rate-limit hit alone before the call, no answer stored
		r.count(ReqPaymentsNoKey)
		r.rateHit(now)
	} else {
		_, key, claimed, err := r.request(ReqPayments, "pay", s, i) // at now
		if err != nil {
			return err
		}
		code := "Authorised"
		switch {
		case l.tds:
			code = "RedirectShopper"
		case l.refused:
			code = "Refused"
		}
		if _, err := r.complete(claimed, key, now, paymentResponse(i, code)); err != nil {
			return err
		}
	}
	if l.tds {
		// The platform answers an action without pspReference
		// (recordPending): the pending record and the action's alias, at
		// once, each one create-only write.
		if err := r.write(ledgerState{}, r.pendingAt(i, now, false)); err != nil {
			return err
		}
		if err := r.write(ledgerState{}, r.aliasAt(i, now)); err != nil {
			return err
		}
	} else if err := r.write(r.ledgerAt(i, 0, now), r.ledgerAt(i, 1, now)); err != nil { // recordResult: one create-only write
		return err
	}
	if l.replayed {
		r.later(s+1, task{kind: kReplay, i: i})
	}
	if l.tds {
		r.later(s+r.mix.DetailsAfter, task{kind: kDetails, i: i})
	} else {
		r.later(s+r.mix.NotifyAfter, task{kind: kNotify, code: codeAuthorisation, i: i})
	}
	return nil
}

// replayPay is a client's retry of a finished payment: the claim fails
// and returns the stored answer.
func (r *replay) replayPay(s, i int) error {
	now := r.at(s, i)
	r.count(ReqReplay)
	r.rateHit(now)
	key := idemKey(i, "pay")
	done, err := dynamo.IdempotencyItem(idempotency.Record{
		Scope: traceMerchant, Key: key, Fingerprint: strings.Repeat("f", 64), Status: idempotency.StatusCompleted,
		LeaseUntil: now, ExpiresAt: now.Add(idempotency.DefaultRetention),
		Response: &idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: paymentResponse(i, "Authorised")},
	})
	if err != nil {
		return err
	}
	r.meter.FailedPut(done) // the claim's condition fails on the completed record
	return nil
}

func (r *replay) details(s, i int) error {
	l := r.life(i)
	now, key, claimed, err := r.request(ReqDetails, "details", s, i)
	if err != nil {
		return err
	}
	// SubmitDetails: the platform's answer (resultCode and pspReference)
	// names no pending record, so the payment is written create-first
	// from it, with the merchant's answer in the same transaction
	// (payments.Write.Result), without a read.
	code := "Authorised"
	if l.refused {
		code = "Refused"
	}
	done, err := completedItem(key, now, detailsResponse(i, code))
	if err != nil {
		return err
	}
	if err := r.write(r.ledgerAt(i, 0, now), r.ledgerAt(i, 1, now), Write{Old: claimed, New: done}); err != nil {
		return err
	}
	r.later(s+r.mix.NotifyAfter, task{kind: kNotify, code: codeAuthorisation, i: i})
	return nil
}

// lookup is the merchant's GET of payment i (req: ReqLookups) or of a page
// of its timeline (ReqTimeline), as it stood after its AUTHORISATION
// notification; both make the same calls: the rate-limit hit, then at
// once the head (GetPayment: its owner) and the page (a Query of its
// facts, a page and one more).
func (r *replay) lookup(s, i int, req string) error {
	now := r.at(s, i)
	r.count(req)
	r.rateHit(now)
	st := r.ledgerAt(i, r.stage(i, stageAuthorisation), now)
	if err := r.getPayment(st); err != nil {
		return err
	}
	return r.timelinePage(st)
}

// timelinePage meters Timeline of st's first page: a Query of its facts,
// a page and one more.
func (r *replay) timelinePage(st ledgerState) error {
	_, _, facts, err := r.items(st)
	if err != nil {
		return err
	}
	r.meter.Query(Table, "PAYMENT#"+st.head.PSPReference, true, facts[:min(len(facts), lookup.TimelinePage+1)]...)
	return nil
}

// session is POST sessions for payment i's checkout: the rate-limit hit
// and the claim, the session written beside the claim's completion.
func (r *replay) session(s, i int) error {
	now, key, claimed, err := r.request(ReqSessions, "session", s, i)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("CS%014d", i)
	it, err := dynamo.SessionItem(payments.Session{
		ID: id, MerchantID: traceMerchant, SiteID: traceSite, Reference: fmt.Sprintf("order-%09d", i),
		Amount: money.Amount{Value: 4999, Currency: "EUR"}, ShopperReference: fmt.Sprintf("shopper-%09d", i%100_000),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	})
	if err != nil {
		return err
	}
	r.meter.Put(nil, it)
	body := []byte(fmt.Sprintf(`{"id":%q,"sessionData":%q,"amount":{"currency":"EUR","value":4999},"reference":"order-%09d","returnUrl":"https://bigshop.example/checkout/return","expiresAt":%q,"merchantAccount":%q}`,
		id, strings.Repeat("s", 1500), i, now.Add(time.Hour).Format(time.RFC3339), traceAccount))
	_, err = r.complete(claimed, key, now, body)
	return err
}

// operation is the request of payment i's operation whose request is
// step (operations), then its notification: an amount update also reads
// the payment's head while the platform answers.
func (r *replay) operation(s, i, step int) error {
	o := operations[step]
	n := r.stage(i, step)
	var read []ledgerState
	if o.kind == payments.OpAmountUpdate {
		read = append(read, r.ledgerAt(i, n, r.at(s, i)))
	}
	if err := r.modification(o.req, o.what, s, i, n, read...); err != nil {
		return err
	}
	r.later(s+r.mix.NotifyAfter, task{kind: kNotify, code: uint8(o.code), i: i})
	return nil
}

// --- notifications and deliveries ------------------------------------------

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
	if code != codeAuthorisation {
		// A modification's notification carries its signature (and a
		// CANCEL_OR_REFUND what it did): the published examples have
		// no card or metadata fields on them.
		it.PSPReference, it.OriginalReference = modRef(i, code), psp(i)
		it.AdditionalData = upstream.AdditionalData{upstream.KeyHMACSignature: strings.Repeat("h", 44)}
		if code == codeCancelOrRefund {
			it.AdditionalData[upstream.KeyModificationAction] = "cancel"
		}
	}
	if code == codeAuthorisation && r.life(i).refused {
		it.Success, it.Reason = "false", "Refused"
	}
	return it
}

func (r *replay) event(i, code int, now time.Time, status notifications.EventStatus) (notifications.Event, dynamo.Item, error) {
	e := r.eventRecord(i, code, now, status)
	it, err := dynamo.EventItem(e)
	return e, it, err
}

// eventRecord is the stored event of payment i's notification code.
func (r *replay) eventRecord(i, code int, now time.Time, status notifications.EventStatus) notifications.Event {
	item := r.item(i, code, now)
	key := notifications.DedupKey(connector.Notification(item))
	e := notifications.Event{
		ID: notifications.EventID(key), Key: key, Live: "true", Item: connector.Notification(item), PaymentPSP: psp(i),
		Status: status, Received: 1, ReceivedAt: now, UpdatedAt: now, Version: 1,
	}
	if status == notifications.EventProcessed {
		e.MerchantID, e.ProcessedAt, e.Version = traceMerchant, &now, 2
		for _, sub := range r.subIDs {
			e.DeliveryIDs = append(e.DeliveryIDs, webhooks.DeliveryID(e.ID, sub))
		}
	}
	return e
}

// notify is the receiver's processing of one notification item
// (notifications/process.go): the event and the payment record read
// together (the merchant and its subscriptions come from the instance's
// cache, metered in Replay), then CommitItem's concurrent writes (the event
// with its deliveries listed, the record, the history entry, each
// delivery), the SQS sends (and for an AUTHORISATION the payment's events
// listed), then the event marked processed.
func (r *replay) notify(s, i, code int) error {
	now := r.at(s, i)
	l := r.life(i)
	r.count(ReqNotifications)
	ev := r.eventRecord(i, code, now, notifications.EventProcessed)
	processed, err := dynamo.EventItem(ev)
	if err != nil {
		return err
	}
	committedEv := ev
	committedEv.Status, committedEv.ProcessedAt, committedEv.Version = notifications.EventReceived, nil, 1
	committed, err := dynamo.EventItem(committedEv)
	if err != nil {
		return err
	}
	n := r.stage(i, []int{stageAuthorisation, stageCaptureNotified, stageRefundNotified, stageUpdateNotified, stageRefundNotified}[code])
	before, after := r.ledgerAt(i, n-1, now), r.ledgerAt(i, n, now)
	r.meter.Get(committed) // GetEvent: not stored yet
	if err := r.getPayment(before); err != nil {
		return err
	}
	binds := code == codeAuthorisation && l.tds // a record made from bare details: its pending record read
	if binds {
		if err := r.getPayment(r.pendingAt(i, now, false)); err != nil {
			return err
		}
	}
	if code != codeAuthorisation { // the entry the notification is a fact of
		if err := r.getEntries(after, modRef(i, code)); err != nil {
			return err
		}
	}
	r.meter.Put(nil, committed)
	if err := r.write(before, after); err != nil {
		return err
	}
	if binds { // and marked bound
		if err := r.write(r.pendingAt(i, now, false), r.pendingAt(i, now, true)); err != nil {
			return err
		}
	}
	payload, err := webhooks.BuildPayload(true, ev.Item, string(payments.SourceAdvanced), 3)
	if err != nil {
		return err
	}
	logged, err := r.merchantEvent(ev, payload)
	if err != nil {
		return err
	}
	r.meter.Put(nil, logged) // the merchant's event history
	for sub := range r.subIDs {
		created, err := r.delivery(ev, sub, payload, webhooks.StatusPending, 0, true, now)
		if err != nil {
			return err
		}
		r.meter.Put(nil, created)
		r.count(ReqSQSSend)
		r.later(s, task{kind: kAttempt, code: uint8(code), sub: uint8(sub), attempt: 1, i: i})
	}
	if code == codeAuthorisation {
		r.meter.Query(dynamo.Indexes[0].Name, "PAYMENT#"+psp(i), false, committed) // replayUnroutable
	}
	r.meter.Put(committed, processed)
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
	return nil
}

// merchantEvent is the item of ev in its merchant's event history.
func (r *replay) merchantEvent(ev notifications.Event, payload []byte) (dynamo.Item, error) {
	return dynamo.MerchantEventItem(notifications.MerchantEvent{
		ID: ev.ID, MerchantID: traceMerchant, EventCode: ev.Item.EventCode, PSPReference: ev.Item.PSPReference,
		PaymentPSP: ev.PaymentPSP, Payload: payload, CreatedAt: ev.ReceivedAt,
	}, r.eventShards)
}

func (r *replay) delivery(ev notifications.Event, sub int, payload []byte, st webhooks.Status, attempts int, enqueued bool, now time.Time) (dynamo.Item, error) {
	d := webhooks.Delivery{
		ID: webhooks.DeliveryID(ev.ID, r.subIDs[sub]), MerchantID: traceMerchant, SubscriptionID: r.subIDs[sub],
		EventID: ev.ID, EventCode: ev.Item.EventCode, PSPReference: ev.PaymentPSP, Payload: payload,
		Status: st, Enqueued: enqueued, Attempts: attempts, CreatedAt: now, UpdatedAt: now, Version: int64(1 + 2*attempts),
	}
	if enqueued {
		d.Version++
	}
	if attempts > 0 {
		d.LastAttemptAt = &now
		switch st {
		case webhooks.StatusDelivered:
			d.LastStatusCode, d.DeliveredAt = 200, &now
		case webhooks.StatusPending:
			d.LastStatusCode, d.LastError = 503, "HTTP 503 Service Unavailable"
		}
	}
	return dynamo.DeliveryItem(d, r.deliveryShards)
}

// redrive is a merchant's retry of payment i's AUTHORISATION delivery to
// the first subscription, ended failed after one attempt: the rate-limit
// hit, its read, its reset to pending, the job sent, its enqueued mark
// (webhooks.SelfService.Retry).
func (r *replay) redrive(s, i int) error {
	now := r.at(s, i)
	r.count(ReqRedrives)
	r.rateHit(now)
	ev := r.eventRecord(i, codeAuthorisation, now, notifications.EventProcessed)
	payload, err := webhooks.BuildPayload(true, ev.Item, string(payments.SourceAdvanced), 3)
	if err != nil {
		return err
	}
	failed, err := r.delivery(ev, 0, payload, webhooks.StatusFailed, 1, false, now)
	if err != nil {
		return err
	}
	reset, err := r.delivery(ev, 0, payload, webhooks.StatusPending, 1, false, now)
	if err != nil {
		return err
	}
	marked, err := r.delivery(ev, 0, payload, webhooks.StatusPending, 1, true, now)
	if err != nil {
		return err
	}
	r.meter.Get(failed)
	r.meter.Put(failed, reset)
	r.count(ReqSQSSend)
	r.meter.Put(reset, marked)
	return nil
}

// attempt is one dispatcher attempt of one delivery.
// failing reports whether attempt t's receiver fails: the first
// Mix.FailAttempts attempts of a Mix.Failing share of deliveries.
func (r *replay) failing(t task) bool {
	return share(t.i*8+int(t.code)*2+int(t.sub), "failing", r.mix.Failing) && int(t.attempt) <= r.mix.FailAttempts
}

func (r *replay) attempt(s int, t task) error {
	i, code, sub, n := t.i, int(t.code), int(t.sub), int(t.attempt)
	now := r.at(s, i)
	r.count(ReqAttempts)
	ev := r.eventRecord(i, code, now, notifications.EventReceived)
	payload, err := webhooks.BuildPayload(true, ev.Item, string(payments.SourceAdvanced), 3)
	if err != nil {
		return err
	}
	failing := r.failing(t)
	before, err := r.delivery(ev, sub, payload, webhooks.StatusPending, n-1, true, now)
	if err != nil {
		return err
	}
	begun, _ := r.delivery(ev, sub, payload, webhooks.StatusPending, n, true, now)
	end := webhooks.StatusDelivered
	if failing {
		end = webhooks.StatusPending
	}
	after, _ := r.delivery(ev, sub, payload, end, n, true, now)
	r.meter.Get(before)        // Process: read
	r.meter.Put(before, begun) // begin: count the attempt (from what was read)
	r.meter.Put(begun, after)  // record: the result (from what begin saved)
	if failing {
		// The retry is a new message delayed by the wait, and by hops of
		// at most 15 minutes when longer: each hop a receive and a send,
		// no attempt, no DynamoDB access (sqsqueue.LambdaHandler).
		wait := webhooks.NominalDelay(n + 1)
		msgs := sqsqueue.Messages(wait)
		for k := range msgs {
			r.count(ReqSQSSend)
			if k > 0 {
				r.count(ReqHops)
			}
		}
		r.delayed += wait.Seconds() * float64(r.mix.Sample)
		r.later(s+max(int(wait.Seconds()), 1), task{kind: kAttempt, code: t.code, sub: t.sub, attempt: uint8(n + 1), i: i})
	}
	return nil
}

// --- the payment record through its life -----------------------------------

// Steps of a payment record's history, in order; a payment has those its
// life takes.
const (
	stageCreated = iota
	stageDetails
	stageAuthorisation
	stageCaptureRequested
	stageCaptured
	stageCaptureNotified
	stageReversalRequested
	stageReversed
	stageRefundNotified
	stageUpdateRequested
	stageUpdated
	stageUpdateNotified
	stagePartRefundRequested
	stagePartRefunded
)

// stages lists the steps of payment i's record.
func (r *replay) stages(i int) []int {
	l := r.life(i)
	out := []int{stageCreated}
	if l.tds { // the payment's first record is its details answer's
		out = []int{stageDetails}
	}
	out = append(out, stageAuthorisation)
	if l.updated {
		out = append(out, stageUpdateRequested, stageUpdated, stageUpdateNotified)
	}
	if l.captured {
		out = append(out, stageCaptureRequested, stageCaptured, stageCaptureNotified)
	}
	switch {
	case l.refunded:
		out = append(out, stageReversalRequested, stageReversed, stageRefundNotified)
	case l.partRefunded:
		out = append(out, stagePartRefundRequested, stagePartRefunded, stageRefundNotified)
	}
	return out
}

// stage is the version of payment i's record once step is applied.
func (r *replay) stage(i, step int) int {
	for n, st := range r.stages(i) {
		if st == step {
			return n + 1
		}
	}
	return 0
}

// ledgerState is a payment's ledger at one of its steps.
type ledgerState struct {
	head    payments.Head
	entries map[string]payments.Entry
	facts   []payments.Fact
}

// operations are the operations a payment's life may hold, by the step of
// their request: the request, the kind, the code notifying it, its op id's
// letter, the amount (a partial refund; an amount update raising 4999 to
// 5999).
var operations = map[int]struct {
	req, what string // the request kind, its idempotency key's seed
	kind      payments.OpKind
	code      int
	prefix    byte
	value     int64
}{
	stageCaptureRequested:    {ReqCaptures, "capture", payments.OpCapture, codeCapture, 'c', 4999},
	stageReversalRequested:   {ReqReversals, "refund", payments.OpReversal, codeCancelOrRefund, 'r', 4999},
	stageUpdateRequested:     {ReqAmountUpdates, "amount-update", payments.OpAmountUpdate, codeAdjustment, 'u', 5999},
	stagePartRefundRequested: {ReqRefunds, "part-refund", payments.OpRefund, codeRefund, 'f', 1000},
}

// modRef is the pspReference at the platform of payment i's operation
// notified by code: its capture, its refund or reversal, its amount
// update.
func modRef(i, code int) string {
	return fmt.Sprintf("%c%015d", "PMRAR"[code], i)
}

// ledgerAt is payment i's ledger after its first v steps (v 0: none yet),
// as the domain writes it.
func (r *replay) ledgerAt(i, v int, now time.Time) ledgerState {
	l := r.life(i)
	amount := money.Amount{Value: 4999, Currency: "EUR"}
	h := payments.Head{
		PSPReference: psp(i), MerchantID: traceMerchant, SiteID: traceSite, Reference: fmt.Sprintf("order-%09d", i),
		Source: payments.SourceAdvanced, Amount: amount, PaymentMethod: "visa", CaptureMode: tenant.CaptureManual,
		ShopperReference: fmt.Sprintf("shopper-%09d", i%100_000), Version: int64(v), CreatedAt: now, UpdatedAt: now,
	}
	st := ledgerState{entries: map[string]payments.Entry{}}
	ok := true
	request := h // what the request knew: a 3-D Secure payment's record lacks it until its AUTHORISATION binds the pending record
	if l.tds {
		h.Reference, h.Amount, h.ShopperReference, h.PaymentMethod = "", money.Amount{}, "", ""
	}
	for _, step := range r.stages(i)[:v] {
		f := payments.Fact{ID: fmt.Sprintf("f%d", step), At: now, Origin: payments.OriginAPI, PSPReference: psp(i)}
		switch step {
		case stageCreated, stageDetails:
			f.Kind, f.Detail = "payment", "Authorised"
			if step == stageDetails {
				f.Kind = "details"
			}
			switch {
			case l.refused:
				f.Detail, h.Auth.ResultCode, h.RefusalReason = "Refused", "Refused", "Refused"
			default:
				h.Auth.ResultCode, h.Authorised = "Authorised", h.Amount.Value
			}
		case stageAuthorisation:
			f.Kind, f.Origin, f.Success, f.Amount = upstream.EventAuthorisation, payments.OriginNotification, &ok, &amount
			h.Seq++
			h.Auth.Notified = &ok
			if l.tds { // the pending record's facts, bound
				h.Reference, h.Amount, h.ShopperReference, h.PaymentMethod = request.Reference, request.Amount, request.ShopperReference, request.PaymentMethod
				if h.Authorised == 0 {
					h.Authorised = h.Amount.Value
				}
				st.facts = append(st.facts, payments.Fact{ID: "bound", At: now, Kind: "bound", Origin: payments.OriginAPI, Detail: request.Reference})
			}
		case stageCaptureNotified, stageRefundNotified, stageUpdateNotified:
			code := map[int]int{stageCaptureNotified: codeCapture, stageRefundNotified: codeRefund, stageUpdateNotified: codeAdjustment}[step]
			if step == stageRefundNotified && l.refunded { // a reversal's
				code = codeCancelOrRefund
			}
			mod := modRef(i, code)
			e := st.entries[mod]
			a := e.Requested.Amount
			h.Seq++
			f.Kind, f.Origin, f.Success, f.Amount = eventCodes[code], payments.OriginNotification, &ok, &a
			e.Notices = append(e.Notices, payments.Notice{Code: eventCodes[code], Success: true, Amount: a, Seq: h.Seq, At: now})
			e.Version++
			st.entries[mod] = e
		case stageCaptureRequested, stageReversalRequested, stageUpdateRequested, stagePartRefundRequested:
			o := operations[step]
			op, a := fmt.Sprintf("op_%c%08d", o.prefix, i), money.Amount{Value: o.value, Currency: amount.Currency}
			q := &payments.Request{Amount: a, UpstreamKey: idemKey(i, string(o.kind)), At: now}
			if o.kind == payments.OpAmountUpdate {
				q.From = amount.Value
			}
			st.entries[op] = payments.Entry{Ref: op, Kind: o.kind, Version: 1, Requested: q}
			f.Kind, f.PSPReference, f.Amount = string(o.kind)+"-requested", op, &a
		case stageCaptured, stageReversed, stageUpdated, stagePartRefunded:
			o := operations[step-1] // an operation's answer follows its request
			op, mod := fmt.Sprintf("op_%c%08d", o.prefix, i), modRef(i, o.code)
			e := st.entries[op]
			st.entries[op] = payments.Entry{Ref: op, Kind: e.Kind, MergedInto: mod, Version: e.Version + 1}
			e.Ref, e.Modification, e.Version, e.Answered = mod, mod, 1, &payments.Answer{Outcome: payments.Received, At: now}
			st.entries[mod] = e
			a := e.Requested.Amount
			f.Kind, f.PSPReference, f.Amount, f.Detail = string(e.Kind), mod, &a, "received"
			if o.kind == payments.OpAmountUpdate {
				h.AmountUpdates = append(h.AmountUpdates, payments.AmountUpdate{Ref: mod, Amount: a.Value, From: amount.Value})
			}
		}
		st.facts = append(st.facts, f)
	}
	entries := make([]payments.Entry, 0, len(st.entries))
	for _, e := range st.entries {
		entries = append(entries, e)
	}
	h.Totals = payments.Fold(h, entries)
	st.head = h
	return st
}

// pendingAt is the pending record of 3-D Secure payment i, as its POST
// payments writes it, or bound to its pspReference (by its AUTHORISATION
// notification).
func (r *replay) pendingAt(i int, now time.Time, bound bool) ledgerState {
	ref := fmt.Sprintf("order-%09d", i)
	h := payments.Head{
		PSPReference: payments.PendingKey(traceMerchant, traceSite, ref), MerchantID: traceMerchant, SiteID: traceSite, Reference: ref,
		Source: payments.SourceAdvanced, Amount: money.Amount{Value: 4999, Currency: "EUR"}, CaptureMode: tenant.CaptureManual,
		ShopperReference: fmt.Sprintf("shopper-%09d", i%100_000), Auth: payments.Auth{ResultCode: "RedirectShopper"},
		Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	if bound {
		h.BoundTo, h.Version = psp(i), 2
	}
	return ledgerState{head: h, facts: []payments.Fact{{ID: "pending", At: now, Kind: "payment", Origin: payments.OriginAPI, Detail: "RedirectShopper"}}}
}

// aliasAt is the alias from 3-D Secure payment i's action (its
// paymentData) to its pending record.
func (r *replay) aliasAt(i int, now time.Time) ledgerState {
	return ledgerState{head: payments.Head{
		PSPReference: fmt.Sprintf("pending_action_%040x", i), MerchantID: traceMerchant, SiteID: traceSite,
		Reference: fmt.Sprintf("order-%09d", i), Version: 1, CreatedAt: now, UpdatedAt: now,
	}}
}

// items are the stored items of ledger st (its head; nil items for a
// ledger not created yet), built by the adapter's own builders.
func (r *replay) items(st ledgerState) (head dynamo.Item, entries map[string]dynamo.Item, facts []dynamo.Item, err error) {
	if st.head.Version == 0 {
		return nil, nil, nil, nil
	}
	if head, err = dynamo.HeadItem(st.head); err != nil {
		return nil, nil, nil, err
	}
	ttl := head["ttl"]
	entries = map[string]dynamo.Item{}
	for ref, e := range st.entries {
		if entries[ref], err = dynamo.EntryItem(st.head.PSPReference, e, ttl); err != nil {
			return nil, nil, nil, err
		}
		r.paymentEntry = max(r.paymentEntry, dynamo.ItemSize(entries[ref]))
	}
	for _, f := range st.facts {
		it, err := dynamo.FactItem(st.head.PSPReference, f, ttl)
		if err != nil {
			return nil, nil, nil, err
		}
		facts = append(facts, it)
	}
	r.paymentMeta = max(r.paymentMeta, dynamo.ItemSize(head))
	return head, entries, facts, nil
}

// keyOnly is the key of a stored item (what a read of a missing one reads).
func keyOnly(pk, sk string) dynamo.Item {
	return dynamo.Item{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

// getPayment meters GetPayment of st: one BatchGetItem of HEAD and META.
func (r *replay) getPayment(st ledgerState) error {
	head, _, _, err := r.items(st)
	if err != nil {
		return err
	}
	pk := "PAYMENT#" + st.head.PSPReference
	if head == nil {
		head = keyOnly(pk, "HEAD")
	}
	r.meter.BatchGet(head, keyOnly(pk, "META"))
	return nil
}

// getEntries meters GetEntries of refs of st: one BatchGetItem.
func (r *replay) getEntries(st ledgerState, refs ...string) error {
	_, entries, _, err := r.items(st)
	if err != nil {
		return err
	}
	pk := "PAYMENT#" + st.head.PSPReference
	its := []dynamo.Item{keyOnly(pk, "META")}
	for _, ref := range refs {
		if it, ok := entries[ref]; ok {
			its = append(its, it)
		} else {
			its = append(its, keyOnly(pk, "E#"+ref))
		}
	}
	r.meter.BatchGet(its...)
	return nil
}

// write meters the Write taking ledger prev to next: one
// TransactWriteItems of the head, the entries that changed and the facts
// added.
func (r *replay) write(prev, next ledgerState, more ...Write) error {
	ph, pe, _, err := r.items(prev)
	if err != nil {
		return err
	}
	nh, ne, nf, err := r.items(next)
	if err != nil {
		return err
	}
	writes := []Write{{Old: ph, New: nh}}
	for ref, it := range ne {
		if prev.entries[ref].Version != next.entries[ref].Version {
			writes = append(writes, Write{Old: pe[ref], New: it})
		}
	}
	for _, f := range nf[len(prev.facts):] {
		writes = append(writes, Write{New: f})
	}
	r.meter.TransactWrite(append(writes, more...)...)
	return nil
}
