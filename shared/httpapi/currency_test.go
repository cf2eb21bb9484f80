package httpapi_test

import (
	"testing"

	"github.com/yp/paysvc/shared/testenv"
)

// ISO 4217 codes that name no currency (testing, metals, units of account)
// are refused wherever an amount is accepted, before the upstream is called.
func TestNonCurrencyCodesRefused(t *testing.T) {
	e := testenv.New(t)
	site := "/v1/ecom/" + testenv.SiteA
	var cases []errCase
	for _, code := range []string{"XXX", "XTS", "XAU", "XDR", "XUA"} {
		amount := `{"value":1000,"currency":"` + code + `"}`
		cases = append(cases,
			errCase{name: "payments " + code, method: "POST", path: site + "/payments", key: "A",
				body:   `{"amount":` + amount + `,"paymentMethod":` + card + `,"returnUrl":"https://shop.example/r"}`,
				status: 400, code: "yp_2002", field: "amount.currency"},
			errCase{name: "sessions " + code, method: "POST", path: site + "/sessions", key: "A",
				body:   `{"amount":` + amount + `,"returnUrl":"https://shop.example/r"}`,
				status: 400, code: "yp_2002", field: "amount.currency"},
		)
	}
	runErrCases(t, e, cases)
	if n := len(e.Upstream.Requests("/payments")) + len(e.Upstream.Requests("/sessions")); n != 0 {
		t.Fatalf("the upstream was called %d times for refused currencies", n)
	}
}
