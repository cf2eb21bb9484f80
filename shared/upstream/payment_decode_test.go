package upstream

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var paymentAnswers = []string{
	`{"additionalData":{"authCode":"058158","cardSummary":"1111","expiryDate":"3/2030"},"pspReference":"BENCH00000000001","resultCode":"Authorised","amount":{"currency":"EUR","value":12950},"merchantReference":"order-2026-000123","paymentMethod":{"brand":"visa","type":"scheme"}}`,
	`{"resultCode":"RedirectShopper","action":{"type":"redirect","url":"https://x.example/?a=\"b\"","method":"GET"},"pspReference":null}`,
	`{"resultCode":"Refused","refusalReason":"CVC Declined","refusalReasonCode":"24","pspReference":"P\u00e9\n1","unknown":[1,{"x":"y"}],"amount":null,"paymentMethod":null,"additionalData":null}`,
	`{"resultCode":"Authorised","resultCode":"Refused","additionalData":{"k\u0041":"v","n":null},"amount":{"value":-5,"currency":"EUR"}}`,
	`{}`,
	` { "resultCode" : "Pending" , "amount" : { "value" : 0 } } `,
}

// TestDecodePaymentResponseAsEncodingJSON: the hand decoder gives what
// encoding/json gives, and refuses what it refuses.
func TestDecodePaymentResponseAsEncodingJSON(t *testing.T) {
	bad := []string{
		`[]`, `"x"`, `null`, `{"resultCode":1}`, `{"amount":{"value":1.5}}`, `{"amount":{"value":"1"}}`,
		`{"amount":[]}`, `{"paymentMethod":{"type":true}}`, `{"additionalData":{"a":1}}`, `{"additionalData":[]}`, `{"resultCode":"x"`,
	}
	for _, body := range append(append([]string{}, paymentAnswers...), bad...) {
		compareDecoders(t, []byte(body))
	}
	// Strings are slices of one copy of the body, not of the body itself.
	raw := []byte(paymentAnswers[0])
	got, err := decodePaymentResponse(raw)
	if err != nil {
		t.Fatal(err)
	}
	copy(raw, strings.Repeat("#", len(raw)))
	if got.ResultCode != "Authorised" || got.AdditionalData["authCode"] != "058158" || got.Amount.Currency != "EUR" {
		t.Fatalf("decoded strings changed with the body: %+v", got)
	}
}

func compareDecoders(t *testing.T, raw []byte) {
	t.Helper()
	var want PaymentResponse
	wantErr := json.Unmarshal(raw, &want)
	got, err := decodePaymentResponse(raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, encoding/json %v", raw, err, wantErr)
	}
	if err != nil {
		return
	}
	if string(want.Action) == "null" {
		want.Action = nil // the one documented difference
	}
	if len(want.Action) == 0 {
		want.Action = nil
	}
	if len(got.Action) == 0 {
		got.Action = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", raw, got, want)
	}
}

// knownName finds the member names the decoder knows, in any case.
var knownName = regexp.MustCompile(`(?i)"(resultCode|pspReference|refusalReason|refusalReasonCode|merchantReference|action|amount|paymentMethod|additionalData|value|currency|type|brand)"`)

var knownExact = map[string]bool{}

func init() {
	for _, n := range strings.Split("resultCode pspReference refusalReason refusalReasonCode merchantReference action amount paymentMethod additionalData value currency type brand", " ") {
		knownExact[`"`+n+`"`] = true
	}
}

func FuzzDecodePaymentResponse(f *testing.F) {
	for _, s := range paymentAnswers {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, m := range knownName.FindAll(raw, -1) {
			if !knownExact[string(m)] {
				return // encoding/json matches names in any case; the upstream's are exact
			}
		}
		if !utf8.Valid(raw) && json.Valid(raw) {
			return // handed to encoding/json as it is
		}
		compareDecoders(t, raw)
	})
}
