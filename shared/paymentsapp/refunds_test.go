package paymentsapp

import (
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/payments"
)

// TestParseRefund: a refund's body, and a capture's, which takes
// lineItems as a refund does (buy-now-pay-later methods need them on
// partial captures).
func TestParseRefund(t *testing.T) {
	capture := func(b []byte) (payments.RefundInput, error) {
		in, err := DecodeCapture(b)
		return payments.RefundInput(in), err
	}
	for _, tc := range []struct {
		body, field string
		decode      func([]byte) (payments.RefundInput, error)
	}{
		{`{"amount":{"value":100,"currency":"EUR"},"reference":"r-1","lineItems":[{"quantity":1,"description":"Shoe"}]}`, "", DecodeRefund},
		{`{"reference":"r-1"}`, "amount", DecodeRefund},
		{`{"amount":{"value":0,"currency":"EUR"}}`, "amount.value", DecodeRefund},
		{`{"amount":{"value":100,"currency":"EUR"},"merchantAccount":"X"}`, "merchantAccount", DecodeRefund},
		{`{"amount":{"value":100,"currency":"EUR"},"splits":[]}`, "splits", DecodeRefund},
		{`{"amount":{"value":100,"currency":"EUR"},"unknown":1}`, "unknown", DecodeRefund},
		{`{"amount":{"value":100,"currency":"EUR"},"lineItems":[{}]}`, "lineItems[0].quantity", DecodeRefund},
		{`{"amount":{"value":100,"currency":"EUR"},"reference":"r-1","lineItems":[{"quantity":1,"description":"Shoe"}]}`, "", capture},
		{`{"amount":{"value":100,"currency":"EUR"},"lineItems":[{}]}`, "lineItems[0].quantity", capture},
	} {
		in, err := tc.decode([]byte(tc.body))
		if tc.field == "" {
			if err != nil || in.Amount.Value != 100 || in.Reference != "r-1" || len(in.LineItems) != 1 || in.LineItems[0].Quantity != 1 {
				t.Errorf("%s: %+v %v", tc.body, in, err)
			}
			continue
		}
		e := apperr.As(err)
		if e.Kind != apperr.Invalid || len(e.Fields) == 0 || e.Fields[0].Field != tc.field {
			t.Errorf("%s: %v %+v, want 400 naming %s", tc.body, err, e.Fields, tc.field)
		}
	}
}
