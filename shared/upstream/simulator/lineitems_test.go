package simulator

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/yp/paysvc/shared/upstream"
)

// TestLineItemsRule: a buy-now-pay-later payment (Klarna) takes a partial
// capture or refund only with lineItems adding up to its amount (422
// otherwise); whole ones need none, and card payments never do.
func TestLineItemsRule(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	klarna := func() string {
		t.Helper()
		r, err := e.client.Payments(ctx, paymentReq(1000, json.RawMessage(`{"type":"klarna"}`)), "")
		must(t, err)
		details, err := DetailsFor(r.Action, true)
		must(t, err)
		d, err := e.client.PaymentDetails(ctx, upstream.DetailsRequest{Details: details}, "")
		if err != nil || d.ResultCode != upstream.ResultAuthorised {
			t.Fatalf("details %+v %v", d, err)
		}
		return d.PSPReference
	}
	items := func(each, n int64) []upstream.LineItem {
		return []upstream.LineItem{{ID: "1", Description: "Tent", Quantity: n, AmountIncludingTax: &each}}
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || apiErr(t, err).HTTPStatus != 422 {
			t.Errorf("%s: %v, want 422", what, err)
		}
	}

	psp := klarna()
	refused("partial capture without lineItems", e.capture(psp, 400))
	refused("partial capture, lineItems of another total", e.capture(psp, 400, items(100, 3)...))
	if err := e.capture(psp, 400, items(200, 2)...); err != nil {
		t.Fatalf("partial capture with lineItems: %v", err)
	}
	refused("partial refund without lineItems", e.refund(psp, 100))
	if err := e.refund(psp, 100, items(100, 1)...); err != nil {
		t.Fatalf("partial refund with lineItems: %v", err)
	}

	whole := klarna()
	if err := e.capture(whole, 1000); err != nil {
		t.Fatalf("whole capture without lineItems: %v", err)
	}
	if err := e.refund(whole, 1000); err != nil {
		t.Fatalf("whole refund without lineItems: %v", err)
	}

	card := e.pay(t, 1000, "").PSPReference
	if err := e.capture(card, 400); err != nil {
		t.Fatalf("partial card capture: %v", err)
	}
}
