package upstream

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/money"
)

func TestPaymentRequestExtraMerge(t *testing.T) {
	req := PaymentRequest{
		MerchantAccount: "M",
		Amount:          money.Amount{Value: 1000, Currency: "EUR"},
		Reference:       "order-1",
		ReturnURL:       "https://shop.example/return",
		CountryCode:     "NL",
		IndustryUsage:   "noShow",
		Metadata:        map[string]string{"siteId": "s1"},
		PaymentMethod:   json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_4111111111111111"}`),
		Extra: map[string]json.RawMessage{
			"browserInfo":     json.RawMessage(`{"userAgent":"UA","acceptHeader":"*/*"}`),
			"origin":          json.RawMessage(`"https://shop.example"`),
			"channel":         json.RawMessage(`"Web"`),
			"riskData":        json.RawMessage(` {"clientData":"abc"} `),
			"odd\"key<":       json.RawMessage(`1`),
			"countryCode":     json.RawMessage(`"DE"`),           // typed field wins
			"merchantAccount": json.RawMessage(`"Other"`),        // typed field wins
			"splits":          json.RawMessage(`[{"type":"x"}]`), // typed (empty) field still wins
			"empty":           nil,                               // skipped
		},
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("output is not a JSON object: %v\n%s", err, b)
	}
	if string(m["countryCode"]) != `"NL"` || string(m["merchantAccount"]) != `"M"` {
		t.Errorf("typed fields did not win: %s", b)
	}
	if _, ok := m["splits"]; ok {
		t.Errorf("Extra smuggled a typed field: %s", b)
	}
	if _, ok := m["empty"]; ok {
		t.Errorf("empty Extra value written: %s", b)
	}
	if string(m["origin"]) != `"https://shop.example"` || string(m["channel"]) != `"Web"` || string(m["odd\"key<"]) != `1` {
		t.Errorf("extras missing: %s", b)
	}
	if string(m["industryUsage"]) != `"noShow"` {
		t.Errorf("industryUsage not top-level: %s", b)
	}
	if !strings.Contains(string(m["paymentMethod"]), "test_4111111111111111") {
		t.Errorf("paymentMethod = %s", m["paymentMethod"])
	}
	if strings.Count(string(b), `"countryCode"`) != 1 || strings.Count(string(b), `"merchantAccount"`) != 1 {
		t.Errorf("duplicate keys: %s", b)
	}

	// Round trip: unknown fields come back in Extra.
	var back PaymentRequest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.CountryCode != "NL" || back.MerchantAccount != "M" || back.IndustryUsage != "noShow" {
		t.Errorf("typed = %+v", back)
	}
	if len(back.Extra) != 5 || string(back.Extra["channel"]) != `"Web"` {
		t.Errorf("Extra = %v", back.Extra)
	}
	if _, ok := back.Extra["countryCode"]; ok {
		t.Error("typed field in Extra after unmarshal")
	}
}

func TestPaymentRequestExtraInvalidJSON(t *testing.T) {
	req := PaymentRequest{Extra: map[string]json.RawMessage{"browserInfo": json.RawMessage(`{bad`)}}
	if _, err := json.Marshal(req); err == nil {
		t.Fatal("invalid Extra JSON accepted")
	}
	c, f := newTestClient(t, 200, `{}`)
	if _, err := c.Payments(context.Background(), req, ""); err == nil || IsUnavailable(err) {
		t.Fatalf("err = %v", err)
	}
	if f.count() != 0 {
		t.Fatal("request sent")
	}
}

// Without Extra the body is encoding/json's of the typed fields.
func TestPaymentRequestNoExtraIsPlain(t *testing.T) {
	for _, req := range []PaymentRequest{
		{MerchantAccount: "M", PaymentMethod: json.RawMessage(`{"type":"ideal"}`)},
		{
			MerchantAccount: "M", Amount: money.Amount{Value: 1000, Currency: "EUR"}, Reference: "r<&>", ReturnURL: "https://x/?a=1&b=2",
			CountryCode: "NL", ShopperInteraction: "Ecommerce", RecurringProcessingModel: "CardOnFile", IndustryUsage: "noShow",
			ShopperReference: "s-1", Splits: []Split{{Account: "A", Amount: &SplitAmount{Value: 1}, Type: "MarketPlace", Reference: "x"}},
			Metadata:       map[string]string{"zeta": "1", "alpha": "2", "mid": "é\u2028\"<q>\x01"},
			AdditionalData: map[string]string{"authorisationType": "PreAuth", "b": ""},
			PaymentMethod:  json.RawMessage(`{"type":"scheme"}`),
		},
	} {
		got, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(paymentRequestJSON(req))
		if string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
}

// An "action" of null is no action.
func TestPaymentResponseNullAction(t *testing.T) {
	c, _ := newTestClient(t, 200, `{"resultCode":"Authorised","action":null}`)
	got, err := c.Payments(context.Background(), PaymentRequest{}, "k")
	if err != nil || got.Action != nil || got.ResultCode != "Authorised" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// isPaymentRequestField must list exactly the JSON names of the typed fields.
func TestPaymentRequestFieldListInSync(t *testing.T) {
	typ := reflect.TypeOf(PaymentRequest{})
	n := 0
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		n++
		if !isPaymentRequestField(name) {
			t.Errorf("isPaymentRequestField(%q) = false", name)
		}
	}
	if n != 14 {
		t.Errorf("PaymentRequest has %d JSON fields; update isPaymentRequestField and this count", n)
	}
}

func BenchmarkPaymentRequestMarshal(b *testing.B) {
	req := PaymentRequest{
		MerchantAccount: "M", Amount: money.Amount{Value: 1000, Currency: "EUR"}, Reference: "r", ReturnURL: "https://x",
		PaymentMethod: json.RawMessage(`{"type":"scheme","encryptedCardNumber":"test_4111111111111111"}`),
		Extra: map[string]json.RawMessage{
			"browserInfo": json.RawMessage(`{"userAgent":"UA","acceptHeader":"*/*","language":"en","colorDepth":24}`),
			"origin":      json.RawMessage(`"https://shop.example"`),
			"channel":     json.RawMessage(`"Web"`),
		},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
