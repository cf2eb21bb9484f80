package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/testenv"
	"github.com/yp/paysvc/shared/upstream/simulator"
)

// cardBody is a payments body for a plain card number and holder name.
func cardBody(number, cvc, holder string, value int) string {
	return fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"},"reference":"ord-%s","returnUrl":"https://shop.example/r",
		"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_%s","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_%s","holderName":%q}}`,
		value, number[len(number)-4:], number, cvc, holder)
}

// preAuth makes a payments body a pre-authorisation (its amount can be
// updated).
func preAuth(body string) string {
	return strings.Replace(body, `"returnUrl":`, `"additionalData":{"authorisationType":"PreAuth"},"returnUrl":`, 1)
}

type flow struct {
	t    *testing.T
	e    *testenv.Env
	site string
	key  string
}

func newFlow(t *testing.T) *flow {
	return &flow{t: t, e: testenv.New(t), site: testenv.SiteA, key: "A"}
}

func (f *flow) post(path, body string, wantStatus int) map[string]any {
	f.t.Helper()
	r := f.e.Do("POST", "/v1/ecom/"+f.site+path, f.key, body)
	if r.Status != wantStatus {
		f.t.Fatalf("POST %s: status %d, want %d: %s", path, r.Status, wantStatus, r.Body)
	}
	return r.JSON(f.t)
}

func (f *flow) pay(body string) map[string]any { return f.post("/payments", body, 200) }

// record is payment psp's head and the view of it.
func (f *flow) record(psp string) (payments.Head, payments.View) {
	f.t.Helper()
	h := record(f.t, f.e, psp)
	return h, h.View()
}

func (f *flow) simState(psp string) simulator.PaymentState {
	f.t.Helper()
	s, ok := f.e.Sim.Payment(psp)
	if !ok {
		f.t.Fatalf("simulator has no payment %s", psp)
	}
	return s
}

func amountBody(v int) string { return fmt.Sprintf(`{"amount":{"value":%d,"currency":"EUR"}}`, v) }

func TestFlowCaptureInPartsThenReversalRefunds(t *testing.T) {
	f := newFlow(t)
	out := f.pay(cardBody("4111111111111111", "737", "Jo Doe", 1000))
	psp := out["pspReference"].(string)
	if out["resultCode"] != "Authorised" || len(psp) != 16 {
		t.Fatalf("payment %v", out)
	}
	if p, v := f.record(psp); v.State != payments.StateAuthorised || v.Authorised != 1000 || p.MerchantID != testenv.MerchantA || p.SiteID != testenv.SiteA {
		t.Fatalf("record %+v, view %+v", p, v)
	}
	c1 := f.post("/payments/"+psp+"/captures", amountBody(400), 200)
	if c1["status"] != "received" || c1["pspReference"] == psp || c1["paymentPspReference"] != psp {
		t.Fatalf("capture %v", c1)
	}
	if p, v := f.record(psp); v.State != payments.StatePartiallyCaptured || v.Captured != 400 || inFlight(p) {
		t.Fatalf("after partial capture %+v, view %+v", p, v)
	}
	// Over the remaining 600: rejected before reaching the upstream.
	before := len(f.e.Upstream.Requests("/captures"))
	bad := f.post("/payments/"+psp+"/captures", amountBody(601), 400)
	if bad["errorCode"] != "yp_2002" || len(f.e.Upstream.Requests("/captures")) != before {
		t.Fatalf("over-capture %v", bad)
	}
	f.post("/payments/"+psp+"/captures", `{"amount":{"value":1,"currency":"USD"}}`, 400)
	f.post("/payments/"+psp+"/captures", amountBody(600), 200)
	if _, v := f.record(psp); v.State != payments.StateCaptured || v.Captured != 1000 {
		t.Fatalf("after full capture %+v", v)
	}
	// Capture splits follow the split profile for the captured amount.
	up := f.e.Upstream.Last(t, "/captures")
	if splits := up["splits"].([]any); len(splits) != 2 {
		t.Fatalf("capture splits %v", up["splits"])
	}
	rev := f.post("/payments/"+psp+"/reversals", `{"reference":"refund-1"}`, 200)
	if rev["status"] != "received" {
		t.Fatalf("reversal %v", rev)
	}
	// The service refunds what was captured, with its splits (the
	// platform's /reversals is not for payments with split data): in
	// flight until its REFUND.
	if len(f.e.Upstream.Requests("/reversals")) != 0 {
		t.Fatal("the platform's /reversals was called")
	}
	if up := f.e.Upstream.Last(t, "/refunds"); up["amount"].(map[string]any)["value"] != 1000.0 || len(up["splits"].([]any)) != 2 {
		t.Fatalf("refund sent %v", up)
	}
	if _, v := f.record(psp); v.State != payments.StateCaptured || v.RefundsInFlight != 1000 || v.Refundable != 0 {
		t.Fatalf("after reversal %+v", v)
	}
	f.e.Notify()
	if _, v := f.record(psp); v.State != payments.StateRefunded || v.Refunded != 1000 {
		t.Fatalf("after its REFUND %+v", v)
	}
	if s := f.simState(psp); s.State != simulator.StateRefunded || s.RefundedValue != 1000 {
		t.Fatalf("simulator state %+v", s)
	}
}

func TestFlowReversalBeforeCaptureCancels(t *testing.T) {
	f := newFlow(t)
	psp := f.pay(cardBody("5555555555554444", "737", "Jo", 2500))["pspReference"].(string)
	f.post("/payments/"+psp+"/reversals", `{}`, 200)
	if _, v := f.record(psp); v.State != payments.StateCancelled || v.Refunded != 0 {
		t.Fatalf("record %+v", v)
	}
	if s := f.simState(psp); s.State != simulator.StateCancelled {
		t.Fatalf("simulator state %+v", s)
	}
	// A cancelled payment can no longer be captured or reversed.
	f.post("/payments/"+psp+"/captures", amountBody(100), 400)
	f.post("/payments/"+psp+"/reversals", `{}`, 400)
}

func TestFlowThreeDS2ChallengeThenDetailsAuthorised(t *testing.T) {
	f := newFlow(t)
	out := f.pay(cardBody("5454545454545454", "737", "Jo", 1500))
	if out["resultCode"] != "ChallengeShopper" {
		t.Fatalf("payment %v", out)
	}
	action, _ := json.Marshal(out["action"])
	if a := out["action"].(map[string]any); a["type"] != "threeDS2" || a["subtype"] != "challenge" {
		t.Fatalf("action %s", action)
	}
	psp := out["pspReference"].(string)
	if _, v := f.record(psp); v.State != "ChallengeShopper" {
		t.Fatalf("record %+v", v)
	}
	details, err := simulator.DetailsFor(action, true)
	if err != nil {
		t.Fatal(err)
	}
	res := f.post("/payments/details", `{"details":`+string(details)+`}`, 200)
	if res["resultCode"] != "Authorised" || res["pspReference"] != psp {
		t.Fatalf("details %v", res)
	}
	if _, v := f.record(psp); v.State != payments.StateAuthorised || v.Authorised != 1500 {
		t.Fatalf("record after details %+v", v)
	}
}

func TestFlowRedirectThenDetailsRefused(t *testing.T) {
	f := newFlow(t)
	out := f.pay(cardBody("4212345678901237", "737", "Jo", 700))
	if out["resultCode"] != "RedirectShopper" {
		t.Fatalf("payment %v", out)
	}
	a := out["action"].(map[string]any)
	if a["type"] != "redirect" || a["url"] == nil || a["method"] != "GET" {
		t.Fatalf("action %v", a)
	}
	action, _ := json.Marshal(a)
	details, err := simulator.DetailsFor(action, false)
	if err != nil {
		t.Fatal(err)
	}
	res := f.post("/payments/details", `{"details":`+string(details)+`}`, 200)
	if res["resultCode"] != "Refused" {
		t.Fatalf("details %v", res)
	}
	if _, v := f.record(out["pspReference"].(string)); v.State != payments.StateRefused {
		t.Fatalf("record %+v", v)
	}
	// details is required and must be an object.
	f.post("/payments/details", `{"paymentData":"x"}`, 400)
	f.post("/payments/details", `{"details":"x"}`, 400)
}

func TestFlowRefusedCard(t *testing.T) {
	f := newFlow(t)
	out := f.pay(cardBody("4111111111111111", "737", "DECLINED", 1000))
	if out["resultCode"] != "Refused" || out["refusalReason"] != "Refused" {
		t.Fatalf("payment %v", out)
	}
	psp := out["pspReference"].(string)
	if _, v := f.record(psp); v.State != payments.StateRefused {
		t.Fatalf("record %+v", v)
	}
	f.post("/payments/"+psp+"/captures", amountBody(1000), 400)
}

func TestFlowForeignPaymentIsNotFound(t *testing.T) {
	f := newFlow(t)
	psp := f.pay(cardBody("4111111111111111", "737", "Jo", 1000))["pspReference"].(string)
	// Merchant B cannot see or touch merchant A's payment: 404 yp_3006, like an unknown one.
	other := &flow{t: t, e: f.e, site: testenv.SiteB, key: "B"}
	for _, op := range []struct{ path, body string }{
		{"/captures", amountBody(100)}, {"/reversals", `{}`},
		{"/amount-updates", `{"pspReference":"` + psp + `","amount":{"value":900,"currency":"EUR"}}`},
	} {
		if r := other.post("/payments/"+psp+op.path, op.body, 404); r["errorCode"] != "yp_3006" {
			t.Fatalf("%s: %v", op.path, r)
		}
	}
	// Nor can another site of the same merchant.
	sameMerchant := &flow{t: t, e: f.e, site: testenv.SiteAAdvanced, key: "A"}
	sameMerchant.post("/payments/"+psp+"/captures", amountBody(100), 404)
	if _, v := f.record(psp); v.Captured != 0 {
		t.Fatalf("foreign capture changed the record %+v", v)
	}
}

func TestFlowAmountUpdateThenCaptureNewAmount(t *testing.T) {
	f := newFlow(t)
	psp := f.pay(preAuth(cardBody("4111111111111111", "737", "Jo", 1000)))["pspReference"].(string)
	if p, _ := f.record(psp); p.AuthorisationType != payments.AuthorisationPreAuth {
		t.Fatalf("the pre-authorisation is not recorded: %+v", p)
	}
	upd := f.post("/payments/"+psp+"/amount-updates", `{"pspReference":"`+psp+`","amount":{"value":1500,"currency":"EUR"},"reference":"stay-ext"}`, 200)
	if upd["status"] != "received" {
		t.Fatalf("update %v", upd)
	}
	if _, v := f.record(psp); v.Authorised != 1500 {
		t.Fatalf("record %+v", v)
	}
	f.post("/payments/"+psp+"/captures", amountBody(1500), 200)
	if _, v := f.record(psp); v.State != payments.StateCaptured || v.Captured != 1500 {
		t.Fatalf("record %+v", v)
	}
	// A captured payment's amount cannot change.
	f.post("/payments/"+psp+"/amount-updates", `{"pspReference":"`+psp+`","amount":{"value":2000,"currency":"EUR"}}`, 400)
}

func TestFlowAutoCaptureMerchant(t *testing.T) {
	f := newFlow(t)
	f.site, f.key = testenv.SiteB, "B"
	psp := f.pay(cardBody("4111111111111111", "737", "Jo", 1000))["pspReference"].(string)
	if _, v := f.record(psp); v.State != payments.StateCaptured || v.Captured != 1000 {
		t.Fatalf("auto-capture record %+v", v)
	}
	f.post("/payments/"+psp+"/captures", amountBody(1), 400)
	f.post("/payments/"+psp+"/reversals", `{}`, 200)
	f.e.Notify() // the refund's REFUND
	if _, v := f.record(psp); v.State != payments.StateRefunded {
		t.Fatalf("record %+v", v)
	}
}

func TestFlowPaymentMethodsBlocksAlwaysBlocked(t *testing.T) {
	f := newFlow(t)
	out := f.post("/payment-methods", `{"amount":{"value":1000,"currency":"EUR"},"blockedPaymentMethods":["paypal"]}`, 200)
	types := map[string]bool{}
	for _, m := range out["paymentMethods"].([]any) {
		types[m.(map[string]any)["type"].(string)] = true
	}
	for _, blocked := range []string{"sepadirectdebit", "bacs", "directdebit_GB", "paypal"} {
		if types[blocked] {
			t.Errorf("%s offered", blocked)
		}
	}
	if !types["scheme"] {
		t.Errorf("cards not offered: %v", types)
	}
	if _, ok := out["storedPaymentMethods"].([]any); !ok {
		t.Errorf("storedPaymentMethods missing: %v", out)
	}
	if up := f.e.Upstream.Last(t, "/paymentMethods"); up["countryCode"] != "NL" || up["merchantAccount"] != "AlphaECOM" {
		t.Errorf("upstream request %v", up)
	}
	f.post("/payment-methods", `{"amount":{"value":1000,"currency":"EUR"},"merchantAccount":"X"}`, 400)
	f.post("/payment-methods", `{"amount":{"value":1000,"currency":"EUR"},"channel":"Fax"}`, 400)
}

func TestFlowUpstreamFailuresMapToEndpointCodes(t *testing.T) {
	f := newFlow(t)
	r := f.post("/payments", cardBody("4000000000000507", "737", "Jo", 1000), 500)
	if r["errorCode"] != "yp_4006" {
		t.Fatalf("payment 500: %v", r)
	}
	if f.e.Sim.PaymentCount() != 0 {
		t.Fatal("a failed payment was created")
	}
}

func TestFlowStoredCardChargeWithToken(t *testing.T) {
	f := newFlow(t)
	// A shopper-present payment that stores the card.
	first := f.pay(`{"amount":{"value":500,"currency":"EUR"},"returnUrl":"https://shop.example/r","shopperReference":"guest-123",
		"storePaymentMethod":true,"recurringProcessingModel":"UnscheduledCardOnFile","paymentMethod":` + card + `}`)
	if first["resultCode"] != "Authorised" {
		t.Fatalf("first payment %v", first)
	}
	tokens := f.e.Sim.StoredPaymentMethods("AlphaECOM", "guest-123")
	if len(tokens) != 1 {
		t.Fatalf("no token stored: %v", tokens)
	}
	// The merchant-initiated no-show charge.
	charge := fmt.Sprintf(`{"amount":{"value":8000,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"noshow-1",
		"paymentMethod":{"type":"scheme","storedPaymentMethodId":%q},%s}`, tokens[0], storedCharge)
	out := f.pay(charge)
	if out["resultCode"] != "Authorised" {
		t.Fatalf("stored-card charge %v", out)
	}
	up := f.e.Upstream.Last(t, "/payments")
	if up["shopperInteraction"] != "ContAuth" || up["recurringProcessingModel"] != "UnscheduledCardOnFile" || up["industryUsage"] != "noShow" {
		t.Fatalf("upstream request %v", up)
	}
	// An unknown token is the upstream's rejection: 400 with its message.
	bad := f.post("/payments", fmt.Sprintf(`{"amount":{"value":8000,"currency":"EUR"},"returnUrl":"https://shop.example/r",
		"paymentMethod":{"type":"scheme","storedPaymentMethodId":"NOPE"},%s}`, storedCharge), 400)
	if bad["errorCode"] != "yp_2002" {
		t.Fatalf("unknown token %v", bad)
	}
	// Deleting the token (extension).
	r := f.e.Do("DELETE", "/v1/ecom/"+f.site+"/stored-payment-methods/"+tokens[0]+"?shopperReference=guest-123", "A", "")
	if r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if left := f.e.Sim.StoredPaymentMethods("AlphaECOM", "guest-123"); len(left) != 0 {
		t.Fatalf("token not deleted: %v", left)
	}
	if r := f.e.Do("DELETE", "/v1/ecom/"+f.site+"/stored-payment-methods/"+tokens[0]+"?shopperReference=guest-123", "A", ""); r.Status != 404 {
		t.Fatalf("second delete: %d %s", r.Status, r.Body)
	}
}
