package simulator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	for _, key := range []string{"", "wrong-key"} {
		s, b, _ := e.raw(t, "POST", "/v71/payments", key, "", paymentBody)
		var ae apiError
		if s != 401 || json.Unmarshal(b, &ae) != nil || ae.Status != 401 || ae.ErrorType != "security" || ae.ErrorCode != "000" {
			t.Fatalf("key %q: %d %s", key, s, b)
		}
		if strings.Contains(string(b), testAPIKey) {
			t.Fatal("error body leaks the API key")
		}
	}
	if s, _, _ := e.raw(t, "GET", "/_sim/payments/X", "wrong", "", ""); s != 401 {
		t.Fatalf("hook without key: %d", s)
	}
	e.wantPayments(t, 0)
}

func TestValidation(t *testing.T) {
	const card = `"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030"}`
	const rest = `"reference":"r","returnUrl":"https://x.example/r"`
	tests := []struct {
		name   string
		path   string
		body   string
		status int
		code   string
		msg    string
	}{
		{"payments malformed JSON", "/v71/payments", `{"amount":`, 400, "702", "Unexpected input"},
		{"payments empty body", "/v71/payments", ``, 400, "702", ""},
		{"payments wrong type", "/v71/payments", `{"amount":"ten"}`, 400, "702", "amount"},
		{"payments no amount", "/v71/payments", `{"merchantAccount":"M",` + rest + `,` + card + `}`, 422, "100", "amount"},
		{"payments no currency", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1},` + rest + `,` + card + `}`, 422, "138", ""},
		{"payments bad currency", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EURO"},` + rest + `,` + card + `}`, 422, "138", ""},
		{"payments negative", "/v71/payments", `{"merchantAccount":"M","amount":{"value":-1,"currency":"EUR"},` + rest + `,` + card + `}`, 422, "137", ""},
		{"payments no merchant", "/v71/payments", `{"amount":{"value":1,"currency":"EUR"},` + rest + `,` + card + `}`, 422, "901", "merchantAccount"},
		{"payments no reference", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},"returnUrl":"https://x.example",` + card + `}`, 422, "130", "reference"},
		{"payments long reference", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},"reference":"` + strings.Repeat("r", 81) + `","returnUrl":"https://x.example",` + card + `}`, 422, "130", "80"},
		{"payments no returnUrl", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},"reference":"r",` + card + `}`, 422, "14_030", "Return URL"},
		{"payments relative returnUrl", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},"reference":"r","returnUrl":"/r",` + card + `}`, 422, "14_030", ""},
		{"payments no paymentMethod", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `}`, 422, "905", "paymentMethod"},
		{"payments splits do not sum", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1000,"currency":"EUR"},` + rest + `,` + card + `,"splits":[{"account":"BA1","amount":{"value":900},"type":"BalanceAccount"},{"account":"BA2","amount":{"value":50},"type":"Commission"}]}`, 422, "000", "sum of the split amounts (950)"},
		{"payments split over amount with remainder", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1000,"currency":"EUR"},` + rest + `,` + card + `,"splits":[{"account":"BA1","amount":{"value":1001},"type":"BalanceAccount"},{"type":"Remainder"}]}`, 422, "000", "sum"},
		{"payments split currency", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1000,"currency":"EUR"},` + rest + `,` + card + `,"splits":[{"account":"BA1","amount":{"value":1000,"currency":"USD"},"type":"BalanceAccount"}]}`, 422, "000", "currency"},
		{"payments split no type", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1000,"currency":"EUR"},` + rest + `,` + card + `,"splits":[{"account":"BA1","amount":{"value":1000}}]}`, 422, "000", "type"},
		{"payments split no account", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1000,"currency":"EUR"},` + rest + `,` + card + `,"splits":[{"amount":{"value":1000},"type":"BalanceAccount"}]}`, 422, "000", "account"},
		{"payments metadata too many", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `,` + card + `,"metadata":{` + manyMetadata(21) + `}}`, 422, "177", ""},
		{"payments ContAuth without shopperReference", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `,` + card + `,"shopperInteraction":"ContAuth","recurringProcessingModel":"UnscheduledCardOnFile"}`, 422, "000", "shopperReference"},
		{"payments ContAuth without model", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `,` + card + `,"shopperInteraction":"ContAuth","shopperReference":"shopper-1"}`, 422, "000", "recurringProcessingModel"},
		{"payments store without shopperReference", "/v71/payments", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `,` + card + `,"storePaymentMethod":true}`, 422, "000", "shopperReference"},
		{"sessions no amount", "/v71/sessions", `{"merchantAccount":"M",` + rest + `}`, 422, "100", ""},
		{"sessions no merchant", "/v71/sessions", `{"amount":{"value":1,"currency":"EUR"},` + rest + `}`, 422, "901", ""},
		{"sessions no reference", "/v71/sessions", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},"returnUrl":"https://x.example"}`, 422, "130", ""},
		{"sessions no returnUrl", "/v71/sessions", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},"reference":"r"}`, 422, "14_030", ""},
		{"sessions splits", "/v71/sessions", `{"merchantAccount":"M","amount":{"value":100,"currency":"EUR"},` + rest + `,"splits":[{"account":"BA1","amount":{"value":99},"type":"BalanceAccount"}]}`, 422, "000", "sum"},
		{"sessions store without shopper", "/v71/sessions", `{"merchantAccount":"M","amount":{"value":0,"currency":"EUR"},` + rest + `,"storePaymentMethod":true}`, 422, "000", "shopperReference"},
		{"sessions bad mode", "/v71/sessions", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `,"mode":"popup"}`, 422, "000", "mode"},
		{"sessions bad store mode", "/v71/sessions", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `,"storePaymentMethodMode":"always"}`, 422, "000", "storePaymentMethodMode"},
		{"sessions line item quantity", "/v71/sessions", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"},` + rest + `,"lineItems":[{"quantity":0}]}`, 422, "000", "quantity"},
		{"paymentMethods no merchant", "/v71/paymentMethods", `{}`, 422, "901", ""},
		{"capture unknown psp", "/v71/payments/NOPE000000000000/captures", `{"merchantAccount":"M","amount":{"value":1,"currency":"EUR"}}`, 422, "167", "Original pspReference required"},
		{"capture no amount", "/v71/payments/NOPE000000000000/captures", `{"merchantAccount":"M"}`, 422, "100", ""},
		{"capture zero amount", "/v71/payments/NOPE000000000000/captures", `{"merchantAccount":"M","amount":{"value":0,"currency":"EUR"}}`, 422, "137", ""},
		{"capture no merchant", "/v71/payments/NOPE000000000000/captures", `{"amount":{"value":1,"currency":"EUR"}}`, 422, "901", ""},
		{"reversal no merchant", "/v71/payments/NOPE000000000000/reversals", `{}`, 422, "901", ""},
		{"reversal unknown", "/v71/payments/NOPE000000000000/reversals", `{"merchantAccount":"M"}`, 422, "167", ""},
		{"amount update no amount", "/v71/payments/NOPE000000000000/amountUpdates", `{"merchantAccount":"M"}`, 422, "100", ""},
		{"details empty", "/v71/payments/details", `{}`, 422, "14_018", "details"},
	}
	e := newEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, b, _ := e.raw(t, "POST", tt.path, testAPIKey, "", tt.body)
			var ae apiError
			if err := json.Unmarshal(b, &ae); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if s != tt.status || ae.Status != tt.status || ae.ErrorCode != tt.code || ae.ErrorType != "validation" || !strings.Contains(ae.Message, tt.msg) {
				t.Fatalf("got %d %s, want %d %s containing %q", s, b, tt.status, tt.code, tt.msg)
			}
		})
	}
	e.wantPayments(t, 0)
}

func manyMetadata(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"k` + strings.Repeat("x", i%3) + string(rune('a'+i)) + `":"v"`
	}
	return strings.Join(parts, ",")
}

func TestValidSplitsAccepted(t *testing.T) {
	e := newEnv(t)
	body := `{"merchantAccount":"M","amount":{"value":1000,"currency":"EUR"},"reference":"r","returnUrl":"https://x.example/r",` +
		`"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030"},` +
		`"splits":[{"account":"BA1","amount":{"value":950,"currency":"EUR"},"type":"BalanceAccount","reference":"s1"},{"account":"BA2","amount":{"value":50},"type":"Commission","reference":"s2"}]}`
	s, b, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "", body)
	if s != 200 {
		t.Fatalf("%d %s", s, b)
	}
	ps := e.sim.Payments()
	if len(ps) != 1 || len(ps[0].Splits) != 2 || ps[0].Splits[1].Amount.Value != 50 {
		t.Fatalf("payments = %+v", ps)
	}
}

func TestUnknownRoutes(t *testing.T) {
	e := newEnv(t)
	if s, b, _ := e.raw(t, "POST", "/v70/payments", testAPIKey, "", paymentBody); s != 404 || !strings.Contains(string(b), `"status":404`) {
		t.Fatalf("%d %s", s, b)
	}
	if s, _, _ := e.raw(t, "GET", "/v71/payments", testAPIKey, "", ""); s != 404 && s != 405 {
		t.Fatalf("GET /payments: %d", s)
	}
}

func TestMerchantAccountRestriction(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MerchantAccounts = []string{"Allowed"} })
	s, b, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "", paymentBody)
	if s != 403 || !strings.Contains(string(b), "Invalid Merchant Account") {
		t.Fatalf("%d %s", s, b)
	}
	ok := strings.Replace(paymentBody, "TestMerchantECOM", "Allowed", 1)
	if s, _, _ := e.raw(t, "POST", "/v71/payments", testAPIKey, "", ok); s != 200 {
		t.Fatalf("allowed account: %d", s)
	}
}

func TestLatency(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Latency = 30 * time.Millisecond })
	start := time.Now()
	e.raw(t, "POST", "/v71/paymentMethods", testAPIKey, "", `{"merchantAccount":"M"}`)
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("latency not applied: %v", d)
	}
}
