package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/testenv"
)

// with returns the valid base session body with one field set (raw JSON).
func withField(field, raw string) string {
	return fmt.Sprintf(`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r",%q:%s}`, field, raw)
}

func TestSessionValidation(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/sessions"
	bad := func(name, body, field string) errCase {
		return errCase{name: name, method: "POST", path: path, key: "A", body: body, status: 400, code: "yp_2002", field: field}
	}
	long := func(n int) string { return `"` + strings.Repeat("x", n) + `"` }
	runErrCases(t, e, []errCase{
		bad("not json", `{"amount":`, ""),
		bad("array body", `[]`, ""),
		bad("empty body", ` `, ""),
		bad("trailing data", `{"amount":{"value":1,"currency":"EUR"},"returnUrl":"https://a.b/"} {}`, ""),
		bad("amount missing", `{"returnUrl":"https://shop.example/r"}`, "amount"),
		bad("amount not object", `{"amount":5,"returnUrl":"https://shop.example/r"}`, "amount"),
		bad("value missing", `{"amount":{"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "amount.value"),
		bad("value fraction", `{"amount":{"value":10.5,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "amount.value"),
		bad("value string", `{"amount":{"value":"10","currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "amount.value"),
		bad("value negative", `{"amount":{"value":-1,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "amount.value"),
		bad("value too big", `{"amount":{"value":1000000000001,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "amount.value"),
		bad("value zero without storing", `{"amount":{"value":0,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "amount.value"),
		bad("currency unknown", `{"amount":{"value":1,"currency":"XYZ"},"returnUrl":"https://shop.example/r"}`, "amount.currency"),
		bad("currency lower case", `{"amount":{"value":1,"currency":"eur"},"returnUrl":"https://shop.example/r"}`, "amount.currency"),
		bad("amount unknown field", `{"amount":{"value":1,"currency":"EUR","x":1},"returnUrl":"https://shop.example/r"}`, "amount.x"),
		bad("returnUrl missing", `{"amount":{"value":1,"currency":"EUR"}}`, "returnUrl"),
		bad("returnUrl relative", `{"amount":{"value":1,"currency":"EUR"},"returnUrl":"/back"}`, "returnUrl"),
		bad("returnUrl too long", `{"amount":{"value":1,"currency":"EUR"},"returnUrl":"https://a.b/`+strings.Repeat("x", 8000)+`"}`, "returnUrl"),
		bad("reference too long", withField("reference", long(81)), "reference"),
		bad("reference not string", withField("reference", `12`), "reference"),
		bad("unknown field", withField("colour", `"red"`), "colour"),
		bad("merchantAccount forbidden", withField("merchantAccount", `"Other"`), "merchantAccount"),
		bad("splits forbidden", withField("splits", `[]`), "splits"),
		bad("metadata forbidden", withField("metadata", `{}`), "metadata"),
		bad("store forbidden", withField("store", `"x"`), "store"),
		bad("applicationInfo forbidden", withField("applicationInfo", `{}`), "applicationInfo"),
		bad("platformChargebackLogic forbidden", withField("platformChargebackLogic", `{}`), "platformChargebackLogic"),
		bad("shopperInteraction forbidden", withField("shopperInteraction", `"ContAuth"`), "shopperInteraction"),
		bad("shopperEmail invalid", withField("shopperEmail", `"not-an-email"`), "shopperEmail"),
		bad("telephone invalid", withField("telephoneNumber", `"call me"`), "telephoneNumber"),
		bad("shopperName not object", withField("shopperName", `"Jo"`), "shopperName"),
		bad("shopperName unknown", withField("shopperName", `{"middleName":"X"}`), "shopperName.middleName"),
		bad("mode invalid", withField("mode", `"popup"`), "mode"),
		bad("blocked not array", withField("blockedPaymentMethods", `"paypal"`), "blockedPaymentMethods"),
		bad("blocked element not string", withField("blockedPaymentMethods", `["paypal",3]`), "blockedPaymentMethods[1]"),
		bad("locale invalid", withField("shopperLocale", `"english"`), "shopperLocale"),
		bad("country invalid", withField("countryCode", `"NLD"`), "countryCode"),
		bad("country unknown", withField("countryCode", `"QQ"`), "countryCode"),
		bad("lineItems not array", withField("lineItems", `{}`), "lineItems"),
		bad("lineItem quantity missing", withField("lineItems", `[{"description":"a"}]`), "lineItems[0].quantity"),
		bad("lineItem quantity zero", withField("lineItems", `[{"quantity":0}]`), "lineItems[0].quantity"),
		bad("lineItem description too long", withField("lineItems", `[{"quantity":1},{"quantity":1,"description":`+long(128)+`}]`), "lineItems[1].description"),
		bad("lineItem id too long", withField("lineItems", `[{"quantity":1,"id":`+long(51)+`}]`), "lineItems[0].id"),
		bad("lineItem amount fraction", withField("lineItems", `[{"quantity":1,"amountIncludingTax":1.5}]`), "lineItems[0].amountIncludingTax"),
		bad("lineItem productUrl", withField("lineItems", `[{"quantity":1,"productUrl":"nope"}]`), "lineItems[0].productUrl"),
		bad("lineItem unknown", withField("lineItems", `[{"quantity":1,"colour":"red"}]`), "lineItems[0].colour"),
		bad("lineItem not object", withField("lineItems", `[1]`), "lineItems[0]"),
		bad("shopperReference too short", withField("shopperReference", `"ab"`), "shopperReference"),
		bad("shopperReference too long", withField("shopperReference", long(257)), "shopperReference"),
		bad("shopperReference email", withField("shopperReference", `"jo@example.com"`), "shopperReference"),
		bad("storePaymentMethod not bool", withField("storePaymentMethod", `"yes"`), "storePaymentMethod"),
		bad("storePaymentMethod without shopperReference", withField("storePaymentMethod", `true`), "shopperReference"),
		bad("storePaymentMethodMode invalid", withField("storePaymentMethodMode", `"always"`), "storePaymentMethodMode"),
		bad("storePaymentMethodMode enabled without shopperReference", withField("storePaymentMethodMode", `"enabled"`), "shopperReference"),
		bad("storePaymentMethod without recurringProcessingModel", withField("storePaymentMethod", `true`), "recurringProcessingModel"),
		bad("storePaymentMethodMode enabled without recurringProcessingModel", withField("storePaymentMethodMode", `"enabled"`), "recurringProcessingModel"),
		bad("shopperName without lastName", withField("shopperName", `{"firstName":"Jo"}`), "shopperName.lastName"),
		bad("shopperName without firstName", withField("shopperName", `{"lastName":"Doe"}`), "shopperName.firstName"),
		bad("recurringProcessingModel invalid", withField("recurringProcessingModel", `"Sometimes"`), "recurringProcessingModel"),
	})
	if n := len(e.Upstream.Requests("/sessions")); n != 0 {
		t.Fatalf("%d invalid requests reached the upstream", n)
	}
}

func TestSessionCreatedWithServiceControlledFields(t *testing.T) {
	e := testenv.New(t)
	body := `{"amount":{"value":10000,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"order-1",
	  "blockedPaymentMethods":["paypal","bacs"],"shopperLocale":"nl-NL","shopperEmail":"jo@example.com",
	  "shopperName":{"firstName":"Jo","lastName":"Doe"},"telephoneNumber":"+31 20 123 4567",
	  "lineItems":[{"quantity":2,"description":"Tea","id":"sku-1","amountIncludingTax":5000,"taxPercentage":900}]}`
	r := e.Do("POST", "/v1/ecom/"+testenv.SiteA+"/sessions", "A", body)
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	out := r.JSON(t)
	if out["id"] == "" || out["sessionData"] == "" || out["reference"] != "order-1" {
		t.Fatalf("response %s", r.Body)
	}
	up := e.Upstream.Last(t, "/sessions")
	if up["merchantAccount"] != "AlphaECOM" || up["shopperInteraction"] != "Ecommerce" || up["countryCode"] != "NL" || up["mode"] != "embedded" {
		t.Fatalf("upstream request lacks service fields: %v", up)
	}
	blocked := fmt.Sprint(up["blockedPaymentMethods"])
	if blocked != "[sepadirectdebit bacs directdebit_GB paypal]" {
		t.Fatalf("blocked = %s", blocked)
	}
	splits, _ := up["splits"].([]any)
	var sum float64
	for _, s := range splits {
		sum += s.(map[string]any)["amount"].(map[string]any)["value"].(float64)
	}
	if len(splits) != 2 || sum != 10000 {
		t.Fatalf("splits %v do not sum to the amount", splits)
	}
	// 1.5 % of 10000 + 10 fixed = 160 commission.
	if v := splits[1].(map[string]any)["amount"].(map[string]any)["value"]; v != float64(160) {
		t.Fatalf("commission %v, want 160", v)
	}
	md, _ := up["metadata"].(map[string]any)
	if md["merchantId"] != testenv.MerchantA || md["siteId"] != testenv.SiteA {
		t.Fatalf("metadata %v", md)
	}
	if up["lineItems"].([]any)[0].(map[string]any)["description"] != "Tea" {
		t.Fatalf("line items not passed: %v", up["lineItems"])
	}
	if e.Upstream.Requests("/sessions")[0].Header.Get("X-API-Key") != testenv.UpstreamAPIKey {
		t.Fatal("upstream API key not sent")
	}
}

func TestSessionDefaultsAndOverrides(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/sessions"
	cases := []struct {
		name, body string
		check      func(up map[string]any) string
	}{
		{"country override", withField("countryCode", `"BE"`), func(up map[string]any) string {
			if up["countryCode"] != "BE" {
				return "countryCode not the caller's"
			}
			return ""
		}},
		{"hosted mode", withField("mode", `"hosted"`), func(up map[string]any) string {
			if up["mode"] != "hosted" {
				return "mode not hosted"
			}
			return ""
		}},
		{"reference generated", `{"amount":{"value":1,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, func(up map[string]any) string {
			if ref, _ := up["reference"].(string); !strings.HasPrefix(ref, "ses_") {
				return "no generated reference"
			}
			return ""
		}},
		{"zero amount tokenisation", `{"amount":{"value":0,"currency":"EUR"},"returnUrl":"https://shop.example/r","storePaymentMethod":true,"shopperReference":"guest-123","recurringProcessingModel":"UnscheduledCardOnFile"}`,
			func(up map[string]any) string {
				if up["storePaymentMethod"] != true || up["shopperReference"] != "guest-123" || up["recurringProcessingModel"] != "UnscheduledCardOnFile" {
					return "tokenisation fields not passed"
				}
				if _, ok := up["splits"]; ok {
					return "zero amount must have no splits"
				}
				return ""
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", path, "A", tc.body)
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			if msg := tc.check(e.Upstream.Last(t, "/sessions")); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestSessionIdempotentReplay(t *testing.T) {
	e := testenv.New(t)
	path := "/v1/ecom/" + testenv.SiteA + "/sessions"
	body := `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`
	first := e.Do("POST", path, "A", body, "Idempotency-Key", "k-1")
	again := e.Do("POST", path, "A", " "+body, "Idempotency-Key", "k-1")
	if first.Status != 200 || again.Status != 200 || string(first.Body) != string(again.Body) {
		t.Fatalf("replay differs: %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
	}
	if again.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("Idempotent-Replayed header wrong")
	}
	if n := len(e.Upstream.Requests("/sessions")); n != 1 {
		t.Fatalf("upstream called %d times", n)
	}
	if got := e.Upstream.Requests("/sessions")[0].Header.Get("Idempotency-Key"); got == "" || got == "k-1" || len(got) > 64 {
		t.Fatalf("upstream idempotency key %q must be derived, ≤ 64 chars", got)
	}
	diff := e.Do("POST", path, "A", `{"amount":{"value":2000,"currency":"EUR"},"returnUrl":"https://shop.example/r"}`, "Idempotency-Key", "k-1")
	if diff.Status != 422 || diff.JSON(t)["errorCode"] != "yp_2003" {
		t.Fatalf("different body: %d %s", diff.Status, diff.Body)
	}
	// Merchant B's identical key is a different operation.
	other := e.Do("POST", "/v1/ecom/"+testenv.SiteB+"/sessions", "B", body, "Idempotency-Key", "k-1")
	if other.Status != 200 || other.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("other merchant: %d %s", other.Status, other.Body)
	}
	// A validation failure is not stored: the corrected request runs.
	bad := e.Do("POST", path, "A", `{"amount":{"value":1000,"currency":"EUR"}}`, "Idempotency-Key", "k-2")
	if bad.Status != 400 {
		t.Fatalf("invalid: %d", bad.Status)
	}
	fixed := e.Do("POST", path, "A", body, "Idempotency-Key", "k-2")
	if fixed.Status != 200 || fixed.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("corrected request: %d %s", fixed.Status, fixed.Body)
	}
	for _, k := range []string{"", strings.Repeat("k", 256), "tab\there"} {
		r := e.Do("POST", path, "A", body, "Idempotency-Key", k)
		if k == "" {
			continue // an empty header is the same as none
		}
		if r.Status != 400 || r.JSON(t)["errorCode"] != "yp_2002" {
			t.Fatalf("key %q: %d %s", k, r.Status, r.Body)
		}
	}
}
