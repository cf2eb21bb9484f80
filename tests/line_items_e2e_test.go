package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
)

// TestLineItemsE2E (issue 44 item 5, as far as it goes): captures and
// refunds forward lineItems, and a buy-now-pay-later payment's partial
// capture or refund without them is refused by the platform (the
// simulator, as Checkout v71 documents) and answered 400 with its message,
// nothing booked; with lineItems adding up to the amount both go through.
// Both stores.
func TestLineItemsE2E(t *testing.T) {
	onBothStores(t, whOptions{allowLocal: true}, func(t *testing.T, e *whEnv) {
		out := e.api("/payments", `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"klarna-1","paymentMethod":{"type":"klarna"}}`, 200)
		action, _ := json.Marshal(out["action"])
		details := detailsFor(t, action, true)
		done := e.api("/payments/details", `{"details":`+string(details)+`}`, 200)
		psp, _ := done["pspReference"].(string)
		if done["resultCode"] != "Authorised" || psp == "" {
			t.Fatalf("details: %v", done)
		}
		e.settle()
		const tent = `"lineItems":[{"id":"tent","description":"Tent","quantity":2,"amountIncludingTax":200}]`
		// The service refuses a part without lineItems itself, naming the
		// field, before any call: the platform sees none of them.
		lineItemsRefused := func(r map[string]any) bool {
			fields, _ := r["fields"].([]any)
			var f map[string]any
			if len(fields) == 1 {
				f, _ = fields[0].(map[string]any)
			}
			return r["errorCode"] == "yp_2002" && f["field"] == "lineItems" && strings.Contains(r["message"].(string), "lineItems")
		}
		if r := e.api("/payments/"+psp+"/captures", `{"amount":{"value":400,"currency":"EUR"}}`, 400); !lineItemsRefused(r) {
			t.Errorf("partial capture without lineItems: %v", r)
		}
		e.api("/payments/"+psp+"/captures", `{"amount":{"value":400,"currency":"EUR"},`+tent+`}`, 200)
		e.settle()
		if r := e.api("/payments/"+psp+"/refunds", `{"amount":{"value":200,"currency":"EUR"}}`, 400); !lineItemsRefused(r) {
			t.Errorf("partial refund without lineItems: %v", r)
		}
		e.api("/payments/"+psp+"/refunds", `{"amount":{"value":200,"currency":"EUR"},"lineItems":[{"id":"tent","quantity":1,"amountIncludingTax":200}]}`, 200)
		e.settle()
		if v := e.payment(psp).View(); v.Captured != 400 || v.Refunded != 200 || v.State != payments.StatePartiallyRefunded {
			t.Errorf("record: %+v", v)
		}
		if p, _ := e.sim.Payment(psp); p.CapturedValue != 400 || p.RefundedValue != 200 || len(p.Modifications) != 2 {
			t.Errorf("the platform: captured %d refunded %d, modifications %+v (want only the two with lineItems)",
				p.CapturedValue, p.RefundedValue, p.Modifications)
		}
	})
}
