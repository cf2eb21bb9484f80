package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// Every upstream endpoint failing (the simulator's FailNext) answers the
// endpoint's own error code through the HTTP surface; the failed call is
// not kept by the idempotency layer, so a retry with the same
// Idempotency-Key reaches the upstream again and gets its real answer.
func TestUpstreamFailuresMapToEndpointCodes(t *testing.T) {
	site := "/v1/ecom/" + testenv.SiteA
	authorised := func(e *testenv.Env) string {
		t.Helper()
		// A pre-authorisation, so that its amount can be updated.
		r := e.Do("POST", payPath, "A", strings.Replace(cardPayment(1000), `"returnUrl"`, `"additionalData":{"authorisationType":"PreAuth"},"returnUrl"`, 1), "Idempotency-Key", "setup-pay")
		psp, _ := r.JSON(t)["pspReference"].(string)
		if r.Status != 200 || psp == "" {
			t.Fatalf("setup payment: %d %s", r.Status, r.Body)
		}
		return psp
	}
	tests := []struct {
		endpoint string // simulator endpoint
		code     string
		failure  simulator.Failure
		request  func(e *testenv.Env) (method, path, body string)
	}{
		{"captures", "yp_4003", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			return "POST", site + "/payments/" + authorised(e) + "/captures", `{"amount":{"value":1000,"currency":"EUR"}}`
		}},
		{"captures", "yp_4003", simulator.FailTimeout, func(e *testenv.Env) (string, string, string) {
			return "POST", site + "/payments/" + authorised(e) + "/captures", `{"amount":{"value":1000,"currency":"EUR"}}`
		}},
		{"payments/details", "yp_4004", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			return "POST", site + "/payments/details", `{"details":{"redirectResult":"authorised"}}`
		}},
		// A reversal of an uncaptured payment is the platform's cancel.
		{"cancels", "yp_4005", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			return "POST", site + "/payments/" + authorised(e) + "/reversals", `{}`
		}},
		{"payments", "yp_4006", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			return "POST", payPath, cardPayment(1000)
		}},
		{"amountUpdates", "yp_4007", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			psp := authorised(e)
			return "POST", site + "/payments/" + psp + "/amount-updates", `{"pspReference":"` + psp + `","amount":{"value":1500,"currency":"EUR"}}`
		}},
		{"sessions", "yp_4008", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			return "POST", site + "/sessions", `{"amount":{"value":1000,"currency":"EUR"},"reference":"s-1","returnUrl":"https://shop.example/r"}`
		}},
		{"paymentMethods", "yp_4009", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			return "POST", site + "/payment-methods", `{"amount":{"value":1000,"currency":"EUR"}}`
		}},
		{"refunds", "yp_4010", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			psp := authorised(e)
			if r := e.Do("POST", site+"/payments/"+psp+"/captures", "A", `{"amount":{"value":1000,"currency":"EUR"}}`); r.Status != 200 {
				t.Fatalf("setup capture: %d %s", r.Status, r.Body)
			}
			return "POST", site + "/payments/" + psp + "/refunds", `{"amount":{"value":400,"currency":"EUR"}}`
		}},
		{"refunds", "yp_4010", simulator.FailTimeout, func(e *testenv.Env) (string, string, string) {
			psp := authorised(e)
			if r := e.Do("POST", site+"/payments/"+psp+"/captures", "A", `{"amount":{"value":1000,"currency":"EUR"}}`); r.Status != 200 {
				t.Fatalf("setup capture: %d %s", r.Status, r.Body)
			}
			return "POST", site + "/payments/" + psp + "/refunds", `{"amount":{"value":400,"currency":"EUR"}}`
		}},
		{"storedPaymentMethods", "yp_4006", simulator.FailHTTP500, func(e *testenv.Env) (string, string, string) {
			return "DELETE", site + "/stored-payment-methods/TOKEN0001?shopperReference=shopper-1", ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.code+" "+tt.endpoint+" "+string(tt.failure), func(t *testing.T) {
			// A held request fails when the service's upstream call times
			// out: it waits that long (the simulator holds it a minute).
			e := testenv.NewWith(t, testenv.Options{UpstreamTimeout: 5 * time.Second})
			method, path, body := tt.request(e)
			before := e.Sim.Requests(tt.endpoint)
			if err := e.Sim.FailNext(tt.endpoint, tt.failure); err != nil {
				t.Fatal(err)
			}
			r := e.Do(method, path, "A", body, "Idempotency-Key", "op-1")
			if r.Status != 500 || r.JSON(t)["errorCode"] != tt.code {
				t.Fatalf("%s %s: %d %s, want 500 %s", method, path, r.Status, r.Body, tt.code)
			}
			if e.Sim.Requests(tt.endpoint) != before+1 {
				t.Fatalf("the upstream %s was not called once", tt.endpoint)
			}
			if !strings.Contains(strings.ToLower(string(r.Body)), "retry") {
				t.Errorf("the answer does not say to retry: %s", r.Body)
			}
			retry := e.Do(method, path, "A", body, "Idempotency-Key", "op-1")
			if retry.Status == 500 || e.Sim.Requests(tt.endpoint) != before+2 {
				t.Fatalf("retry: %d %s (upstream calls %d)", retry.Status, retry.Body, e.Sim.Requests(tt.endpoint)-before)
			}
		})
	}
}
