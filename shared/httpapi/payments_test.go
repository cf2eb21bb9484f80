package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testenv"
)

const card = `{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}`

// payBody is a valid payments body with extra top-level fields (raw JSON, may be empty).
func payBody(extra string) string {
	b := `{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":` + card + `,"returnUrl":"https://shop.example/r"`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

const storedCharge = `"shopperInteraction":"ContAuth","shopperReference":"guest-123","recurringProcessingModel":"UnscheduledCardOnFile","industryUsage":"noShow"`

func TestPaymentValidation(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/payments"
	bad := func(name, body, field string) errCase {
		return errCase{name: name, method: "POST", path: path, key: "A", body: body, status: 400, code: "yp_2002", field: field}
	}
	stored := `{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":{"type":"scheme","storedPaymentMethodId":"8415"},"returnUrl":"https://shop.example/r",`
	runErrCases(t, e, []errCase{
		bad("paymentMethod missing", `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "paymentMethod"),
		bad("paymentMethod not object", `{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":"card","returnUrl":"https://shop.example/r"}`, "paymentMethod"),
		bad("paymentMethod without type", `{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":{"number":"4111"},"returnUrl":"https://shop.example/r"}`, "paymentMethod.type"),
		bad("amount zero", `{"amount":{"value":0,"currency":"EUR"},"paymentMethod":`+card+`,"returnUrl":"https://shop.example/r"}`, "amount.value"),
		bad("returnUrl missing", `{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":`+card+`}`, "returnUrl"),
		bad("reference too long", payBody(`"reference":"`+strings.Repeat("r", 81)+`"`), "reference"),
		bad("countryCode forbidden", payBody(`"countryCode":"US"`), "countryCode"),
		bad("merchantAccount forbidden", payBody(`"merchantAccount":"X"`), "merchantAccount"),
		bad("splits forbidden", payBody(`"splits":[]`), "splits"),
		bad("metadata forbidden", payBody(`"metadata":{}`), "metadata"),
		bad("additionalData number", payBody(`"additionalData":{"authorisationType":1}`), "additionalData.authorisationType"),
		bad("additionalData metadata key", payBody(`"additionalData":{"metadata.site":"x"}`), "additionalData.metadata.site"),
		bad("additionalData tokenization key", payBody(`"additionalData":{"tokenization.storedPaymentMethodId":"x"}`), "additionalData.tokenization.storedPaymentMethodId"),
		bad("additionalData recurring key", payBody(`"additionalData":{"recurring.contract":"x"}`), "additionalData.recurring.contract"),
		bad("shopperReference with @", payBody(`"shopperReference":"a@b"`), "shopperReference"),
		bad("shopperInteraction Moto", payBody(`"shopperInteraction":"Moto"`), "shopperInteraction"),
		bad("unknown field", payBody(`"deviceFingerprint":"x"`), "deviceFingerprint"),
		bad("browserInfo not object", payBody(`"browserInfo":"x"`), "browserInfo"),
		bad("channel invalid", payBody(`"channel":"Fax"`), "channel"),
		bad("shopperIP invalid", payBody(`"shopperIP":"not-an-ip"`), "shopperIP"),
		bad("origin relative", payBody(`"origin":"/x"`), "origin"),
		bad("lineItems description", payBody(`"lineItems":[{"quantity":1,"description":"`+strings.Repeat("d", 128)+`"}]`), "lineItems[0].description"),
		bad("storePaymentMethod without shopperReference", payBody(`"storePaymentMethod":true`), "shopperReference"),
		// Rules the platform enforces with an opaque 422, refused before the call.
		bad("storePaymentMethod without recurringProcessingModel", payBody(`"storePaymentMethod":true,"shopperReference":"guest-123"`), "recurringProcessingModel"),
		bad("shopperName without lastName", payBody(`"shopperName":{"firstName":"Jo"}`), "shopperName.lastName"),
		bad("shopperName without firstName", payBody(`"shopperName":{"lastName":"Doe"}`), "shopperName.firstName"),
		bad("shopperName empty lastName", payBody(`"shopperName":{"firstName":"Jo","lastName":""}`), "shopperName.lastName"),
		bad("authorisationType unknown", payBody(`"additionalData":{"authorisationType":"PreAuthorisation"}`), "additionalData.authorisationType"),
		bad("stored id without shopperReference", stored+`"recurringProcessingModel":"CardOnFile"}`, "shopperReference"),
		bad("ContAuth without shopperReference", stored+`"shopperInteraction":"ContAuth","recurringProcessingModel":"UnscheduledCardOnFile","industryUsage":"noShow"}`, "shopperReference"),
		bad("ContAuth without model", stored+`"shopperInteraction":"ContAuth","shopperReference":"guest-123","industryUsage":"noShow"}`, "recurringProcessingModel"),
		bad("ContAuth wrong model", stored+`"shopperInteraction":"ContAuth","shopperReference":"guest-123","recurringProcessingModel":"Subscription","industryUsage":"noShow"}`, "recurringProcessingModel"),
		bad("ContAuth without industryUsage", stored+`"shopperInteraction":"ContAuth","shopperReference":"guest-123","recurringProcessingModel":"UnscheduledCardOnFile"}`, "industryUsage"),
		bad("ContAuth wrong industryUsage", stored+`"shopperInteraction":"ContAuth","shopperReference":"guest-123","recurringProcessingModel":"UnscheduledCardOnFile","industryUsage":"delayedCharge"}`, "industryUsage"),
		bad("ContAuth without stored id", payBody(storedCharge), "paymentMethod.storedPaymentMethodId"),
		{name: "cross tenant", method: "POST", path: "/v1/ecom/" + testenv.SiteB + "/payments", key: "A", body: payBody(""), status: 404, code: "yp_3004"},
		{name: "no permission", method: "POST", path: path, key: "AConfigOnly", body: payBody(""), status: 403, code: "yp_1002"},
		{name: "not ecommerce", method: "POST", path: "/v1/ecom/" + testenv.SiteNotEcom + "/payments", key: "NotEcom", body: payBody(""), status: 422, code: "yp_5003"},
	})
	if n := len(e.Upstream.Requests("/payments")); n != 0 {
		t.Fatalf("%d invalid payments reached the upstream", n)
	}
}

func TestPaymentAddsServiceFieldsAndPassesStateData(t *testing.T) {
	e := testenv.New(t)
	body := payBody(`"reference":"order-9","browserInfo":{"userAgent":"UA","acceptHeader":"*/*"},"origin":"https://shop.example","channel":"Web",
		"shopperEmail":"jo@example.com","shopperIP":"192.0.2.1","clientStateDataIndicator":true,"additionalData":{"authorisationType":"PreAuth"},
		"billingAddress":{"city":"Amsterdam","country":"NL"}`)
	r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/payments", "A", body)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	out := r.JSON(t)
	if out["resultCode"] != "Authorised" || out["pspReference"] == nil {
		t.Fatalf("response %s", r.Body)
	}
	up := e.Upstream.Last(t, "/payments")
	checks := map[string]any{
		"merchantAccount": "AlphaECOM", "countryCode": "NL", "shopperInteraction": "Ecommerce", "reference": "order-9",
		"origin": "https://shop.example", "channel": "Web", "shopperIP": "192.0.2.1", "clientStateDataIndicator": true,
	}
	for k, want := range checks {
		if up[k] != want {
			t.Errorf("upstream %s = %v, want %v", k, up[k], want)
		}
	}
	if fmt.Sprint(up["browserInfo"]) != "map[acceptHeader:*/* userAgent:UA]" || up["paymentMethod"].(map[string]any)["encryptedCardNumber"] != "test_4111111111111111" {
		t.Errorf("state data not passed unchanged: %v", up)
	}
	if up["additionalData"].(map[string]any)["authorisationType"] != "PreAuth" {
		t.Error("additionalData not passed")
	}
	if up["metadata"].(map[string]any)["siteId"] != testenv.SiteA {
		t.Error("no routing metadata")
	}
	if len(up["splits"].([]any)) != 2 {
		t.Error("no splits")
	}
}

// An amount update applies only to a pre-authorisation
// (additionalData.authorisationType PreAuth, recorded on the payment):
// another payment's is refused with 400 naming pspReference, before the
// upstream is called.
func TestAmountUpdateOnlyForPreAuthorisations(t *testing.T) {
	e := testenv.New(t)
	base := "/v1/ecom/" + testenv.SiteA + "/payments"
	pay := func(extra string) string {
		r := e.Do("POST", base, "A", payBody(extra))
		if r.Status != 200 {
			t.Fatalf("payment: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["pspReference"].(string)
	}
	update := func(psp string) testenv.Response {
		return e.Do("POST", base+"/"+psp+"/amount-updates", "A", `{"pspReference":"`+psp+`","amount":{"value":1500,"currency":"EUR"}}`)
	}
	for _, extra := range []string{"", `"additionalData":{"authorisationType":"FinalAuth"}`} {
		psp := pay(extra)
		r := update(psp)
		out := r.JSON(t)
		if r.Status != 400 || out["errorCode"] != "yp_2002" || !strings.Contains(string(r.Body), `"field":"pspReference"`) ||
			!strings.Contains(out["message"].(string), "pre-authorisation") {
			t.Fatalf("amount update of a payment that is not a pre-authorisation (%s): %d %s", extra, r.Status, r.Body)
		}
	}
	if n := len(e.Upstream.Requests("/amountUpdates")); n != 0 {
		t.Fatalf("%d refused amount updates reached the upstream", n)
	}
	psp := pay(`"additionalData":{"authorisationType":"PreAuth"}`)
	if rec := record(t, e, psp); rec.AuthorisationType != payments.AuthorisationPreAuth {
		t.Fatalf("pre-authorisation not recorded: %+v", rec)
	}
	if r := update(psp); r.Status != 200 {
		t.Fatalf("amount update of a pre-authorisation: %d %s", r.Status, r.Body)
	}
}

func TestModificationValidation(t *testing.T) {
	e := testenv.New(t)
	base := "/v1/ecom/" + testenv.SiteA + "/payments/"
	bad := func(name, path, body, field string) errCase {
		return errCase{name: name, method: "POST", path: base + path, key: "A", body: body, status: 400, code: "yp_2002", field: field}
	}
	runErrCases(t, e, []errCase{
		bad("capture amount missing", "PSP1/captures", `{}`, "amount"),
		bad("capture reference too long", "PSP1/captures", `{"amount":{"value":1,"currency":"EUR"},"reference":"`+strings.Repeat("r", 81)+`"}`, "reference"),
		bad("capture unknown field", "PSP1/captures", `{"amount":{"value":1,"currency":"EUR"},"splits":[]}`, "splits"),
		bad("reversal unknown field", "PSP1/reversals", `{"amount":{"value":1,"currency":"EUR"}}`, "amount"),
		bad("amount update psp mismatch", "PSP1/amount-updates", `{"pspReference":"PSP2","amount":{"value":1,"currency":"EUR"}}`, "pspReference"),
		bad("amount update psp missing", "PSP1/amount-updates", `{"amount":{"value":1,"currency":"EUR"}}`, "pspReference"),
		{name: "capture of a pending record key", method: "POST", path: base + payments.PendingKey(testenv.MerchantA, testenv.SiteA, "x") + "/captures", key: "A", body: `{"amount":{"value":1,"currency":"EUR"}}`, status: 404, code: "yp_3006"},
		{name: "capture unknown payment", method: "POST", path: base + "PSPUNKNOWN/captures", key: "A", body: `{"amount":{"value":1,"currency":"EUR"}}`, status: 404, code: "yp_3006"},
		{name: "reversal unknown payment", method: "POST", path: base + "PSPUNKNOWN/reversals", key: "A", body: `{}`, status: 404, code: "yp_3006"},
		{name: "amount update unknown payment", method: "POST", path: base + "PSPUNKNOWN/amount-updates", key: "A", body: `{"pspReference":"PSPUNKNOWN","amount":{"value":1,"currency":"EUR"}}`, status: 404, code: "yp_3006"},
		{name: "capture without permission", method: "POST", path: base + "PSP1/captures", key: "AConfigOnly", body: `{"amount":{"value":1,"currency":"EUR"}}`, status: 403, code: "yp_1002"},
	})
}
