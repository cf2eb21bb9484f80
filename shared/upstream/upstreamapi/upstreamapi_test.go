package upstreamapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func mustLoad(t *testing.T) *Validator {
	t.Helper()
	v, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const goodPayment = `{"merchantAccount":"M","amount":{"value":1000,"currency":"EUR"},"reference":"r-1","returnUrl":"https://shop.example/r",
 "paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111","encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737"}}`

// A deliberately wrong request is caught; the same request done right is not.
func TestRequestValidation(t *testing.T) {
	v := mustLoad(t)
	tests := []struct {
		name, path, body string
		wantErr          bool
	}{
		{"valid payment", "/v71/payments", goodPayment, false},
		{"amount value is a string", "/v71/payments", strings.Replace(goodPayment, `"value":1000`, `"value":"1000"`, 1), true},
		{"no merchantAccount", "/v71/payments", strings.Replace(goodPayment, `"merchantAccount":"M",`, ``, 1), true},
		{"unknown shopperInteraction", "/v71/payments", strings.Replace(goodPayment, `"reference"`, `"shopperInteraction":"Telepathy","reference"`, 1), true},
		{"valid details", "/v71/payments/details", `{"details":{"threeDSResult":"abc"}}`, false},
		{"details is not an object", "/v71/payments/details", `{"details":"abc"}`, true},
		{"capture without amount", "/v71/payments/ABCDEFGHIJKLMNOP/captures", `{"merchantAccount":"M"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "https://checkout-test.example"+tt.path, strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			errs := v.Request(r)
			if (len(errs) > 0) != tt.wantErr {
				t.Fatalf("errors = %v, want errors: %v", errs, tt.wantErr)
			}
			if b, _ := io.ReadAll(r.Body); string(b) != tt.body {
				t.Fatal("the body was not restored")
			}
		})
	}
}

func TestNotificationValidation(t *testing.T) {
	v := mustLoad(t)
	item := func(code, ad string) string {
		return `{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":` + ad + `,"amount":{"value":1000,"currency":"EUR"},"eventCode":"` + code +
			`","eventDate":"2026-01-01T00:00:00+01:00","merchantAccountCode":"M","merchantReference":"r","originalReference":"ABCDEFGHIJKLMNOP","pspReference":"QRSTUVWXYZABCDEF","success":"true"}}]}`
	}
	tests := []struct {
		name, body string
		wantErr    bool
	}{
		{"authorisation with metadata", strings.Replace(item("AUTHORISATION", `{"metadata.siteId":"s","authCode":"1"}`), `"originalReference":"ABCDEFGHIJKLMNOP",`, "", 1), false},
		{"capture", item("CAPTURE", `{"hmacSignature":"x"}`), false},
		{"capture with metadata", item("CAPTURE", `{"metadata.siteId":"s"}`), true},
		{"cancel or refund", item("CANCEL_OR_REFUND", `{"modification.action":"refund"}`), false},
		{"amount as string", strings.Replace(item("CAPTURE", `{}`), `"value":1000`, `"value":"1000"`, 1), true},
		{"unknown event", item("NOPE", `{}`), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := v.Notification([]byte(tt.body))
			if (len(errs) > 0) != tt.wantErr {
				t.Fatalf("errors = %v, want errors: %v", errs, tt.wantErr)
			}
		})
	}
}

func TestNormaliseNullable(t *testing.T) {
	in := []byte(`{"a" : {"type" : "string", "enum" : [ "X", "Y" ], "nullable" : true}, "b" : {"nullable" : true, "type" : "integer"}}`)
	got, err := normaliseNullable(in)
	want := `{"a" : {"type" : [ "string", "null" ], "enum" : [ "X", "Y" , null ]}, "b" : { "type" : [ "integer", "null" ]}}`
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v\nwant %s", got, err, want)
	}
	if _, err := normaliseNullable([]byte(`{"a" : {"nullable" : true, "b" : {}}}`)); err == nil {
		t.Fatal("a nested nullable object was accepted")
	}
}
