package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/httpapi"
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

// An Idempotency-Key header sent empty is a 400 naming the header — never
// treated as absent (which would run the request unprotected). Sent twice:
// TestRepeatedHeadersRefused.
func TestIdempotencyKeyHeaderEmpty(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/payments"
	runErrCases(t, e, []errCase{
		{name: "empty", method: "POST", path: path, key: "A", body: payBody(""),
			headers: []string{"Idempotency-Key", ""}, status: 400, code: "yp_2002", field: "Idempotency-Key"},
	})
	if n := len(e.Upstream.Requests("/payments")); n != 0 {
		t.Fatalf("the upstream was called %d times", n)
	}
}

// Paths ServeMux would clean get the API's JSON 404 with an X-Request-Id,
// never a redirect.
func TestUncleanPathsAreJSONNotFound(t *testing.T) {
	e := testenv.New(t)
	for _, p := range []string{
		"/v1/ecom//config",
		"/v1/ecom/../ecom/config",
		"/v1/ecom/./config",
		"/v1/ecom/" + testenv.SiteA + "/payments/../sessions",
		"/v1/ecom/%2e%2e/config",
		"//v1/ecom/config",
		"/v1/ecom/config/..",
		"/v1/ecom/config/.",
	} {
		for _, method := range []string{"GET", "POST"} {
			t.Run(method+" "+p, func(t *testing.T) {
				req := httptest.NewRequest(method, "http://svc"+p, nil)
				req.Header.Set("Authorization", "Bearer "+e.Keys["A"])
				w := httptest.NewRecorder()
				e.Handler.ServeHTTP(w, req)
				if w.Code != 404 || !strings.Contains(w.Body.String(), `"errorCode":"yp_9004"`) {
					t.Fatalf("%s %s = %d %q, want 404 yp_9004", method, p, w.Code, w.Body)
				}
				if w.Header().Get("Location") != "" || w.Header().Get("X-Request-Id") == "" || w.Header().Get("Content-Type") != "application/json" {
					t.Fatalf("headers %v", w.Header())
				}
			})
		}
	}
}

// The notifications endpoint's handler passes every other path, unclean ones
// included, to the API handler instead of redirecting.
func TestNotificationsHandlerPassesUncleanPaths(t *testing.T) {
	e := newNotifyEnv(t, otherKey, httpapi.BasicAuth{})
	for _, p := range []string{"/v1/notifications//upstream", "/v1/notifications/../notifications/upstream", "//v1/ecom/config"} {
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "http://svc"+p, strings.NewReader("{}")))
		if w.Code != http.StatusTeapot {
			t.Errorf("%s: %d, want the API handler's answer", p, w.Code)
		}
	}
}

// A notification with a name given twice in one object is refused, naming
// it, before anything is stored: the signed value and the used value could
// otherwise differ.
func TestNotificationDuplicateKeysRefused(t *testing.T) {
	e := newNotifyEnv(t, otherKey, httpapi.BasicAuth{})
	it := signedItem(t, otherKey, authItem("PSP0000000000077", "order-77"))
	raw, err := json.Marshal(wrap(it))
	if err != nil {
		t.Fatal(err)
	}
	// The amount the HMAC covers first, then a second, larger one.
	body := strings.Replace(string(raw), `"amount":{"value":1000,"currency":"EUR"}`,
		`"amount":{"value":1000,"currency":"EUR"},"amount":{"value":99999,"currency":"EUR"}`, 1)
	if body == string(raw) {
		t.Fatalf("fixture has no amount: %s", raw)
	}
	req := httptest.NewRequest(http.MethodPost, httpapi.NotificationsPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"field":"notificationItems[0].NotificationRequestItem.amount"`) {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if e.stored(it) {
		t.Fatal("the ambiguous notification was stored")
	}
}

// Every endpoint that takes a body refuses duplicate names at any depth with
// 400 yp_2002 naming the field, before the upstream is called.
func TestDuplicateKeysRefusedOnEveryEndpoint(t *testing.T) {
	e := testenv.New(t)
	site := "/v1/ecom/" + testenv.SiteA
	dupAmount := `"amount":{"value":1,"currency":"EUR"},"amount":{"value":99999,"currency":"EUR"}`
	bad := func(name, path, body, field string) errCase {
		return errCase{name: name, method: "POST", path: path, key: "A", body: body, status: 400, code: "yp_2002", field: field}
	}
	runErrCases(t, e, []errCase{
		bad("sessions", site+"/sessions", `{`+dupAmount+`,"returnUrl":"https://shop.example/r"}`, "amount"),
		bad("payment-methods", site+"/payment-methods", `{"amount":{"value":1,"value":2,"currency":"EUR"}}`, "amount.value"),
		bad("payments", site+"/payments", `{`+dupAmount+`,"paymentMethod":`+card+`,"returnUrl":"https://shop.example/r"}`, "amount"),
		bad("payments pass-through", site+"/payments", payBody(`"browserInfo":{"language":"en","language":"de"}`), "browserInfo.language"),
		bad("payments line item", site+"/payments", payBody(`"lineItems":[{"quantity":1},{"quantity":1,"quantity":9}]`), "lineItems[1].quantity"),
		bad("details", site+"/payments/details", `{"details":{"threeDSResult":"a","threeDSResult":"b"}}`, "details.threeDSResult"),
		bad("captures", site+"/payments/PSP0000000000001/captures", `{`+dupAmount+`}`, "amount"),
		bad("reversals", site+"/payments/PSP0000000000001/reversals", `{"reference":"a","reference":"b"}`, "reference"),
		bad("amount-updates", site+"/payments/PSP0000000000001/amount-updates", `{`+dupAmount+`}`, "amount"),
	})
	for _, p := range []string{"/sessions", "/paymentMethods", "/payments", "/payments/details"} {
		if n := len(e.Upstream.Requests(p)); n != 0 {
			t.Errorf("upstream %s called %d times", p, n)
		}
	}
}

// Names the service sets are refused in any letter case.
func TestServerControlledNamesAnyCase(t *testing.T) {
	e := testenv.New(t)
	site := "/v1/ecom/" + testenv.SiteA
	bad := func(name, path, body, field string) errCase {
		return errCase{name: name, method: "POST", path: path, key: "A", body: body, status: 400, code: "yp_2002", field: field}
	}
	runErrCases(t, e, []errCase{
		bad("additionalData Metadata.", site+"/payments", payBody(`"additionalData":{"Metadata.merchantId":"m_b"}`), "additionalData.Metadata.merchantId"),
		bad("additionalData METADATA.", site+"/payments", payBody(`"additionalData":{"METADATA.siteId":"x"}`), "additionalData.METADATA.siteId"),
		bad("additionalData Tokenization.", site+"/payments", payBody(`"additionalData":{"Tokenization.storedPaymentMethodId":"x"}`), "additionalData.Tokenization.storedPaymentMethodId"),
		bad("additionalData Recurring.", site+"/payments", payBody(`"additionalData":{"Recurring.contract":"x"}`), "additionalData.Recurring.contract"),
		bad("MerchantAccount", site+"/payments", payBody(`"MerchantAccount":"X"`), "MerchantAccount"),
		bad("METADATA", site+"/payments", payBody(`"METADATA":{}`), "METADATA"),
		bad("sessions Splits", site+"/sessions", `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","Splits":[]}`, "Splits"),
		bad("captures ApplicationInfo", site+"/payments/PSP0000000000001/captures", `{"amount":{"value":1,"currency":"EUR"},"applicationinfo":{}}`, "applicationinfo"),
	})
	for _, tc := range []string{"MerchantAccount", "METADATA", "Splits", "applicationinfo"} {
		r := e.Do("POST", site+"/payments", "A", payBody(`"`+tc+`":1`))
		if !strings.Contains(string(r.Body), "set by the service") {
			t.Errorf("%s: %s, want the set-by-the-service message", tc, r.Body)
		}
	}
}

// Text that would not arrive as sent (an unpaired surrogate escape, stored
// as U+FFFD before) or that is not what it seems (a bidirectional override
// in an identifier), and names that differ only in letter case in the
// objects passed on to the upstream, are refused with 400 yp_2002 naming
// the field, before the upstream is called.
func TestTextAndCaseTwinsRefusedOnEveryEndpoint(t *testing.T) {
	e := testenv.New(t)
	site := "/v1/ecom/" + testenv.SiteA
	psp := site + "/payments/PSP0000000000001"
	amount := `"amount":{"value":1000,"currency":"EUR"}`
	bad := func(name, path, body, field string) errCase {
		return errCase{name: name, method: "POST", path: path, key: "A", body: body, status: 400, code: "yp_2002", field: field}
	}
	session := func(extra string) string {
		return `{` + amount + `,"returnUrl":"https://shop.example/r",` + extra + `}`
	}
	runErrCases(t, e, []errCase{
		bad("payments lone surrogate", site+"/payments", payBody(`"reference":"a\ud800b"`), "reference"),
		bad("sessions lone surrogate", site+"/sessions", session(`"reference":"a\ud800b"`), "reference"),
		bad("captures lone surrogate", psp+"/captures", `{`+amount+`,"reference":"a\ud800b"}`, "reference"),
		bad("amount-updates lone surrogate", psp+"/amount-updates", `{`+amount+`,"pspReference":"PSP0000000000001","reference":"a\udc00"}`, "reference"),
		bad("payments not UTF-8", site+"/payments", payBody("\"reference\":\"a\xffb\""), "reference"),
		bad("payments RLO in reference", site+"/payments", payBody(`"reference":"order-\u202e1"`), "reference"),
		bad("refunds RLO in reference", psp+"/refunds", `{`+amount+`,"reference":"\u202e"}`, "reference"),
		bad("sessions zero-width space in shopperReference", site+"/sessions", session(`"shopperReference":"guest\u200b-1"`), "shopperReference"),
		bad("payments RLO in an address", site+"/payments", payBody(`"billingAddress":{"street":"\u202eMain"}`), "billingAddress.street"),
		bad("paymentMethod type and Type", site+"/payments", `{`+amount+`,"paymentMethod":{"type":"x","Type":"scheme"},"returnUrl":"https://shop.example/r"}`, "paymentMethod.Type"),
		bad("paymentMethod type and Type, the other named", site+"/payments", `{`+amount+`,"paymentMethod":{"type":"x","Type":"scheme"},"returnUrl":"https://shop.example/r"}`, "paymentMethod.type"),
		bad("browserInfo userAgent and UserAgent", site+"/payments", payBody(`"browserInfo":{"userAgent":"a","UserAgent":"b"}`), "browserInfo.UserAgent"),
		bad("details case twins", site+"/payments/details", `{"details":{"redirectResult":"a","RedirectResult":"b"}}`, "details.RedirectResult"),
	})
	for _, p := range []string{"/sessions", "/payments", "/payments/details"} {
		if n := len(e.Upstream.Requests(p)); n != 0 {
			t.Errorf("upstream %s called %d times", p, n)
		}
	}
	// Free text keeps the format characters real names and emoji need.
	r := e.Do("POST", site+"/payments", "A", payBody(`"shopperName":{"firstName":"\u0645\u06cc\u200c\u0646\u0627","lastName":"\ud83d\udc69\u200d\ud83d\udcbb"}`))
	if r.Status != 200 {
		t.Fatalf("a Persian name and an emoji: %d %s", r.Status, r.Body)
	}
}
