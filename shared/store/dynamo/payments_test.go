package dynamo_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// The payment ledgers the tests below write, built as the domain builds
// them (shared/payments: entries.go, capture.go).

// authorised is the head of a payment authorised for 1999 EUR (manual
// capture: capturable in full), created at.
func authorised(psp string, at time.Time) payments.Head {
	yes := true
	h := payments.Head{
		PSPReference: psp, MerchantID: "m_a", SiteID: "site_1", Reference: "order-" + psp, Source: payments.SourceAdvanced,
		Amount: money.Amount{Value: 1999, Currency: "EUR"}, ShopperReference: "shopper-1", CaptureMode: tenant.CaptureManual,
		PaymentMethod: "visa", Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Authorised: 1999,
		Seq: 1, CreatedAt: at, UpdatedAt: at, Version: 1,
	}
	h.Totals = payments.Fold(h, nil)
	return h
}

// created is the write that creates payment h, with its first fact.
func created(h payments.Head) payments.Write {
	return payments.Write{PSP: h.PSPReference, Put: &h, At: h.CreatedAt, Facts: []payments.Fact{{ID: "payment", At: h.CreatedAt,
		Kind: "payment", Origin: payments.OriginAPI, PSPReference: h.PSPReference, Detail: h.Auth.ResultCode}}}
}

// capture is a capture's entry as its request writes it.
func capture(ref string, v int64, at time.Time) payments.Entry {
	return payments.Entry{Ref: ref, Kind: payments.OpCapture, Version: 1, Requested: &payments.Request{
		Amount: money.Amount{Value: v, Currency: "EUR"}, Reference: "cap-" + ref, UpstreamKey: "k-" + ref, At: at}}
}

// request is the delta write of operation e's request, guarded as the
// domain guards a capture.
func request(psp string, e payments.Entry) payments.Write {
	v := e.Requested.Amount.Value
	a := e.Requested.Amount
	return payments.Write{PSP: psp, Delta: e.Contribution(), At: e.Requested.At, Entries: []payments.Entry{e},
		Expect: payments.Expect{MerchantID: "m_a", SiteID: "site_1", Authorised: true, NoReversal: true, NoAmountUpdate: true,
			Currency: "EUR", Capturable: &v},
		Facts: []payments.Fact{{ID: e.Ref + "#requested", At: e.Requested.At, Kind: string(e.Kind) + "-requested",
			Origin: payments.OriginAPI, PSPReference: e.Ref, Amount: &a}}}
}

// answer is the delta write of the platform's answer o to operation e (as
// stored), and the entry it writes.
func answer(psp string, e payments.Entry, o payments.Outcome, at time.Time) (payments.Write, payments.Entry) {
	answered := e
	answered.Answered, answered.Version = &payments.Answer{Outcome: o, At: at}, e.Version+1
	return payments.Write{PSP: psp, Delta: answered.Contribution().Sub(e.Contribution()), At: at,
		Entries: []payments.Entry{answered},
		Facts: []payments.Fact{{ID: e.Ref + "#answered", At: at, Kind: string(e.Kind), Origin: payments.OriginAPI,
			PSPReference: e.Ref, Detail: string(o)}}}, answered
}

// ledger reads payment psp's head and its entries refs, and checks that
// the head's Totals are the fold of them: money moved once.
func ledger(t *testing.T, s payments.Store, psp string, refs ...string) (payments.Head, []payments.Entry) {
	t.Helper()
	ctx := context.Background()
	h, err := s.GetPayment(ctx, psp)
	if err != nil {
		t.Fatalf("GetPayment %s: %v", psp, err)
	}
	es, err := s.GetEntries(ctx, psp, refs...)
	if err != nil {
		t.Fatalf("GetEntries %s: %v", psp, err)
	}
	if fold := payments.Fold(h, es); h.Totals != fold {
		t.Fatalf("%s: Totals %+v, the fold of its %d entries %+v", psp, h.Totals, len(es), fold)
	}
	return h, es
}

// timeline reads payment psp's whole timeline in pages of n facts.
func timeline(t *testing.T, s payments.Store, psp string, n int) []payments.Fact {
	t.Helper()
	var all []payments.Fact
	cursor := ""
	for pages := 0; ; pages++ {
		page, next, err := s.Timeline(context.Background(), psp, cursor, n)
		if err != nil {
			t.Fatalf("Timeline %s: %v", psp, err)
		}
		if len(page) > n || pages > 100 {
			t.Fatalf("Timeline %s: page %d of %d facts (at most %d)", psp, pages, len(page), n)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

// ids are the facts' IDs, in order.
func ids(fs []payments.Fact) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// byRef returns the entries by reference.
func byRef(es []payments.Entry) map[string]payments.Entry {
	m := map[string]payments.Entry{}
	for _, e := range es {
		m[e.Ref] = e
	}
	return m
}

func sameValue(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}
