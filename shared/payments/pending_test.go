package payments_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
)

// detailsUpstream answers /payments/details with a fixed answer.
type detailsUpstream struct {
	*fakeUpstream
	details payments.PaymentAnswer
}

func (d *detailsUpstream) Details(context.Context, payments.DetailsRequest) (payments.PaymentAnswer, error) {
	return d.details, nil
}

// pendingFixture starts a 3-D Secure payment the platform answers without
// pspReference (the published shape); details answer only resultCode and
// pspReference.
func pendingFixture(t *testing.T) *fixture { return pendingFixtureOn(t, newFixture(t)) }

// pendingFixtureOn is pendingFixture with f.
func pendingFixtureOn(t *testing.T, f *fixture) *fixture {
	f.usePendingUpstream()
	if err := f.startPending(); err != nil {
		t.Fatalf("StartPayment's record: %v", err)
	}
	return f
}

// usePendingUpstream makes f's platform answer payments with an action
// and no pspReference, details with resultCode and pspReference only.
func (f *fixture) usePendingUpstream() {
	up := &detailsUpstream{fakeUpstream: f.up, details: payments.PaymentAnswer{ResultCode: "Authorised", PSPReference: psp}}
	f.svc = payments.NewService(f.st, up, f.clk, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	f.up.result = payments.PaymentAnswer{ResultCode: "IdentifyShopper", Action: json.RawMessage(`{"type":"threeDS2","subtype":"fingerprint","paymentData":"Ab02b4c0!fingerprint"}`),
		ActionPaymentData: "Ab02b4c0!fingerprint"}
}

// startPending starts preAuthInput's payment, answered with an action, and
// returns its record writes' error.
func (f *fixture) startPending() error {
	f.t.Helper()
	c := f.call()
	out, err := f.svc.StartPayment(f.ctx, c, preAuthInput())
	if err != nil || out.PSPReference != "" || out.MerchantReference != "order-1" {
		f.t.Fatalf("StartPayment: %+v %v", out, err)
	}
	return c.Wait()
}

func (f *fixture) details(ref string) { f.detailsWith(payments.DetailsInput{Reference: ref}) }

func (f *fixture) detailsWith(in payments.DetailsInput) {
	f.t.Helper()
	c := f.call()
	in.Details = json.RawMessage(`{"threeDSResult":"eyJ0cmFuc1N0YXR1cyI6IlkifQ=="}`)
	out, err := f.svc.SubmitDetails(f.ctx, c, in)
	if err != nil || out.ResultCode != "Authorised" || out.PSPReference != psp {
		f.t.Fatalf("SubmitDetails: %+v %v", out, err)
	}
	if err := c.Wait(); err != nil {
		f.t.Fatalf("SubmitDetails' record: %v", err)
	}
}

// The AUTHORISATION notification of an advanced payment names its owner
// through the routing metadata.
func (f *fixture) applyAdvancedAuthorisation() {
	f.t.Helper()
	it := item(payments.EventAuthorisation, psp, "", "true", 1000, nil)
	advanced := &payments.NotificationOwner{MerchantID: merchant.ID, SiteID: site.ID, Source: payments.SourceAdvanced}
	if _, err := payments.ApplyNotification(f.ctx, f.st, it, payments.NotificationOptions{Now: f.clk.Now(), Owner: advanced}); err != nil {
		f.t.Fatal(err)
	}
}

// wantBound checks the record holds everything the request knew, once.
func (f *fixture) wantBound(state payments.State) {
	f.t.Helper()
	p := f.payment()
	if p.Reference != "order-1" || p.Amount.Value != 1000 || p.Amount.Currency != "EUR" || p.Authorised != 1000 ||
		p.ShopperReference != "shopper-1" || !p.StorePaymentMethod || p.AuthorisationType != payments.AuthorisationPreAuth ||
		p.Source != payments.SourceAdvanced || p.SiteID != site.ID || p.View().State != state {
		f.t.Fatalf("record: %+v", p)
	}
	if bound := f.apiFacts("bound"); bound != 1 {
		f.t.Fatalf("merged %d times: %+v", bound, f.timeline())
	}
	pend, err := f.st.GetPayment(f.ctx, payments.PendingKey(merchant.ID, site.ID, "order-1"))
	if err != nil || pend.BoundTo != psp {
		f.t.Fatalf("pending record: %+v %v", pend, err)
	}
}

func TestPendingPaymentRecordedAtOnce(t *testing.T) {
	f := pendingFixture(t)
	p, err := f.st.GetPayment(f.ctx, payments.PendingKey(merchant.ID, site.ID, "order-1"))
	if err != nil || p.View().State != payments.StateIdentifyShopper || p.Amount.Value != 1000 || p.BoundTo != "" || p.AuthorisationType != payments.AuthorisationPreAuth {
		t.Fatalf("pending record: %+v %v", p, err)
	}
	// Not a payment: no modification reaches it.
	if _, err := f.svc.Capture(f.ctx, f.call(), p.PSPReference, payments.CaptureInput{Amount: money.Amount{Value: 1, Currency: "EUR"}}); err == nil {
		t.Fatal("a capture of a pending record was accepted")
	}
}

func TestPendingBoundByDetailsThenNotification(t *testing.T) {
	f := pendingFixture(t)
	f.details("order-1")
	f.wantBound(payments.StateAuthorised)
	// Right after details: the amount of the pre-authorisation can change.
	f.must(f.updateAmount(1200))
	f.applyAdvancedAuthorisation()
	p := f.payment()
	if p.Authorised != 1200 || p.ShopperReference != "shopper-1" {
		t.Fatalf("after the notification: %+v", p)
	}
}

func TestPendingBoundByNotificationThenDetails(t *testing.T) {
	f := pendingFixture(t)
	f.applyAdvancedAuthorisation()
	f.wantBound(payments.StateAuthorised)
	f.details("order-1")
	f.wantBound(payments.StateAuthorised)
}

func TestPendingDetailsWithoutReferenceBoundByNotification(t *testing.T) {
	f := pendingFixture(t)
	f.details("") // the published details request: nothing names the payment
	if p := f.payment(); p.Amount.Value != 0 {
		t.Fatalf("the details answer carried no amount, yet: %+v", p)
	}
	f.applyAdvancedAuthorisation()
	f.wantBound(payments.StateAuthorised)
}

func TestPendingDetailsWithEchoedReference(t *testing.T) {
	f := pendingFixture(t)
	f.svc = payments.NewService(f.st, &detailsUpstream{fakeUpstream: f.up,
		details: payments.PaymentAnswer{ResultCode: "Authorised", PSPReference: psp, MerchantReference: "order-1"}}, f.clk, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	f.details("")
	f.wantBound(payments.StateAuthorised)
}

// The component sends the action's paymentData back: that alone binds the
// payment at once.
func TestPendingBoundByTheActionsPaymentData(t *testing.T) {
	f := pendingFixture(t)
	f.detailsWith(payments.DetailsInput{PaymentData: "Ab02b4c0!fingerprint"})
	f.wantBound(payments.StateAuthorised)
	// Another site's paymentData leads nowhere.
	g := pendingFixture(t)
	other := g.call()
	other.Site.ID = "site_b"
	if _, err := g.svc.SubmitDetails(g.ctx, other, payments.DetailsInput{Details: json.RawMessage(`{}`), PaymentData: "Ab02b4c0!fingerprint"}); err != nil {
		t.Fatal(err)
	}
	if err := other.Wait(); err != nil {
		t.Fatal(err)
	}
	if p, err := g.st.GetPayment(g.ctx, psp); err != nil || p.SiteID != "site_b" || p.Amount.Value != 0 || p.Reference != "" {
		t.Fatalf("another site's details bound this site's payment: %+v %v", p, err)
	}
}

// What details read and write. The pending record the request names is
// read before any write (while the platform answers, off the critical
// path), never the payment's head: the answer (resultCode and pspReference,
// the platform's shape) is written create-first, with the pending record
// bound beside it (one step after the call). Only a create that finds the
// head reads it: the same answer again reads it and writes nothing more.
func TestDetailsReadBeforeTheyWrite(t *testing.T) {
	pending := payments.PendingKey(merchant.ID, site.ID, "order-1")
	for _, tc := range []struct {
		name string
		// ref is the details request's reference; twice sends it again.
		ref    string
		twice  bool
		before []string // reads before the first write
		write  []string
		after  []string // reads after it
	}{
		{name: "pending record bound by details", ref: "order-1",
			before: []string{"read " + pending}, write: []string{"write " + psp, "write " + pending}},
		{name: "the same answer again", ref: "order-1", twice: true,
			before: []string{"read " + pending}, write: []string{"write " + psp}, after: []string{"read " + psp}},
		{name: "nothing names the payment", ref: "",
			write: []string{"write " + psp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := pendingFixture(t)
			if tc.twice {
				f.details(tc.ref)
			}
			accesses := f.st.record()
			f.details(tc.ref)
			var before, writes, after []string
			for _, a := range accesses() {
				switch {
				case strings.HasPrefix(a, "write "):
					writes = append(writes, a)
				case len(writes) > 0:
					after = append(after, a)
				default:
					before = append(before, a)
				}
			}
			for _, l := range [][]string{before, writes, after} {
				slices.Sort(l)
			}
			if !slices.Equal(before, tc.before) || !slices.Equal(writes, tc.write) || !slices.Equal(after, tc.after) {
				t.Fatalf("reads %q, writes %q, then reads %q; want %q, %q, %q", before, writes, after, tc.before, tc.write, tc.after)
			}
		})
	}
}

// A payment answered with an action is one write of its pending record
// before the call, then one of its answer's result code and one of its
// action's alias, without a read.
func TestPendingRecordWrittenWithoutARead(t *testing.T) {
	f := newFixture(t)
	accesses := f.st.record()
	_ = pendingFixtureOn(t, f)
	pending := "write " + payments.PendingKey(merchant.ID, site.ID, "order-1")
	got := accesses()
	if len(got) != 3 || got[0] != pending || !slices.Contains(got[1:], pending) {
		t.Fatalf("accesses %q, want the pending record's write, then its answer's and the alias's", got)
	}
	for _, a := range got {
		if !strings.HasPrefix(a, "write ") {
			t.Fatalf("%q: a read: %q", a, got)
		}
	}
}

// Details whose answer names another site's payment, and no pending
// record: the create-first write finds the head, reads it, and the call is
// refused (payment not found) without recording anything; the payment's
// own site's bare details record it as before.
func TestBareDetailsOfAnotherSitesPaymentAreRefused(t *testing.T) {
	f := pendingFixture(t)
	f.details("order-1") // this site's payment, bound and recorded
	before := f.payment()
	other := f.call()
	other.Site.ID = "site_b"
	accesses := f.st.record()
	_, err := f.svc.SubmitDetails(f.ctx, other, payments.DetailsInput{Details: json.RawMessage(`{"threeDSResult":"eyJ0cmFuc1N0YXR1cyI6IlkifQ=="}`)})
	if apperr.KindOf(err) != apperr.PaymentNotFound {
		t.Fatalf("SubmitDetails: %v, want payment not found", err)
	}
	if err := other.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got, want := accesses(), []string{"write " + psp, "read " + psp}; !slices.Equal(got, want) {
		t.Fatalf("accesses %q, want %q (the create that finds the head, then its read)", got, want)
	}
	if after := f.payment(); after.Version != before.Version || after.SiteID != site.ID {
		t.Fatalf("another site's details changed the record: %+v, was %+v", after, before)
	}
	// The payment's own site: recorded.
	own := f.call()
	if _, err := f.svc.SubmitDetails(f.ctx, own, payments.DetailsInput{Details: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := own.Wait(); err != nil {
		t.Fatalf("own site's bare details: Wait %v", err)
	}
}

// Details naming this site's pending record whose answer names another
// site's payment: refused, and the pending record, bound alongside the
// create that found the other payment, is unbound again (its payment is
// still to come).
func TestNamedDetailsOfAnotherSitesPaymentLeaveThePendingRecordUnbound(t *testing.T) {
	f := pendingFixture(t)
	foreign := payments.Head{PSPReference: psp, MerchantID: merchant.ID, SiteID: "site_b", Version: 1, CreatedAt: t0, UpdatedAt: t0}
	if err := f.st.Write(f.ctx, payments.Write{PSP: psp, Put: &foreign}); err != nil {
		t.Fatal(err)
	}
	c := f.call()
	_, err := f.svc.SubmitDetails(f.ctx, c, payments.DetailsInput{Reference: "order-1", Details: json.RawMessage(`{}`)})
	if apperr.KindOf(err) != apperr.PaymentNotFound {
		t.Fatalf("SubmitDetails: %v; want payment not found", err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if h, err := f.st.GetPayment(f.ctx, psp); err != nil || h.Version != 1 || h.SiteID != "site_b" {
		t.Fatalf("the other site's payment: %+v %v", h, err)
	}
	pend, err := f.st.GetPayment(f.ctx, payments.PendingKey(merchant.ID, site.ID, "order-1"))
	if err != nil || pend.BoundTo != "" {
		t.Fatalf("pending record %+v %v, want unbound", pend, err)
	}
}

// preAuthInput is a pre-authorisation that stores its card, as
// pendingFixture starts it.
func preAuthInput() payments.PaymentInput {
	return payments.PaymentInput{
		Amount:        money.Amount{Value: 1000, Currency: "EUR"},
		PaymentMethod: json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_5454545454545454"}`),
		ReturnURL:     "https://shop.example/return", Reference: "order-1", ShopperReference: "shopper-1",
		ShopperInteraction: payments.ShopperInteractionEcommerce, RecurringProcessingModel: "CardOnFile",
		AdditionalData: map[string]string{"authorisationType": "PreAuth"},
		StateData:      map[string]json.RawMessage{"storePaymentMethod": json.RawMessage(`true`)},
	}
}

// losing makes the store refuse every write from the platform's next
// answer on, for the whole (zero) retry window, and returns what takes
// writes again.
func (f *fixture) losing() (recovered func()) {
	f.svc.RetryRecordWritesFor(0)
	f.up.during = func(string) {
		f.st.mu.Lock()
		f.st.failWrites = 1 << 30
		f.st.mu.Unlock()
	}
	return func() {
		f.st.mu.Lock()
		f.st.failWrites = 0
		f.st.mu.Unlock()
		f.up.during = nil
	}
}

// wantRequestFacts checks the payment's record holds what its request
// knew, in state.
func (f *fixture) wantRequestFacts(state payments.State) {
	f.t.Helper()
	p := f.payment()
	if p.Reference != "order-1" || p.Amount.Value != 1000 || p.Amount.Currency != "EUR" || p.Authorised != 1000 ||
		p.ShopperReference != "shopper-1" || !p.StorePaymentMethod || p.AuthorisationType != payments.AuthorisationPreAuth ||
		p.Source != payments.SourceAdvanced || p.SiteID != site.ID || p.CaptureMode != merchant.CaptureMode || p.View().State != state {
		f.t.Fatalf("record: %+v", p)
	}
}

// A payment answered with its pspReference whose head write (and the
// pending record's binding) is lost: the merchant gets the platform's
// answer, and the AUTHORISATION notification creates the head from its
// routing metadata and the pending record written before the call — the
// same request facts as a normal run's (a pre-authorisation: its amount
// can be updated).
func TestLostPaymentHeadRepairedByItsNotification(t *testing.T) {
	run := func(lose bool) *fixture {
		f := newFixture(t)
		f.up.result = payments.PaymentAnswer{ResultCode: "Authorised", PSPReference: psp, MerchantReference: "order-1"}
		recovered := func() {}
		if lose {
			recovered = f.losing()
		}
		c := f.call()
		out, err := f.svc.StartPayment(f.ctx, c, preAuthInput())
		if err != nil || out.ResultCode != "Authorised" || out.PSPReference != psp {
			t.Fatalf("lose %v: StartPayment %+v, %v", lose, out, err)
		}
		if werr := c.Wait(); lose != (werr != nil) {
			t.Fatalf("lose %v: Wait %v", lose, werr)
		}
		recovered()
		f.applyAdvancedAuthorisation()
		f.wantRequestFacts(payments.StateAuthorised)
		if _, err := f.updateAmount(1200); err != nil {
			t.Fatalf("lose %v: amount update: %v", lose, err)
		}
		return f
	}
	want, got := run(false).payment(), run(true).payment()
	if got.View() != want.View() || got.Totals != want.Totals || got.StoredMethodID != want.StoredMethodID {
		t.Fatalf("repaired %+v, a normal run's %+v", got, want)
	}
}

// A payment answered with an action and no pspReference whose answer's
// writes (the pending record's result code, the action's alias) are lost:
// the pending record written before the call still binds — details naming
// the reference, or the AUTHORISATION by its merchantReference; details
// naming only the action's paymentData (its alias lost) are recorded from
// the answer, and the AUTHORISATION fills the rest.
func TestLostPendingAnswerStillBinds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		details *payments.DetailsInput // nil: none before the notification
	}{
		{"details naming the reference", &payments.DetailsInput{Reference: "order-1"}},
		{"the AUTHORISATION", nil},
		{"details naming the paymentData", &payments.DetailsInput{PaymentData: "Ab02b4c0!fingerprint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.usePendingUpstream()
			recovered := f.losing()
			if err := f.startPending(); err == nil {
				t.Fatal("the answer's record writes were not lost")
			}
			recovered()
			if tc.details != nil {
				f.detailsWith(*tc.details)
			}
			f.applyAdvancedAuthorisation()
			f.wantRequestFacts(payments.StateAuthorised)
		})
	}
}

// Details whose record write is lost fail (nothing was returned the
// merchant could keep); the AUTHORISATION creates the head from the
// pending record, and the details' retry records its answer over it.
func TestLostDetailsRecordFailsTheCall(t *testing.T) {
	f := pendingFixture(t)
	f.svc.RetryRecordWritesFor(0)
	f.st.mu.Lock()
	f.st.failWrites = 1 << 30
	f.st.mu.Unlock()
	c := f.call()
	_, err := f.svc.SubmitDetails(f.ctx, c, payments.DetailsInput{Reference: "order-1", Details: json.RawMessage(`{}`)})
	if apperr.KindOf(err) != apperr.Internal {
		t.Fatalf("SubmitDetails with its record lost: %v, want an internal error", err)
	}
	f.st.mu.Lock()
	f.st.failWrites = 0
	f.st.mu.Unlock()
	f.applyAdvancedAuthorisation()
	f.wantBound(payments.StateAuthorised)
	f.details("order-1") // the retry
	f.wantBound(payments.StateAuthorised)
}
