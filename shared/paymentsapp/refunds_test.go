package paymentsapp

import (
	"testing"

	"github.com/yp/paysvc/shared/apperr"
)

func TestParseRefund(t *testing.T) {
	for _, tc := range []struct {
		body, field string
	}{
		{`{"amount":{"value":100,"currency":"EUR"},"reference":"r-1","lineItems":[{"quantity":1,"description":"Shoe"}]}`, ""},
		{`{"reference":"r-1"}`, "amount"},
		{`{"amount":{"value":0,"currency":"EUR"}}`, "amount.value"},
		{`{"amount":{"value":100,"currency":"EUR"},"merchantAccount":"X"}`, "merchantAccount"},
		{`{"amount":{"value":100,"currency":"EUR"},"splits":[]}`, "splits"},
		{`{"amount":{"value":100,"currency":"EUR"},"unknown":1}`, "unknown"},
		{`{"amount":{"value":100,"currency":"EUR"},"lineItems":[{}]}`, "lineItems[0].quantity"},
	} {
		in, err := DecodeRefund([]byte(tc.body))
		if tc.field == "" {
			if err != nil || in.Amount.Value != 100 || in.Reference != "r-1" || len(in.LineItems) != 1 {
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

// TestParseCaptureLineItems: a capture takes lineItems as a refund does
// (buy-now-pay-later methods need them on partial captures).
func TestParseCaptureLineItems(t *testing.T) {
	in, err := DecodeCapture([]byte(`{"amount":{"value":100,"currency":"EUR"},"lineItems":[{"quantity":1,"description":"Shoe"}]}`))
	if err != nil || in.Amount.Value != 100 || len(in.LineItems) != 1 || in.LineItems[0].Quantity != 1 {
		t.Fatalf("%+v %v", in, err)
	}
	_, err = DecodeCapture([]byte(`{"amount":{"value":100,"currency":"EUR"},"lineItems":[{}]}`))
	if e := apperr.As(err); e.Kind != apperr.Invalid || len(e.Fields) == 0 || e.Fields[0].Field != "lineItems[0].quantity" {
		t.Fatalf("%v", err)
	}
}
