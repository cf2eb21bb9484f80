package simulator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/upstream"
)

func startAction(t *testing.T, e *env, number, holder string) upstream.PaymentResponse {
	t.Helper()
	cvc := "737"
	if tc, ok := lookupCard(number); ok {
		cvc = tc.CVC // a wrong CVC would refuse the payment
	}
	r, err := e.client.Payments(context.Background(), paymentReq(2500, cardMethod(number, cvc, holder)), "")
	must(t, err)
	if len(r.Action) == 0 {
		t.Fatalf("no action: %+v", r)
	}
	return r
}

func actionField(t *testing.T, action json.RawMessage, k string) string {
	t.Helper()
	var m map[string]string
	must(t, json.Unmarshal(action, &m))
	return m[k]
}

func TestDetailsCompletesActions(t *testing.T) {
	tests := []struct {
		name       string
		number     string
		holder     string
		success    bool
		withData   bool
		wantResult string
		wantReason string
	}{
		{"3DS2 challenge passed", "5454545454545454", "", true, false, "Authorised", ""},
		{"3DS2 challenge passed with paymentData", "4917610000000000", "", true, true, "Authorised", ""},
		{"3DS2 challenge failed", "371449635398431", "", false, false, "Refused", "3D Not Authenticated"},
		{"3DS2 then forced refusal", "5454545454545454", "DECLINED", true, false, "Refused", "Refused"},
		{"3DS2 then pending", "5454545454545454", "PENDING", true, false, "Received", ""},
		{"redirect passed", "4212345678901237", "", true, false, "Authorised", ""},
		{"redirect failed", "4212345678901237", "", false, true, "Refused", "Refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := startAction(t, e, tt.number, tt.holder)
			details, err := DetailsFor(r.Action, tt.success)
			must(t, err)
			req := upstream.DetailsRequest{Details: details}
			if tt.withData {
				req.PaymentData = actionField(t, r.Action, "paymentData")
			}
			d, err := e.client.PaymentDetails(context.Background(), req, "")
			must(t, err)
			if d.ResultCode != tt.wantResult || d.RefusalReason != tt.wantReason || d.PSPReference != r.PSPReference || d.MerchantReference != "order-1" || len(d.Action) != 0 {
				t.Fatalf("details = %+v", d)
			}
			e.flush(t)
			items := e.rec.items(t)
			if tt.wantResult == "Received" {
				if len(items) != 0 {
					t.Fatalf("notifications for a Received payment: %v", eventCodes(items))
				}
				return
			}
			if len(items) != 1 || items[0].EventCode != "AUTHORISATION" || items[0].Succeeded() != (tt.wantResult == "Authorised") || items[0].PSPReference != r.PSPReference {
				t.Fatalf("notifications = %+v", items)
			}
			// Submitting the same details again is rejected.
			_, err = e.client.PaymentDetails(context.Background(), req, "")
			if ue := apiErr(t, err); ue.HTTPStatus != 422 || ue.ErrorCode != codeInvalidPayload {
				t.Fatalf("second submit: %v", err)
			}
		})
	}
}

func TestDetailsKeywordResults(t *testing.T) {
	for value, want := range map[string]string{
		"password":            "Authorised",
		"Authorised":          "Authorised",
		"wrong":               "Refused",
		"refused":             "Refused",
		"password but failed": "Refused",
		"whatever":            "Refused",
	} {
		t.Run(value, func(t *testing.T) {
			e := newEnv(t)
			r := startAction(t, e, "5454545454545454", "")
			details, _ := json.Marshal(map[string]string{"threeDSResult": value})
			d, err := e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: details, PaymentData: actionField(t, r.Action, "paymentData")}, "")
			if err != nil || d.ResultCode != want {
				t.Fatalf("d = %+v, err = %v", d, err)
			}
		})
	}
}

func TestDetailsErrors(t *testing.T) {
	e := newEnv(t)
	r := startAction(t, e, "5454545454545454", "")
	other := startAction(t, e, "4917610000000000", "")
	good, _ := DetailsFor(r.Action, true)
	tests := map[string]upstream.DetailsRequest{
		"keyword, no open redirect":   {Details: json.RawMessage(`{"redirectResult":"authorised"}`)},
		"unknown paymentData":         {Details: json.RawMessage(`{"threeDSResult":"password"}`), PaymentData: "Ab02b4c0!nope"},
		"no result field":             {Details: json.RawMessage(`{"foo":"bar"}`)},
		"empty details":               {Details: json.RawMessage(`{}`)},
		"paymentData of other action": {Details: good, PaymentData: actionField(t, other.Action, "paymentData")},
		"unknown action id":           {Details: json.RawMessage(`{"redirectResult":"eyJhY3Rpb25JZCI6Im5vcGUiLCJyZXN1bHQiOiJhdXRob3Jpc2VkIn0"}`)},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := e.client.PaymentDetails(context.Background(), req, "")
			if ue := apiErr(t, err); ue.HTTPStatus != 422 {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, err := DetailsFor(json.RawMessage(`{"type":"sdk"}`), true); err == nil {
		t.Fatal("DetailsFor accepted an unsupported action")
	}
}

// A free-form threeDSResult without paymentData (README's hand-driven
// round trip) completes the most recent open 3DS action.
func TestDetailsKeywordCompletesLatestChallenge(t *testing.T) {
	e := newEnv(t)
	first := startAction(t, e, "5454545454545454", "")
	_ = startAction(t, e, "4917610000000000", "")
	d, err := e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: json.RawMessage(`{"threeDSResult":"password"}`)}, "")
	if err != nil || d.ResultCode != "Authorised" || d.PSPReference == first.PSPReference {
		t.Fatalf("d = %+v, err = %v", d, err)
	}
	d, err = e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: json.RawMessage(`{"threeDSResult":"wrong"}`)}, "")
	if err != nil || d.ResultCode != "Refused" || d.PSPReference != first.PSPReference {
		t.Fatalf("second: d = %+v, err = %v", d, err)
	}
	// A component's result without an action id ({"transStatus":"Y"}, the
	// sample event's value) completes the latest open action too.
	third := startAction(t, e, "371449635398431", "")
	d, err = e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: json.RawMessage(`{"threeDSResult":"eyJ0cmFuc1N0YXR1cyI6IlkifQ=="}`)}, "")
	if err != nil || d.ResultCode != "Authorised" || d.PSPReference != third.PSPReference {
		t.Fatalf("transStatus without id: d = %+v, err = %v", d, err)
	}
	_, err = e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: json.RawMessage(`{"threeDSResult":"password"}`)}, "")
	if ue := apiErr(t, err); ue.HTTPStatus != 422 || !strings.Contains(ue.Message, "no open action") {
		t.Fatalf("no open action left: err = %v", err)
	}
}

// The browser flow: the issuer page redirects to returnUrl with a
// redirectResult that /payments/details accepts.
func TestRedirectPageFlow(t *testing.T) {
	e := newEnv(t)
	r, err := e.client.Payments(context.Background(), paymentReq(990, json.RawMessage(`{"type":"ideal"}`)), "")
	must(t, err)
	page := actionField(t, r.Action, "url")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(page)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, err = noFollow.Get(page + "?result=authorised")
	must(t, err)
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.Host != "shop.example" || loc.Query().Get("order") != "1" {
		t.Fatalf("redirect: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	details, _ := json.Marshal(map[string]string{"redirectResult": loc.Query().Get("redirectResult")})
	d, err := e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: details}, "")
	if err != nil || d.ResultCode != "Authorised" || d.PaymentMethod.Type != "ideal" {
		t.Fatalf("d = %+v, err = %v", d, err)
	}
	if resp, _ := noFollow.Get(e.srv.URL + "/_sim/redirect/unknown"); resp.StatusCode != 404 {
		t.Fatalf("unknown action page: %d", resp.StatusCode)
	}
}

func TestExpireOffers(t *testing.T) {
	e := newEnv(t)
	r := startAction(t, e, "5454545454545454", "")
	done := e.pay(t, 100, "")
	if got := e.sim.ExpireOffers(); len(got) != 0 {
		t.Fatalf("closed too early: %v", got)
	}
	e.clock.Advance(12 * time.Hour)
	if got := e.sim.ExpireOffers(); len(got) != 1 || got[0] != r.PSPReference {
		t.Fatalf("closed = %v", got)
	}
	p, _ := e.sim.Payment(r.PSPReference)
	if p.State != StateOfferClosed {
		t.Fatalf("state = %s", p.State)
	}
	if q, _ := e.sim.Payment(done.PSPReference); q.State != StateAuthorised {
		t.Fatalf("authorised payment closed: %s", q.State)
	}
	e.flush(t)
	items := e.rec.items(t)
	if last := items[len(items)-1]; last.EventCode != "OFFER_CLOSED" || last.PSPReference != r.PSPReference || !upstream.VerifyItem(testHMACKey, last) {
		t.Fatalf("last notification = %+v", last)
	}
	details, _ := DetailsFor(r.Action, true)
	if _, err := e.client.PaymentDetails(context.Background(), upstream.DetailsRequest{Details: details}, ""); err == nil {
		t.Fatal("details accepted after OFFER_CLOSED")
	}
}

func TestResolvePending(t *testing.T) {
	e := newEnv(t)
	r := e.pay(t, 700, "PENDING")
	if r.ResultCode != "Received" {
		t.Fatalf("r = %+v", r)
	}
	r2 := e.pay(t, 700, "RESULT_PENDING")
	if r2.ResultCode != "Pending" {
		t.Fatalf("r2 = %+v", r2)
	}
	must(t, e.sim.ResolvePending(r.PSPReference, true))
	// Through the hook.
	status, body, _ := e.raw(t, "POST", "/_sim/payments/"+r2.PSPReference+"/resolve?result=refused", testAPIKey, "", "")
	if status != 200 || !strings.Contains(string(body), `"state":"Refused"`) {
		t.Fatalf("hook: %d %s", status, body)
	}
	if err := e.sim.ResolvePending(r.PSPReference, true); err != ErrNotPending {
		t.Fatalf("second resolve: %v", err)
	}
	if err := e.sim.ResolvePending("NOPE", true); err != ErrPaymentNotFound {
		t.Fatalf("unknown: %v", err)
	}
	e.flush(t)
	items := e.rec.items(t)
	if len(items) != 2 || !items[0].Succeeded() || items[1].Succeeded() || items[1].Reason != "Refused" {
		t.Fatalf("items = %+v", items)
	}
}
