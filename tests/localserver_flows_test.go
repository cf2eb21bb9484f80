package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The payment flows of issue 3, end to end against the local server
// process (its in-process simulator behind real HTTP).
func TestLocalServerPaymentFlows(t *testing.T) {
	s := startLocal(t, "PAYSVC_DATA_DIR="+t.TempDir(), "PAYSVC_SEED_FILE=../cmd/paysvc-local/seed.example.json")
	const site = "/v1/ecom/site_acme_web"
	post := func(path, body string, want int) map[string]any {
		t.Helper()
		r := s.call("POST", site+path, seedKey, body)
		if r.status != want {
			t.Fatalf("POST %s: %d, want %d: %s", path, r.status, want, r.body)
		}
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("POST %s: body %s", path, r.body)
		}
		return m
	}
	card := func(number, holder string, value int) string {
		return fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"},"returnUrl":"https://acme.example/return","paymentMethod":{"type":"scheme",
			"encryptedCardNumber":"test_%s","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737","holderName":%q}}`,
			value, number, holder)
	}
	amount := func(v int) string { return fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"}}`, v) }

	t.Run("authorised, captured in two parts, reversal refunds", func(t *testing.T) {
		psp := post("/payments", card("4111111111111111", "Jo", 1000), 200)["pspReference"].(string)
		post("/payments/"+psp+"/captures", amount(300), 200)
		post("/payments/"+psp+"/captures", amount(701), 400) // more than the rest
		post("/payments/"+psp+"/captures", amount(700), 200)
		if r := post("/payments/"+psp+"/reversals", `{}`, 200); r["status"] != "received" {
			t.Fatalf("reversal %v", r)
		}
	})
	t.Run("authorised then reversal cancels", func(t *testing.T) {
		psp := post("/payments", card("5555555555554444", "Jo", 500), 200)["pspReference"].(string)
		post("/payments/"+psp+"/reversals", `{}`, 200)
		post("/payments/"+psp+"/captures", amount(500), 400) // cancelled
	})
	// The simulator answers as the platform does (make run's default): an
	// action without a pspReference; 3-D Secure on a redirect page, or in
	// the component (fingerprint, then challenge) with nativeThreeDS.
	t.Run("3DS2 on the 3-D Secure page then details authorised", func(t *testing.T) {
		out := post("/payments", card("5454545454545454", "Jo", 1500), 200)
		if out["resultCode"] != "RedirectShopper" || out["pspReference"] != nil {
			t.Fatalf("payment %v", out)
		}
		action, _ := json.Marshal(out["action"])
		details := detailsFor(t, action, true)
		if r := post("/payments/details", `{"details":`+string(details)+`}`, 200); r["resultCode"] != "Authorised" || r["pspReference"] == nil {
			t.Fatalf("details %v", r)
		}
	})
	t.Run("native 3DS2: fingerprint, challenge, authorised", func(t *testing.T) {
		native := strings.Replace(card("5454545454545454", "Jo", 1500), `"returnUrl"`, `"authenticationData":{"threeDSRequestData":{"nativeThreeDS":"preferred"}},"returnUrl"`, 1)
		out := post("/payments", native, 200)
		var steps []string
		for i := 0; out["action"] != nil && i < 3; i++ {
			steps = append(steps, fmt.Sprint(out["resultCode"]))
			action, _ := json.Marshal(out["action"])
			details := detailsFor(t, action, true)
			out = post("/payments/details", `{"details":`+string(details)+`}`, 200)
		}
		if fmt.Sprint(steps) != "[IdentifyShopper ChallengeShopper]" || out["resultCode"] != "Authorised" {
			t.Fatalf("steps %v, result %v", steps, out)
		}
	})
	t.Run("redirect then details refused", func(t *testing.T) {
		out := post("/payments", card("4212345678901237", "Jo", 700), 200)
		action, _ := json.Marshal(out["action"])
		details := detailsFor(t, action, false)
		if r := post("/payments/details", `{"details":`+string(details)+`}`, 200); r["resultCode"] != "Refused" {
			t.Fatalf("details %v", r)
		}
	})
	t.Run("refused card", func(t *testing.T) {
		if r := post("/payments", card("4111111111111111", "DECLINED", 1000), 200); r["resultCode"] != "Refused" || r["refusalReason"] != "Refused" {
			t.Fatalf("payment %v", r)
		}
	})
	t.Run("amount update then capture of the new amount", func(t *testing.T) {
		preAuth := strings.Replace(card("4111111111111111", "Jo", 1000), `"returnUrl"`, `"additionalData":{"authorisationType":"PreAuth"},"returnUrl"`, 1)
		psp := post("/payments", preAuth, 200)["pspReference"].(string)
		post("/payments/"+psp+"/amount-updates", `{"pspReference":"`+psp+`","amount":{"value":1800,"currency":"EUR"}}`, 200)
		post("/payments/"+psp+"/captures", amount(1800), 200)
	})
	t.Run("stored-card charge validation and unknown payment", func(t *testing.T) {
		r := post("/payments", `{"amount":{"value":100,"currency":"EUR"},"returnUrl":"https://acme.example/return","shopperInteraction":"ContAuth",
			"shopperReference":"guest-1","paymentMethod":{"type":"scheme","storedPaymentMethodId":"X1"}}`, 400)
		if r["errorCode"] != "yp_2002" {
			t.Fatalf("%v", r)
		}
		if r := post("/payments/QQQQQQQQQQQQQQQQ/captures", amount(1), 404); r["errorCode"] != "yp_3006" {
			t.Fatalf("%v", r)
		}
	})
}
