package simulator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/upstream"
)

func nativeReq(number string) upstream.PaymentRequest {
	req := paymentReq(1000, cardMethod(number, "737", ""))
	req.Extra = map[string]json.RawMessage{"authenticationData": json.RawMessage(`{"threeDSRequestData":{"nativeThreeDS":"preferred"}}`)}
	return req
}

func actionOf(t *testing.T, raw json.RawMessage) map[string]string {
	t.Helper()
	var a map[string]string
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("action %s: %v", raw, err)
	}
	return a
}

func (e *env) details(t *testing.T, action json.RawMessage, success bool) upstream.PaymentResponse {
	t.Helper()
	d, err := DetailsFor(action, success)
	must(t, err)
	r, err := e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: d}, "")
	must(t, err)
	return r
}

// 3-D Secure 2 on the web with the platform's answer shapes.
func TestWebThreeDS2PublishedShapes(t *testing.T) {
	platform := func(o *Options) { o.WebThreeDS2, o.PublishedShapes = true, true }
	t.Run("native challenge: fingerprint, challenge, result", func(t *testing.T) {
		e := newEnv(t, platform)
		r, err := e.client.Payments(context.Background(), nativeReq("5454545454545454"), "")
		if err != nil || r.ResultCode != "IdentifyShopper" || r.PSPReference != "" || r.Amount != nil || r.MerchantReference != "" {
			t.Fatalf("payments: %+v, %v", r, err)
		}
		if a := actionOf(t, r.Action); a["type"] != "threeDS2" || a["subtype"] != "fingerprint" || a["token"] == "" {
			t.Fatalf("action = %s", r.Action)
		}
		r = e.details(t, r.Action, true)
		if r.ResultCode != "ChallengeShopper" || r.PSPReference != "" {
			t.Fatalf("after fingerprint: %+v", r)
		}
		if a := actionOf(t, r.Action); a["type"] != "threeDS2" || a["subtype"] != "challenge" {
			t.Fatalf("action = %s", r.Action)
		}
		r = e.details(t, r.Action, true)
		if r.ResultCode != "Authorised" || r.PSPReference == "" || r.Amount != nil || r.MerchantReference != "" || r.Action != nil {
			t.Fatalf("result: %+v", r)
		}
		e.flush(t)
		if items := e.rec.items(t); len(items) != 1 || items[0].EventCode != "AUTHORISATION" || items[0].PSPReference != r.PSPReference || items[0].Amount.Value != 1000 {
			t.Fatalf("notifications = %+v", items)
		}
	})
	t.Run("native challenge failed", func(t *testing.T) {
		e := newEnv(t, platform)
		r, _ := e.client.Payments(context.Background(), nativeReq("4917610000000000"), "")
		r = e.details(t, e.details(t, r.Action, true).Action, false)
		if r.ResultCode != "Refused" || r.RefusalReason != "3D Not Authenticated" {
			t.Fatalf("result: %+v", r)
		}
	})
	t.Run("native frictionless: fingerprint, result", func(t *testing.T) {
		e := newEnv(t, platform)
		r, _ := e.client.Payments(context.Background(), nativeReq("5201281505129736"), "")
		if r.ResultCode != "IdentifyShopper" {
			t.Fatalf("payments: %+v", r)
		}
		if r = e.details(t, r.Action, true); r.ResultCode != "Authorised" || r.Action != nil {
			t.Fatalf("after fingerprint: %+v", r)
		}
	})
	t.Run("without nativeThreeDS: a redirect", func(t *testing.T) {
		for _, number := range []string{"5454545454545454", "5201281505129736"} {
			e := newEnv(t, platform)
			r, err := e.client.Payments(context.Background(), paymentReq(1000, cardMethod(number, "737", "")), "")
			if err != nil || r.ResultCode != "RedirectShopper" || r.PSPReference != "" {
				t.Fatalf("payments: %+v, %v", r, err)
			}
			if a := actionOf(t, r.Action); a["type"] != "redirect" || !strings.Contains(a["url"], "/_sim/redirect/") {
				t.Fatalf("action = %s", r.Action)
			}
			if r = e.details(t, r.Action, true); r.ResultCode != "Authorised" {
				t.Fatalf("result: %+v", r)
			}
		}
		e := newEnv(t, platform)
		r, _ := e.client.Payments(context.Background(), paymentReq(1000, cardMethod("5454545454545454", "737", "")), "")
		if r = e.details(t, r.Action, false); r.ResultCode != "Refused" || r.RefusalReason != "3D Not Authenticated" {
			t.Fatalf("failed 3DS redirect: %+v", r)
		}
	})
	t.Run("defaults keep today's answers", func(t *testing.T) {
		e := newEnv(t)
		r, _ := e.client.Payments(context.Background(), nativeReq("5454545454545454"), "")
		if r.ResultCode != "ChallengeShopper" || r.PSPReference == "" || r.Amount == nil {
			t.Fatalf("payments: %+v", r)
		}
	})
}

// Every row with a code, by RequestedTestAcquirerResponseCode: as a number
// (the platform's example), as a string and as the response name (the
// platform's older result-code page).
func TestRequestedTestAcquirerResponseCode(t *testing.T) {
	e := newEnv(t)
	for _, o := range HolderNameOutcomes() {
		if o.AcquirerResponseCode == "" {
			continue
		}
		for _, code := range []string{o.AcquirerResponseCode, `"` + o.AcquirerResponseCode + `"`, `"` + strings.ToLower(o.HolderName) + `"`} {
			body := `{"merchantAccount":"` + testMerchant + `","amount":{"value":100,"currency":"EUR"},"reference":"r","returnUrl":"https://x.example/",
			"paymentMethod":{"type":"scheme","number":"4111111111111111","expiryMonth":"03","expiryYear":"2030","cvc":"737"},
			"additionalData":{"RequestedTestAcquirerResponseCode":` + code + `}}`
			status, b, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "", body)
			var r upstream.PaymentResponse
			_ = json.Unmarshal(b, &r)
			if status != 200 || r.ResultCode != o.ResultCode || r.RefusalReason != o.RefusalReason || r.RefusalReasonCode != o.RefusalReasonCode {
				t.Fatalf("code %s: %d %s, want %s / %s (%s)", code, status, b, o.ResultCode, o.RefusalReason, o.RefusalReasonCode)
			}
		}
	}
	// An unknown code changes nothing.
	status, b, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "", `{"merchantAccount":"`+testMerchant+`","amount":{"value":100,"currency":"EUR"},"reference":"r","returnUrl":"https://x.example/",
		"paymentMethod":{"type":"scheme","number":"4111111111111111","expiryMonth":"03","expiryYear":"2030","cvc":"737"},"additionalData":{"RequestedTestAcquirerResponseCode":"999"}}`)
	if status != 200 || !strings.Contains(string(b), `"resultCode":"Authorised"`) {
		t.Fatalf("unknown code: %d %s", status, b)
	}
}

func TestPlatformRules(t *testing.T) {
	rules := func(o *Options) { o.PlatformRules = true }
	base := `"merchantAccount":"` + testMerchant + `","amount":{"value":100,"currency":"EUR"},"reference":"r","returnUrl":"https://x.example/"`
	card := `"paymentMethod":{"type":"scheme","number":"4111111111111111","expiryMonth":"03","expiryYear":"2030","cvc":"737"}`
	tests := []struct {
		name, path, body string
		wantMsg          string
	}{
		{"payment shopperName without lastName", "/v71/payments", `{` + base + `,` + card + `,"shopperName":{"firstName":"Jane"}}`, "shopperName.lastName"},
		{"payment shopperName without firstName", "/v71/payments", `{` + base + `,` + card + `,"shopperName":{"lastName":"Doe"}}`, "shopperName.firstName"},
		{"payment storing without model", "/v71/payments", `{` + base + `,` + card + `,"shopperReference":"s","storePaymentMethod":true}`, "recurringProcessingModel"},
		{"session storing without model", "/v71/sessions", `{` + base + `,"shopperReference":"s","storePaymentMethodMode":"enabled"}`, "recurringProcessingModel"},
		{"session shopperName", "/v71/sessions", `{` + base + `,"shopperName":{"firstName":"Jane"}}`, "shopperName.lastName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, on := range []bool{true, false} {
				e := newEnv(t)
				if on {
					e = newEnv(t, rules)
				}
				status, b, _ := e.raw(t, "POST", tt.path, testAPIKey, "", tt.body)
				if on && (status != 422 || !strings.Contains(string(b), tt.wantMsg)) {
					t.Fatalf("rules on: %d %s", status, b)
				}
				if !on && status >= 400 {
					t.Fatalf("rules off: %d %s", status, b)
				}
			}
		})
	}
	t.Run("amount update needs a pre-authorisation", func(t *testing.T) {
		e := newEnv(t, rules)
		plain := e.pay(t, 1000, "")
		if _, err := e.client.UpdateAmount(context.Background(), plain.PSPReference, upstream.AmountUpdateRequest{MerchantAccount: testMerchant, Amount: eur(1500)}, ""); apiErr(t, err).HTTPStatus != 422 {
			t.Fatalf("err = %v", err)
		}
		req := paymentReq(1000, cardMethod("4111111111111111", "737", ""))
		req.AdditionalData = map[string]string{"authorisationType": "PreAuth"}
		pre, err := e.client.Payments(context.Background(), req, "")
		must(t, err)
		if _, err := e.client.UpdateAmount(context.Background(), pre.PSPReference, upstream.AmountUpdateRequest{MerchantAccount: testMerchant, Amount: eur(1500)}, ""); err != nil {
			t.Fatalf("pre-authorisation: %v", err)
		}
	})
}

// Every endpoint fails on demand, with a 500 or by holding the request.
func TestFailNext(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.HangTimeout = 100 * time.Millisecond })
	for _, ep := range Endpoints {
		must(t, e.sim.FailNext(ep, FailHTTP500))
	}
	paths := map[string]string{
		"sessions": "POST /v71/sessions", "paymentMethods": "POST /v71/paymentMethods", "payments": "POST /v71/payments",
		"payments/details": "POST /v71/payments/details", "captures": "POST /v71/payments/P/captures",
		"reversals": "POST /v71/payments/P/reversals", "cancels": "POST /v71/payments/P/cancels", "amountUpdates": "POST /v71/payments/P/amountUpdates", "refunds": "POST /v71/payments/P/refunds",
		"storedPaymentMethods": "DELETE /v71/storedPaymentMethods/X?merchantAccount=" + testMerchant + "&shopperReference=s",
	}
	for _, ep := range Endpoints {
		method, path, _ := strings.Cut(paths[ep], " ")
		if status, b, _ := e.raw(t, method, path, testAPIKey, "", `{}`); status != 500 || !strings.Contains(string(b), `"errorType"`) {
			t.Errorf("%s: %d %s", ep, status, b)
		}
		// The next request is not failed (here: a plain validation error).
		if status, _, _ := e.raw(t, method, path, testAPIKey, "", `{}`); status == 500 {
			t.Errorf("%s failed twice", ep)
		}
	}
	e.wantPayments(t, 0)
	must(t, e.sim.FailNext("payments", FailTimeout))
	// Held (until the client gives up, or HangTimeout: nothing is read
	// of a request failed this way, so the server does not see its client
	// leave), then answered 500; processed never.
	err := e.abandonHeld(t, "payments", func(ctx context.Context) error {
		_, err := e.client.Payments(ctx, paymentReq(100, cardMethod("4111111111111111", "737", "")), "")
		return err
	}, nil)
	if !upstream.IsUnavailable(err) {
		t.Fatalf("timeout: err = %v", err)
	}
	e.wantPayments(t, 0, "after a held request")
	if e.sim.FailNext("nope", FailHTTP500) == nil || e.sim.FailNext("payments", "teapot") == nil {
		t.Fatal("FailNext accepted an unknown endpoint or failure")
	}
	status, _, _ := e.raw(t, "POST", "/_sim/fail?endpoint=captures&failure=timeout", testAPIKey, "", "")
	if status != 200 {
		t.Fatalf("/_sim/fail: %d", status)
	}
}

// Modification notifications carry no metadata.
func TestModificationNotificationsWithoutMetadata(t *testing.T) {
	e := newEnv(t)
	r := e.pay(t, 1000, "capture failed")
	must(t, e.capture(r.PSPReference, 500))
	must(t, e.reverse(r.PSPReference))
	e.flush(t)
	for _, it := range e.rec.items(t) {
		for k := range it.AdditionalData {
			if it.EventCode != "AUTHORISATION" && strings.HasPrefix(k, "metadata.") {
				t.Errorf("%s carries %s", it.EventCode, k)
			}
		}
		if it.EventCode != "AUTHORISATION" && it.OriginalReference != r.PSPReference {
			t.Errorf("%s: originalReference %q", it.EventCode, it.OriginalReference)
		}
	}
}
