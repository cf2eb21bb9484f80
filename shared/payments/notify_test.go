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
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// memStore is an in-memory payments.Store with the port's version rules.
type memStore struct {
	mu       sync.Mutex
	payments map[string][]byte
	sessions map[string]payments.Session
	// failSaves makes that many SavePayment calls fail (not a conflict).
	failSaves int
}

func newMemStore() *memStore {
	return &memStore{payments: map[string][]byte{}, sessions: map[string]payments.Session{}}
}

func (m *memStore) PutSession(_ context.Context, s payments.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[s.ID] = s
	return nil
}

func (m *memStore) GetSession(_ context.Context, id string) (payments.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return s, storeerr.ErrNotFound
	}
	return s, nil
}

func (m *memStore) GetPayment(_ context.Context, psp string) (payments.Payment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	raw, ok := m.payments[psp]
	if !ok {
		return payments.Payment{}, storeerr.ErrNotFound
	}
	var p payments.Payment
	err := json.Unmarshal(raw, &p)
	return p, err
}

func (m *memStore) SavePayment(_ context.Context, p payments.Payment, prev int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failSaves > 0 {
		m.failSaves--
		return errors.New("store unavailable")
	}
	var cur payments.Payment
	raw, found := m.payments[p.PSPReference]
	if found {
		_ = json.Unmarshal(raw, &cur)
	}
	if (prev == 0 && found) || (prev != 0 && (!found || cur.Version != prev)) || p.Version != prev+1 {
		return storeerr.ErrConflict
	}
	b, err := json.Marshal(p)
	m.payments[p.PSPReference] = b
	return err
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
	return f.result, nil
}

const psp = "PSP0000000000001"

// errUnavailable is a failure without a definitive answer from the
// upstream (5xx, timeout, its refusal of our credentials).
var errUnavailable = errors.New("upstream: HTTP 503")

var (
	t0       = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	merchant = tenant.Merchant{ID: "m_a", Country: "NL", CaptureMode: tenant.CaptureManual, UpstreamAccount: "AlphaECOM", SplitAccount: "BA_a"}
	site     = tenant.Site{ID: "site_a", MerchantID: "m_a"}
	owner    = &payments.NotificationOwner{MerchantID: "m_a", SiteID: "site_a", Source: payments.SourceSessions, SessionID: "CS1"}
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
		Now: f.clk.Now(), FirstSeen: f.clk.Now().Add(-time.Hour), Owner: owner, CaptureMode: tenant.CaptureManual,
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

func (f *fixture) payment() payments.Payment {
	f.t.Helper()
	p, err := f.st.GetPayment(f.ctx, psp)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// notifications counts the history entries from notifications.
func notifications(p payments.Payment) int {
	n := 0
	for _, e := range p.History {
		if e.Origin == payments.OriginNotification {
			n++
		}
	}
	return n
}

type want struct {
	state                          payments.State
	authorised, captured, refunded int64
	notes                          int
}

func (f *fixture) check(w want) {
	f.t.Helper()
	p := f.payment()
	if p.State != w.state || p.AuthorisedValue != w.authorised || p.CapturedValue != w.captured || p.RefundedValue != w.refunded || notifications(p) != w.notes {
		f.t.Fatalf("record: state %s authorised %d captured %d refunded %d notes %d; want %+v\nhistory: %+v",
			p.State, p.AuthorisedValue, p.CapturedValue, p.RefundedValue, notifications(p), w, p.History)
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
		{"adjusted then captured, out of order", []payments.Notification{authorisation("true", 1000), cap1, adjust}, want{payments.StatePartiallyCaptured, 1500, 400, 0, 3}},
		{"refund then refund failed", []payments.Notification{authorisation("true", 1000), cap1, cap2, refund, refundFailed}, want{payments.StateCaptured, 1000, 1000, 0, 5}},
		{"partial refund", []payments.Notification{authorisation("true", 1000), cap1, cap2, refund, refund}, want{payments.StatePartiallyRefunded, 1000, 1000, 300, 4}},
		{"refund failed first (out of order)", []payments.Notification{authorisation("true", 1000), cap1, cap2, refundFailed, refund}, want{payments.StateCaptured, 1000, 1000, 0, 5}},
		{"cancelled", []payments.Notification{authorisation("true", 1000), cancel, cancel}, want{payments.StateCancelled, 1000, 0, 0, 2}},
		{"amount adjusted", []payments.Notification{authorisation("true", 1000), adjust}, want{payments.StateAuthorised, 1500, 0, 0, 2}},
		{"offer closed on an authorised payment", []payments.Notification{authorisation("true", 1000), offerClosed}, want{payments.StateAuthorised, 1000, 0, 0, 2}},
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
		p.State != payments.StateAuthorised || p.Version != 1 {
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
	f := newFixture(t)
	f.advancedPayment("Authorised")
	f.mustApply(authorisation("true", 1000))
	p := f.payment()
	if p.Source != payments.SourceAdvanced || p.State != payments.StateAuthorised || p.AuthorisedValue != 1000 || len(p.History) != 2 {
		t.Fatalf("API first: %+v", p)
	}

	f = newFixture(t)
	f.mustApply(authorisation("true", 1000))
	f.advancedPayment("Authorised")
	p = f.payment()
	if p.State != payments.StateAuthorised || p.AuthorisedValue != 1000 || len(p.History) != 2 || p.Version != 2 {
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
	f := newFixture(t)
	f.advancedPayment("Authorised")
	f.up.during = func(string) {
		f.st.mu.Lock()
		f.st.failSaves = 4
		f.st.mu.Unlock()
	}
	if _, err := f.capture(400); err != nil {
		t.Fatal(err)
	}
	p := f.payment()
	if p.State != payments.StatePartiallyCaptured || p.CapturedValue != 400 || len(p.Reservations) != 0 || !p.HasEvent("capture", "MOD0000000000001") {
		t.Fatalf("record %s captured %d reservations %v history %+v", p.State, p.CapturedValue, p.Reservations, p.History)
	}
	if f.st.failSaves != 0 {
		t.Fatalf("%d failures left", f.st.failSaves)
	}
}

// TestCaptureNotificationDuringTheCall: the CAPTURE arrives while the
// service's capture call is in flight (amount reserved, answer not yet
// recorded): counted once.
func TestCaptureNotificationDuringTheCall(t *testing.T) {
	f := newFixture(t)
	f.advancedPayment("Authorised")
	f.up.during = func(mod string) {
		f.mustApply(item(payments.EventCapture, mod, psp, "true", 1000, nil))
	}
	if _, err := f.capture(1000); err != nil {
		t.Fatal(err)
	}
	f.check(want{payments.StateCaptured, 1000, 1000, 0, 1})
	// And again after the call: still once.
	f.mustApply(item(payments.EventCapture, "MOD0000000000001", psp, "true", 1000, nil))
	f.check(want{payments.StateCaptured, 1000, 1000, 0, 1})
}

// TestCaptureFailedRevertsOptimisticCapture covers CAPTURE_FAILED after the
// call was recorded, and during the call (retried later: ErrNotReady).
func TestCaptureFailedRevertsOptimisticCapture(t *testing.T) {
	f := newFixture(t)
	f.advancedPayment("Authorised")
	if _, err := f.capture(600); err != nil {
		t.Fatal(err)
	}
	f.check(want{payments.StatePartiallyCaptured, 1000, 600, 0, 0})
	f.mustApply(item(payments.EventCaptureFailed, "MOD0000000000001", psp, "true", 600, nil))
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})

	f = newFixture(t)
	f.advancedPayment("Authorised")
	failed := item(payments.EventCaptureFailed, "MOD0000000000001", psp, "true", 600, nil)
	var during error
	f.up.during = func(string) {
		_, during = payments.ApplyNotification(f.ctx, f.st, failed, payments.NotificationOptions{
			Now: f.clk.Now(), FirstSeen: f.clk.Now(), CaptureMode: tenant.CaptureManual,
		})
	}
	if _, err := f.capture(600); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(during, payments.ErrNotReady) {
		t.Fatalf("CAPTURE_FAILED during the call: %v, want ErrNotReady", during)
	}
	f.mustApply(failed) // the upstream's retry
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
}

// TestStaleReservationReleasedAfterGrace: a reservation whose call never
// settled is released by CAPTURE_FAILED once the grace period is over.
func TestStaleReservationReleasedAfterGrace(t *testing.T) {
	f := newFixture(t)
	f.mustApply(authorisation("true", 1000))
	_, err := payments.Mutate(f.ctx, f.st, psp, nil, func(p *payments.Payment) error {
		p.Reservations = map[string]int64{"op_lost": 500}
		p.CapturedValue, p.State = 500, payments.StatePartiallyCaptured
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	failed := item(payments.EventCaptureFailed, "MOD9", psp, "true", 500, nil)
	opts := payments.NotificationOptions{Now: t0, FirstSeen: t0, CaptureMode: tenant.CaptureManual}
	if _, err := payments.ApplyNotification(f.ctx, f.st, failed, opts); !errors.Is(err, payments.ErrNotReady) {
		t.Fatalf("within grace: %v", err)
	}
	opts.Now = t0.Add(payments.DefaultNotReadyGrace)
	if _, err := payments.ApplyNotification(f.ctx, f.st, failed, opts); err != nil {
		t.Fatal(err)
	}
	if p := f.payment(); len(p.Reservations) != 0 || p.CapturedValue != 0 || p.State != payments.StateAuthorised {
		t.Fatalf("after grace: %+v", p)
	}
}

func TestReversalOutcomes(t *testing.T) {
	// Cancel via the API, confirmed.
	f := newFixture(t)
	f.advancedPayment("Authorised")
	if _, err := f.reverse(); err != nil {
		t.Fatal(err)
	}
	f.mustApply(item(payments.EventCancelOrRefund, "MOD0000000000001", psp, "true", 1000, map[string]string{"modification.action": "cancel"}))
	f.check(want{payments.StateCancelled, 1000, 0, 0, 1})

	// Cancel via the API, failed: back to authorised.
	f = newFixture(t)
	f.advancedPayment("Authorised")
	if _, err := f.reverse(); err != nil {
		t.Fatal(err)
	}
	f.mustApply(item(payments.EventCancelOrRefund, "MOD0000000000001", psp, "false", 1000, map[string]string{"modification.action": "cancel"}))
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})

	// Refund via the API after a capture, failed: back to captured.
	f = newFixture(t)
	f.advancedPayment("Authorised")
	if _, err := f.capture(1000); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reverse(); err != nil {
		t.Fatal(err)
	}
	f.check(want{payments.StateRefunded, 1000, 1000, 1000, 0})
	f.mustApply(item(payments.EventCancelOrRefund, "MOD0000000000002", psp, "false", 1000, map[string]string{"modification.action": "refund"}))
	f.check(want{payments.StateCaptured, 1000, 1000, 0, 1})

	// A reversal failure overtaking the call's answer waits (ErrNotReady).
	f = newFixture(t)
	f.advancedPayment("Authorised")
	failed := item(payments.EventCancelOrRefund, "MOD0000000000001", psp, "false", 1000, map[string]string{"modification.action": "cancel"})
	var during error
	f.up.during = func(string) {
		_, during = payments.ApplyNotification(f.ctx, f.st, failed, payments.NotificationOptions{Now: f.clk.Now(), FirstSeen: f.clk.Now()})
	}
	if _, err := f.reverse(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(during, payments.ErrNotReady) {
		t.Fatalf("reversal failure during the call: %v", during)
	}
	f.mustApply(failed)
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
}

func TestAmountAdjustmentFailureRestoresAmount(t *testing.T) {
	f := newFixture(t)
	f.advancedPayment("Authorised")
	if _, err := f.updateAmount(1500); err != nil {
		t.Fatal(err)
	}
	f.check(want{payments.StateAuthorised, 1500, 0, 0, 0})
	f.mustApply(item(payments.EventAuthorisationAdjustment, "MOD0000000000001", psp, "false", 1500, nil))
	f.check(want{payments.StateAuthorised, 1000, 0, 0, 1})
	if p := f.payment(); p.Amount.Value != 1000 {
		t.Fatalf("amount not restored: %+v", p.Amount)
	}
}

func TestOfferClosedExpiresUnfinishedPayment(t *testing.T) {
	f := newFixture(t)
	f.advancedPayment("RedirectShopper")
	f.mustApply(item(payments.EventOfferClosed, psp, "", "true", 1000, nil))
	if p := f.payment(); p.State != payments.StateExpired {
		t.Fatalf("state %s, want Expired", p.State)
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
