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
	up := &detailsUpstream{fakeUpstream: f.up, details: payments.PaymentAnswer{ResultCode: "Authorised", PSPReference: psp}}
	f.svc = payments.NewService(f.st, up, f.clk, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	f.up.result = payments.PaymentAnswer{ResultCode: "IdentifyShopper", Action: json.RawMessage(`{"type":"threeDS2","subtype":"fingerprint","paymentData":"Ab02b4c0!fingerprint"}`),
		ActionPaymentData: "Ab02b4c0!fingerprint"}
	in := payments.PaymentInput{
		Amount:        money.Amount{Value: 1000, Currency: "EUR"},
		PaymentMethod: json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_5454545454545454"}`),
		ReturnURL:     "https://shop.example/return", Reference: "order-1", ShopperReference: "shopper-1",
		ShopperInteraction: payments.ShopperInteractionEcommerce, RecurringProcessingModel: "CardOnFile",
		AdditionalData: map[string]string{"authorisationType": "PreAuth"},
		StateData:      map[string]json.RawMessage{"storePaymentMethod": json.RawMessage(`true`)},
	}
	c := f.call()
	out, err := f.svc.StartPayment(f.ctx, c, in)
	if err != nil || out.PSPReference != "" || out.MerchantReference != "order-1" {
		t.Fatalf("StartPayment: %+v %v", out, err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("StartPayment's record: %v", err)
	}
	return f
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
	if _, err := f.updateAmount(1200); err != nil {
		t.Fatal(err)
	}
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
// and one of its action's alias, without a read.
func TestPendingRecordWrittenWithoutARead(t *testing.T) {
	f := newFixture(t)
	accesses := f.st.record()
	_ = pendingFixtureOn(t, f)
	var got []string
	for _, a := range accesses() {
		if !strings.HasPrefix(a, "write ") {
			t.Fatalf("%q: the pending record is read before it is created: %q", a, accesses())
		}
		got = append(got, a)
	}
	if len(got) != 2 {
		t.Fatalf("writes %q, want the pending record's and the alias's", got)
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
