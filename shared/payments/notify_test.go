package payments_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/testutil/memledger"
)

// memStore is the in-memory ledger store (the port's contract) whose
// writes can be made to fail (not a conflict).
type memStore struct {
	*memledger.Store
	mu sync.Mutex
	// failWrites makes that many Write calls fail.
	failWrites int
	// accesses, when not nil, records each read and write: "read KEY",
	// "entries KEY", "write KEY".
	accesses *[]string
	// onRead, when set, runs after each GetPayment.
	onRead func()
}

func (m *memStore) access(op, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.accesses != nil {
		*m.accesses = append(*m.accesses, op+" "+key)
	}
}

// record starts recording accesses and returns what they are, when called.
func (m *memStore) record() func() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var log []string
	m.accesses = &log
	return func() []string {
		m.mu.Lock()
		defer m.mu.Unlock()
		return append([]string(nil), log...)
	}
}

func (m *memStore) GetPayment(ctx context.Context, psp string) (payments.Head, error) {
	m.access("read", psp)
	h, err := m.Store.GetPayment(ctx, psp)
	if m.onRead != nil {
		m.onRead()
	}
	return h, err
}

func (m *memStore) GetEntries(ctx context.Context, psp string, refs ...string) ([]payments.Entry, error) {
	m.access("entries", psp)
	return m.Store.GetEntries(ctx, psp, refs...)
}

func newMemStore() *memStore { return &memStore{Store: memledger.New(clock.NewFake(t0))} }

func (m *memStore) Write(ctx context.Context, w payments.Write) error {
	m.access("write", w.PSP)
	m.mu.Lock()
	if m.failWrites > 0 {
		m.failWrites--
		m.mu.Unlock()
		return errors.New("store unavailable")
	}
	m.mu.Unlock()
	return m.Store.Write(ctx, w)
}

// fakeUpstream answers modifications "received" and can run a hook while
// the call is in flight (a notification overtaking the service's answer).
type fakeUpstream struct {
	payments.Upstream // unused methods panic
	mu                sync.Mutex
	n                 int
	result            payments.PaymentAnswer
	during            func(modPSP string)
}

func (f *fakeUpstream) modPSP() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return fmt.Sprintf("MOD%013d", f.n)
}

func (f *fakeUpstream) Modify(context.Context, payments.ModificationRequest) (payments.ModificationAnswer, error) {
	psp := f.modPSP()
	if f.during != nil {
		f.during(psp)
	}
	return payments.ModificationAnswer{PSPReference: psp, Status: "received"}, nil
}

func (f *fakeUpstream) Pay(context.Context, payments.PaymentRequest) (payments.PaymentAnswer, error) {
	if f.during != nil {
		f.during("")
	}
	return f.result, nil
}

const psp = "PSP0000000000001"

// errUnavailable is a failure without a definitive answer from the
// upstream (5xx, timeout, its refusal of our credentials).
var errUnavailable = errors.New("upstream: HTTP 503")

var (
	t0 = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	// merchant takes multiple partial captures (TestSingleCapture: one
	// that does not).
	merchant = tenant.Merchant{ID: "m_a", Country: "NL", CaptureMode: tenant.CaptureManual, UpstreamAccount: "AlphaECOM", SplitAccount: "BA_a",
		MultiplePartialCaptures: true}
	site  = tenant.Site{ID: "site_a", MerchantID: "m_a"}
	owner = &payments.NotificationOwner{MerchantID: "m_a", SiteID: "site_a", Source: payments.SourceSessions, SessionID: "CS1"}
)

// fixture is a store, a service over the fake upstream and a clock.
type fixture struct {
	t   *testing.T
	ctx context.Context
	st  *memStore
	up  *fakeUpstream
	svc *payments.Service
	clk *clock.Fake
}

func newFixture(t *testing.T) *fixture {
	clk := clock.NewFake(t0)
	st, up := newMemStore(), &fakeUpstream{}
	return &fixture{t: t, ctx: context.Background(), st: st, up: up, clk: clk,
		svc: payments.NewService(st, up, clk, slog.New(slog.NewJSONHandler(io.Discard, nil)))}
}

// item builds a notification item; payment-level events use psp itself.
func item(code, pspRef, original, success string, value int64, ad map[string]string) payments.Notification {
	return payments.Notification{
		EventCode: code, PSPReference: pspRef, OriginalReference: original, Success: success,
		Amount: money.Amount{Value: value, Currency: "EUR"}, MerchantAccountCode: "AlphaECOM", MerchantReference: "order-1",
		PaymentMethod: "visa", AdditionalData: ad,
	}
}

func authorisation(success string, value int64) payments.Notification {
	return item(payments.EventAuthorisation, psp, "", success, value, map[string]string{"checkoutSessionId": "CS1"})
}

// apply applies it with the default options (owner known, now = clock).
func (f *fixture) apply(it payments.Notification) (payments.NotificationResult, error) {
	return payments.ApplyNotification(f.ctx, f.st, it, payments.NotificationOptions{
		Now: f.clk.Now(), Owner: owner, CaptureMode: tenant.CaptureManual, MultipleCaptures: merchant.MultiplePartialCaptures,
	})
}

func (f *fixture) mustApply(its ...payments.Notification) {
	f.t.Helper()
	for _, it := range its {
		if _, err := f.apply(it); err != nil {
			f.t.Fatalf("apply %s %s: %v", it.EventCode, it.PSPReference, err)
		}
	}
}

// payment returns the payment's head, having checked that its cached
// totals are the fold of its entries.
func (f *fixture) payment() payments.Head {
	f.t.Helper()
	return f.head(psp)
}

func (f *fixture) head(ref string) payments.Head {
	f.t.Helper()
	h, err := f.st.GetPayment(f.ctx, ref)
	if err != nil {
		f.t.Fatal(err)
	}
	if fold := payments.Fold(h, f.st.Entries(ref)); fold != h.Totals {
		f.t.Fatalf("payment %s: cached totals %+v, fold of its entries %+v", ref, h.Totals, fold)
	}
	return h
}

// timeline returns every fact of the payment.
func (f *fixture) timeline() []payments.Fact {
	f.t.Helper()
	facts, next, err := f.st.Timeline(f.ctx, psp, "", 1000)
	if err != nil || next != "" {
		f.t.Fatalf("timeline: %v (next %q)", err, next)
	}
	return facts
}

// facts counts the timeline's facts that match.
func (f *fixture) facts(match func(payments.Fact) bool) int {
	n := 0
	for _, fact := range f.timeline() {
		if match(fact) {
			n++
		}
	}
	return n
}

// apiFacts counts the timeline's facts of kind from the service's calls.
func (f *fixture) apiFacts(kind string) int {
	return f.facts(func(x payments.Fact) bool { return x.Origin == payments.OriginAPI && x.Kind == kind })
}

// notifications counts the timeline's facts from notifications.
func (f *fixture) notifications() int {
	return f.facts(func(x payments.Fact) bool { return x.Origin == payments.OriginNotification })
}

// hasFact reports whether the timeline has a fact of kind about operation
// pspReference mod.
func (f *fixture) hasFact(kind, mod string) bool {
	return f.facts(func(x payments.Fact) bool { return x.Kind == kind && x.PSPReference == mod }) > 0
}

type want struct {
	state                          payments.State
	authorised, captured, refunded int64
	notes                          int
}

func (f *fixture) check(w want) {
	f.t.Helper()
	v := f.payment().View()
	if v.State != w.state || v.Authorised != w.authorised || v.Captured != w.captured || v.Refunded != w.refunded || f.notifications() != w.notes {
		f.t.Fatalf("record: state %s authorised %d captured %d refunded %d notes %d; want %+v\ntimeline: %+v",
			v.State, v.Authorised, v.Captured, v.Refunded, f.notifications(), w, f.timeline())
	}
}

// TestNotificationSequences applies sequences of items (with duplicates
// and out of order) and checks the resulting record.
func TestNotificationSequences(t *testing.T) {
	cap1 := item(payments.EventCapture, "CAP0000000000001", psp, "true", 400, nil)
	capFailed := item(payments.EventCaptureFailed, "CAP0000000000001", psp, "true", 400, nil)
	cap2 := item(payments.EventCapture, "CAP0000000000002", psp, "true", 600, nil)
	refund := item(payments.EventRefund, "REF0000000000001", psp, "true", 300, nil)
	refundFailed := item(payments.EventRefundFailed, "REF0000000000001", psp, "true", 300, nil)
	cancel := item(payments.EventCancelOrRefund, "COR0000000000001", psp, "true", 1000, map[string]string{"modification.action": "cancel"})
	adjust := item(payments.EventAuthorisationAdjustment, "ADJ0000000000001", psp, "true", 1500, nil)
	offerClosed := item(payments.EventOfferClosed, psp, "", "true", 1000, nil)
	// The platform's own notifications (codes.go): EXPIRE names the payment
	// in pspReference; a dispute's events share the dispute's reference.
	expire := item("EXPIRE", psp, "", "true", 1000, nil)
	cancellation := item("CANCELLATION", "CAN0000000000001", psp, "true", 1000, nil)
	reversed := item("REFUNDED_REVERSED", "REF0000000000001", psp, "true", 300, nil)
	withData := item("REFUND_WITH_DATA", "RWD0000000000001", psp, "true", 300, nil)
	postponed := item("POSTPONED_REFUND", "REF0000000000001", psp, "true", 300, nil)
	noc := item("NOTIFICATION_OF_CHARGEBACK", "DSP0000000000001", psp, "true", 300, nil)
	chargeback := item("CHARGEBACK", "DSP0000000000001", psp, "true", 300, nil)
	chargebackReversed := item("CHARGEBACK_REVERSED", psp, "", "true", 300, nil) // as published: no originalReference
	rfi := item("REQUEST_FOR_INFORMATION", "DSP0000000000002", psp, "true", 1000, nil)
	accept := item("MANUAL_REVIEW_ACCEPT", "MRV0000000000001", psp, "true", 1000, nil)
	reject := item("MANUAL_REVIEW_REJECT", "MRV0000000000001", psp, "true", 1000, nil)
	recurring := item("RECURRING_CONTRACT", "M5N7TQ4TG5PFWR50", psp, "true", 0, nil)
	fraud := item("NOTIFICATION_OF_FRAUD", "NOF0000000000001", psp, "true", 1000, nil)
	future := item("FUTURE_CODE_44", "FUT0000000000001", psp, "true", 1000, nil)
	recaptured := cap1 // the platform's capture again of a capture that failed
	recaptured.Reason = "Transaction Recaptured"
	tests := []struct {
		name  string
		items []payments.Notification
		want  want
	}{
		{"authorised", []payments.Notification{authorisation("true", 1000)}, want{payments.StateAuthorised, 1000, 0, 0, 1}},
		{"refused", []payments.Notification{authorisation("false", 1000)}, want{payments.StateRefused, 0, 0, 0, 1}},
		{"duplicate authorisation", []payments.Notification{authorisation("true", 1000), authorisation("true", 1000)}, want{payments.StateAuthorised, 1000, 0, 0, 1}},
		{"partial capture", []payments.Notification{authorisation("true", 1000), cap1}, want{payments.StatePartiallyCaptured, 1000, 400, 0, 2}},
		{"captures in full, duplicated", []payments.Notification{authorisation("true", 1000), cap1, cap2, cap1, cap2}, want{payments.StateCaptured, 1000, 1000, 0, 3}},
		{"capture failed after capture", []payments.Notification{authorisation("true", 1000), cap1, capFailed}, want{payments.StateAuthorised, 1000, 0, 0, 3}},
		{"capture failed before capture (out of order)", []payments.Notification{authorisation("true", 1000), capFailed, cap1}, want{payments.StateAuthorised, 1000, 0, 0, 3}},
		{"recaptured after its failure", []payments.Notification{authorisation("true", 1000), cap1, capFailed, recaptured, recaptured}, want{payments.StatePartiallyCaptured, 1000, 400, 0, 4}},
		{"recaptured first (out of order)", []payments.Notification{authorisation("true", 1000), recaptured, capFailed, cap1}, want{payments.StatePartiallyCaptured, 1000, 400, 0, 4}},
		{"adjusted then captured, out of order", []payments.Notification{authorisation("true", 1000), cap1, adjust}, want{payments.StatePartiallyCaptured, 1500, 400, 0, 3}},
		{"refund then refund failed", []payments.Notification{authorisation("true", 1000), cap1, cap2, refund, refundFailed}, want{payments.StateCaptured, 1000, 1000, 0, 5}},
		{"partial refund", []payments.Notification{authorisation("true", 1000), cap1, cap2, refund, refund}, want{payments.StatePartiallyRefunded, 1000, 1000, 300, 4}},
		{"refund failed first (out of order)", []payments.Notification{authorisation("true", 1000), cap1, cap2, refundFailed, refund}, want{payments.StateCaptured, 1000, 1000, 0, 5}},
		{"cancelled", []payments.Notification{authorisation("true", 1000), cancel, cancel}, want{payments.StateCancelled, 1000, 0, 0, 2}},
		{"amount adjusted", []payments.Notification{authorisation("true", 1000), adjust}, want{payments.StateAuthorised, 1500, 0, 0, 2}},
		{"offer closed on an authorised payment", []payments.Notification{authorisation("true", 1000), offerClosed}, want{payments.StateAuthorised, 1000, 0, 0, 2}},
		{"expired uncaptured", []payments.Notification{authorisation("true", 1000), expire, expire}, want{payments.StateExpired, 1000, 0, 0, 2}},
		{"expired after a partial capture", []payments.Notification{authorisation("true", 1000), cap1, expire}, want{payments.StateCaptured, 1000, 400, 0, 3}},
		{"expired, then the capture made before (out of order)", []payments.Notification{authorisation("true", 1000), expire, cap1, expire}, want{payments.StateCaptured, 1000, 400, 0, 3}},
		{"cancellation after a partial capture", []payments.Notification{authorisation("true", 1000), cap1, cancellation, cancellation}, want{payments.StateCaptured, 1000, 400, 0, 3}},
		{"cancellation uncaptured", []payments.Notification{authorisation("true", 1000), cancellation}, want{payments.StateCancelled, 1000, 0, 0, 2}},
		{"refunded reversed", []payments.Notification{authorisation("true", 1000), cap1, cap2, refund, reversed, reversed}, want{payments.StateCaptured, 1000, 1000, 0, 5}},
		{"refunded reversed first (out of order)", []payments.Notification{authorisation("true", 1000), cap1, cap2, reversed, refund, reversed}, want{payments.StateCaptured, 1000, 1000, 0, 5}},
		{"refund with data books its own amount", []payments.Notification{authorisation("true", 1000), cap1, cap2, withData, withData}, want{payments.StatePartiallyRefunded, 1000, 1000, 300, 4}},
		{"postponed refund alone moves nothing", []payments.Notification{authorisation("true", 1000), cap1, cap2, postponed, postponed}, want{payments.StateCaptured, 1000, 1000, 0, 4}},
		{"postponed refund, then its refund", []payments.Notification{authorisation("true", 1000), cap1, cap2, postponed, refund}, want{payments.StatePartiallyRefunded, 1000, 1000, 300, 5}},
		{"refund, then postponed (out of order)", []payments.Notification{authorisation("true", 1000), cap1, cap2, refund, postponed}, want{payments.StatePartiallyRefunded, 1000, 1000, 300, 5}},
		{"a dispute moves no money", []payments.Notification{authorisation("true", 1000), cap1, cap2, noc, chargeback, chargebackReversed, chargeback, rfi},
			want{payments.StateCaptured, 1000, 1000, 0, 7}},
		{"a chargeback of an uncaptured payment", []payments.Notification{authorisation("true", 1000), chargeback}, want{payments.StateAuthorised, 1000, 0, 0, 2}},
		{"manual review accepted", []payments.Notification{authorisation("true", 1000), accept, accept}, want{payments.StateAuthorised, 1000, 0, 0, 2}},
		{"manual review rejected", []payments.Notification{authorisation("true", 1000), reject}, want{payments.StateCancelled, 1000, 0, 0, 2}},
		{"informational codes move no money", []payments.Notification{authorisation("true", 1000), cap1, cap2, recurring, fraud, future},
			want{payments.StateCaptured, 1000, 1000, 0, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.mustApply(tc.items...)
			f.check(tc.want)
		})
	}
}

func TestAuthorisationCreatesSessionsPaymentWithToken(t *testing.T) {
	f := newFixture(t)
	it := authorisation("true", 0)
	it.AdditionalData["tokenization.storedPaymentMethodId"] = "M5N7TQ4TG5PFWR50"
	it.AdditionalData["tokenization.shopperReference"] = "guest-1"
	res, err := f.apply(it)
	if err != nil || !res.Created || !res.Applied {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	p := f.payment()
	if p.MerchantID != "m_a" || p.SiteID != "site_a" || p.Source != payments.SourceSessions || p.SessionID != "CS1" ||
		p.Reference != "order-1" || p.StoredMethodID != "M5N7TQ4TG5PFWR50" || p.ShopperReference != "guest-1" ||
		p.View().State != payments.StateAuthorised || p.Version != 1 {
		t.Fatalf("record: %+v", p)
	}
	res, err = f.apply(it)
	if err != nil || res.Created || res.Applied {
		t.Fatalf("duplicate: %+v, %v", res, err)
	}
	// The legacy token key works too.
	f2 := newFixture(t)
	legacy := authorisation("true", 0)
	legacy.AdditionalData["recurring.recurringDetailReference"] = "LEGACY0000000001"
	f2.mustApply(legacy)
	if p := f2.payment(); p.StoredMethodID != "LEGACY0000000001" {
		t.Fatalf("legacy token: %+v", p)
	}
}

func TestNoOwnerNoRecord(t *testing.T) {
	f := newFixture(t)
	_, err := payments.ApplyNotification(f.ctx, f.st, authorisation("true", 1000), payments.NotificationOptions{Now: t0})
	if !errors.Is(err, payments.ErrUnknownPayment) {
		t.Fatalf("authorisation without owner: %v", err)
	}
	_, err = f.apply(item(payments.EventCapture, "CAP1", psp, "true", 100, nil))
	if !errors.Is(err, payments.ErrUnknownPayment) {
		t.Fatalf("capture of an unknown payment: %v", err)
	}
}

func TestAutoCaptureMerchant(t *testing.T) {
	f := newFixture(t)
	_, err := payments.ApplyNotification(f.ctx, f.st, authorisation("true", 1000), payments.NotificationOptions{
		Now: t0, Owner: owner, CaptureMode: tenant.CaptureAuto,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.check(want{payments.StateCaptured, 1000, 1000, 0, 1})
	// A CAPTURE notification of the automatic capture is not counted twice.
	f.mustApply(item(payments.EventCapture, "CAP0000000000001", psp, "true", 1000, nil))
	f.check(want{payments.StateCaptured, 1000, 1000, 0, 2})
}

// call is one API call's per-call value, without an Idempotency-Key.
func (f *fixture) call() *payments.Call { return &payments.Call{Merchant: merchant, Site: site} }

// capture captures value EUR of the payment through the service and waits
// for its record update.
func (f *fixture) capture(value int64) (payments.ModificationResult, error) {
	c := f.call()
	r, err := f.svc.Capture(f.ctx, c, psp, payments.CaptureInput{Amount: money.Amount{Value: value, Currency: "EUR"}})
	return r, errors.Join(err, c.Wait())
}

// reverse reverses the payment through the service.
func (f *fixture) reverse() (payments.ModificationResult, error) {
	c := f.call()
	r, err := f.svc.Reverse(f.ctx, c, psp, payments.ReversalInput{})
	return r, errors.Join(err, c.Wait())
}

// updateAmount updates the payment's amount to value EUR through the service.
func (f *fixture) updateAmount(value int64) (payments.ModificationResult, error) {
	c := f.call()
	r, err := f.svc.UpdateAmount(f.ctx, c, psp, payments.AmountUpdateInput{Amount: money.Amount{Value: value, Currency: "EUR"}})
	return r, errors.Join(err, c.Wait())
}

// must fails the test on a service call's error.
func (f *fixture) must(_ payments.ModificationResult, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// authorisedFixture is a fixture with an authorised Advanced-flow payment
// of 1000 EUR (advancedPayment).
func authorisedFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.advancedPayment("Authorised")
	return f
}

// advancedPayment records an Advanced-flow payment through the service.
func (f *fixture) advancedPayment(resultCode string) {
	f.t.Helper()
	f.up.result = payments.PaymentAnswer{ResultCode: resultCode, PSPReference: psp, MerchantReference: "order-1"}
	in := payments.PaymentInput{
		Amount:        money.Amount{Value: 1000, Currency: "EUR"},
		PaymentMethod: json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_4111111111111111"}`),
		ReturnURL:     "https://shop.example/return", Reference: "order-1",
		ShopperInteraction: payments.ShopperInteractionEcommerce,
		// A pre-authorisation, so that its amount can be updated.
		AdditionalData: map[string]string{"authorisationType": "PreAuth"},
	}
	c := f.call()
	if _, err := f.svc.StartPayment(f.ctx, c, in); err != nil {
		f.t.Fatalf("StartPayment: %v", err)
	}
	if err := c.Wait(); err != nil {
		f.t.Fatalf("StartPayment's record: %v", err)
	}
}

// TestAuthorisationMergesWithAPIRecord: the record is one, whichever of the
// API answer and the notification comes first.
func TestAuthorisationMergesWithAPIRecord(t *testing.T) {
	f := authorisedFixture(t)
	f.mustApply(authorisation("true", 1000))
	p := f.payment()
	if p.Source != payments.SourceAdvanced || p.View().State != payments.StateAuthorised || p.Authorised != 1000 || len(f.timeline()) != 2 {
		t.Fatalf("API first: %+v", p)
	}

	f = newFixture(t)
	f.mustApply(authorisation("true", 1000))
	f.advancedPayment("Authorised")
	p = f.payment()
	if p.View().State != payments.StateAuthorised || p.Authorised != 1000 || len(f.timeline()) != 2 || p.Version != 2 {
		t.Fatalf("notification first: %+v", p)
	}
	// What only the request knew reaches the record the notification made:
	// its amount can be updated (a pre-authorisation).
	if p.AuthorisationType != payments.AuthorisationPreAuth || p.Reference != "order-1" {
		t.Fatalf("notification first: request facts missing: %+v", p)
	}
	if _, err := f.svc.UpdateAmount(f.ctx, f.call(), psp, payments.AmountUpdateInput{Amount: money.Amount{Value: 1500, Currency: "EUR"}}); err != nil {
		t.Fatalf("amount update of a pre-authorisation recorded by its notification first: %v", err)
	}
}

// A record update after the upstream accepted is not dropped when the store
// fails for a while: settle retries until it lands.
func TestSettleSurvivesStoreFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // settle's retries wait on the bubble's clock
		f := authorisedFixture(t)
		f.up.during = func(string) {
			f.st.mu.Lock()
			f.st.failWrites = 4
			f.st.mu.Unlock()
		}
		f.must(f.capture(400))
		v := f.payment().View()
		if v.State != payments.StatePartiallyCaptured || v.Captured != 400 || v.CapturesInFlight != 0 || !f.hasFact("capture", "MOD0000000000001") {
			t.Fatalf("record %+v timeline %+v", v, f.timeline())
		}
		if f.st.failWrites != 0 {
			t.Fatalf("%d failures left", f.st.failWrites)
		}
	})
}

// TestCaptureNotificationDuringTheCall: the CAPTURE arrives while the
// service's capture call is in flight (amount reserved, answer not yet
// recorded): counted once.
func TestCaptureNotificationDuringTheCall(t *testing.T) {
	f := authorisedFixture(t)
	f.up.during = func(mod string) {
		f.mustApply(item(payments.EventCapture, mod, psp, "true", 1000, nil))
	}
	f.must(f.capture(1000))
	f.check(want{payments.StateCaptured, 1000, 1000, 0, 1})
	// And again after the call: still once.
	f.mustApply(item(payments.EventCapture, "MOD0000000000001", psp, "true", 1000, nil))
	f.check(want{payments.StateCaptured, 1000, 1000, 0, 1})
}

// TestCaptureFailedRevertsOptimisticCapture covers CAPTURE_FAILED after the
// call was recorded, and during the call (before the answer naming the
// operation is recorded: the answer then merges into the entry the
// notification made).
func TestCaptureFailedRevertsOptimisticCapture(t *testing.T) {
	f := authorisedFixture(t)
	f.must(f.capture(600))
	f.check(want{payments.StatePartiallyCaptured, 1000, 600, 0, 0})
	f.mustApply(item(payments.EventCaptureFailed, "MOD0000000000001", psp, "true", 600, nil))
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})

	f = authorisedFixture(t)
	failed := item(payments.EventCaptureFailed, "MOD0000000000001", psp, "true", 600, nil)
	f.up.during = func(string) { f.mustApply(failed) }
	f.must(f.capture(600))
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
	if v := f.payment().View(); v.CapturesInFlight != 0 || v.Capturable != 1000 {
		t.Fatalf("after the failure and the answer: %+v", v)
	}
	f.mustApply(failed) // the platform's retry: applied once
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
}

// TestReversalOutcomes: a reversal is the platform's cancel (nothing
// captured: CANCELLATION) or a refund of what was captured (REFUND, in
// flight until it arrives), never /reversals (every payment has splits).
func TestReversalOutcomes(t *testing.T) {
	// Cancel via the API, confirmed.
	f := authorisedFixture(t)
	f.must(f.reverse())
	f.mustApply(item(payments.EventCancellation, "MOD0000000000001", psp, "true", 1000, nil))
	f.check(want{payments.StateCancelled, 1000, 0, 0, 1})

	// Cancel via the API, failed: back to authorised.
	f = authorisedFixture(t)
	f.must(f.reverse())
	f.mustApply(item(payments.EventCancellation, "MOD0000000000001", psp, "false", 1000, nil))
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})

	// Refund via the API after a capture: in flight until its REFUND;
	// failed, back to captured; confirmed, refunded.
	for _, ok := range []string{"false", "true"} {
		f = authorisedFixture(t)
		f.must(f.capture(1000))
		f.must(f.reverse())
		if v := f.payment().View(); v.Refundable != 0 || v.Capturable != 0 {
			t.Fatalf("refund in flight: %+v", v)
		}
		f.mustApply(item(payments.EventRefund, "MOD0000000000002", psp, ok, 1000, nil))
		if ok == "true" {
			f.check(want{payments.StateRefunded, 1000, 1000, 1000, 1})
		} else {
			f.check(want{payments.StateCaptured, 1000, 1000, 0, 1})
		}
	}

	// A cancel failure overtaking the call's answer: the answer merges
	// into it, and the payment is authorised again.
	f = authorisedFixture(t)
	failed := item(payments.EventCancellation, "MOD0000000000001", psp, "false", 1000, nil)
	f.up.during = func(string) { f.mustApply(failed) }
	f.must(f.reverse())
	f.mustApply(failed)
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
}

func TestAmountAdjustmentFailureRestoresAmount(t *testing.T) {
	f := authorisedFixture(t)
	f.must(f.updateAmount(1500))
	f.check(want{payments.StateAuthorised, 1500, 0, 0, 0})
	f.mustApply(item(payments.EventAuthorisationAdjustment, "MOD0000000000001", psp, "false", 1500, nil))
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
	if p := f.payment(); p.Amount.Value != 1000 || p.View().Capturable != 1000 {
		t.Fatalf("amount not restored: %+v %+v", p.Amount, p.View())
	}
}

func TestOfferClosedExpiresUnfinishedPayment(t *testing.T) {
	f := newFixture(t)
	f.advancedPayment("RedirectShopper")
	f.mustApply(item(payments.EventOfferClosed, psp, "", "true", 1000, nil))
	if st := f.payment().View().State; st != payments.StateExpired {
		t.Fatalf("state %s, want Expired", st)
	}
}

// TestConcurrentDuplicatesApplyOnce: the same item from many goroutines is
// one history entry; different items all land (no lost update).
func TestConcurrentDuplicatesApplyOnce(t *testing.T) {
	f := newFixture(t)
	f.mustApply(authorisation("true", 1000))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := item(payments.EventCapture, fmt.Sprintf("CAP%013d", i%4), psp, "true", 100, nil)
			if _, err := f.apply(it); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	f.check(want{payments.StatePartiallyCaptured, 1000, 400, 0, 5})
}

// TestPlatformNotificationsGuards: what the platform's own notifications
// leave possible. After EXPIRE (or CANCELLATION) of the remainder nothing
// more is captured and the captured money stays refundable; a dispute's
// events are never a reversal (a refund still goes through); an
// account-level item is about no payment.
func TestPlatformNotificationsGuards(t *testing.T) {
	for _, code := range []string{"EXPIRE", "CANCELLATION"} {
		t.Run(code, func(t *testing.T) {
			f := authorisedFixture(t)
			f.must(f.capture(400))
			ref, orig := psp, ""
			if code == "CANCELLATION" {
				ref, orig = "CAN0000000000001", psp
			}
			f.mustApply(item(code, ref, orig, "true", 1000, nil))
			if v := f.payment().View(); v.State != payments.StateCaptured || v.Capturable != 0 || v.Refundable != 400 {
				t.Fatalf("after %s: %+v", code, v)
			}
			if _, err := f.capture(100); err == nil {
				t.Fatal("a capture after the remainder was released was accepted")
			}
			if _, err := f.refund(100); err != nil {
				t.Fatalf("refund after %s: %v", code, err)
			}
		})
	}
	t.Run("dispute", func(t *testing.T) {
		f := captured(t)
		f.mustApply(item("NOTIFICATION_OF_CHARGEBACK", "DSP0000000000001", psp, "true", 1000, nil),
			item("CHARGEBACK", "DSP0000000000001", psp, "true", 300, nil))
		if _, err := f.refund(500); err != nil {
			t.Fatalf("refund after a chargeback: %v", err)
		}
		for _, e := range f.st.Entries(psp) {
			if e.Ref == "DSP0000000000001" && (e.Kind != "dispute" || e.Contribution() != (payments.Totals{})) {
				t.Fatalf("dispute entry: %+v", e)
			}
		}
	})
	t.Run("account-level", func(t *testing.T) {
		f := newFixture(t)
		f.mustApply(authorisation("true", 1000))
		if _, err := f.apply(item("REPORT_AVAILABLE", psp, "", "true", 0, nil)); err == nil {
			t.Fatal("an account-level item was applied to a payment")
		}
		f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
	})
}
