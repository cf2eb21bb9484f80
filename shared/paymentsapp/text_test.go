package paymentsapp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
)

// Bodies with one string to vary (%s, already JSON-escaped as needed).
const (
	payFmt = `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r",` +
		`"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111"},%s}`
	sessionFmt = `{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r",%s}`
)

// decoders by endpoint, each taking a body.
var decoders = map[string]func(body string) error{
	"payments": func(b string) error { _, err := DecodePayment([]byte(b)); return err },
	"sessions": func(b string) error { _, err := DecodeSession([]byte(b)); return err },
	"payment-methods": func(b string) error {
		_, err := DecodePaymentMethods([]byte(b))
		return err
	},
	"details":        func(b string) error { _, err := DecodeDetails([]byte(b)); return err },
	"captures":       func(b string) error { _, err := DecodeCapture([]byte(b)); return err },
	"reversals":      func(b string) error { _, err := DecodeReversal([]byte(b)); return err },
	"amount-updates": func(b string) error { _, err := DecodeAmountUpdate([]byte(b), "PSP0000000000001"); return err },
	"refunds":        func(b string) error { _, err := DecodeRefund([]byte(b)); return err },
}

// place puts a string (JSON-escaped text) where each field of a class
// lives: the endpoint, the body and the path the error must name.
type place struct {
	endpoint, body, field string
}

func identifierPlaces(v string) []place {
	amount := `"amount":{"value":1000,"currency":"EUR"}`
	return []place{
		{"payments", sprintf(payFmt, `"reference":"`+v+`"`), "reference"},
		{"sessions", sprintf(sessionFmt, `"reference":"`+v+`"`), "reference"},
		{"details", `{"details":{"redirectResult":"x"},"reference":"` + v + `"}`, "reference"},
		{"captures", `{` + amount + `,"reference":"` + v + `"}`, "reference"},
		{"reversals", `{"reference":"` + v + `"}`, "reference"},
		{"amount-updates", `{` + amount + `,"pspReference":"PSP0000000000001","reference":"` + v + `"}`, "reference"},
		{"refunds", `{` + amount + `,"reference":"` + v + `"}`, "reference"},
		{"payments", sprintf(payFmt, `"shopperReference":"shopper-`+v+`"`), "shopperReference"},
		{"sessions", sprintf(sessionFmt, `"shopperReference":"shopper-`+v+`"`), "shopperReference"},
		{"payment-methods", `{` + amount + `,"shopperReference":"shopper-` + v + `"}`, "shopperReference"},
		{"payment-methods", `{` + amount + `,"blockedPaymentMethods":["scheme","` + v + `"]}`, "blockedPaymentMethods[1]"},
		{"sessions", sprintf(sessionFmt, `"lineItems":[{"quantity":1,"id":"sku-`+v+`"}]`), "lineItems[0].id"},
		{"refunds", `{` + amount + `,"lineItems":[{"quantity":1},{"quantity":1,"id":"` + v + `"}]}`, "lineItems[1].id"},
		{"payments", strings.Replace(sprintf(payFmt, `"shopperReference":"s-1"`), `"type":"scheme"`, `"type":"scheme","storedPaymentMethodId":"`+v+`"`, 1), "paymentMethod.storedPaymentMethodId"},
		{"payments", strings.Replace(sprintf(payFmt, `"channel":"Web"`), `"type":"scheme"`, `"type":"sch`+v+`"`, 1), "paymentMethod.type"},
		{"payments", sprintf(payFmt, `"additionalData":{"key`+v+`":"x"}`), "additionalData.key" + unescape(v)},
	}
}

func freeTextPlaces(v string) []place {
	return []place{
		{"sessions", sprintf(sessionFmt, `"shopperName":{"firstName":"A`+v+`","lastName":"B"}`), "shopperName.firstName"},
		{"payments", sprintf(payFmt, `"shopperName":{"firstName":"A","lastName":"B`+v+`"}`), "shopperName.lastName"},
		{"sessions", sprintf(sessionFmt, `"lineItems":[{"quantity":1,"description":"Shoes `+v+`"}]`), "lineItems[0].description"},
		{"refunds", `{"amount":{"value":1,"currency":"EUR"},"lineItems":[{"quantity":1,"description":"` + v + `"}]}`, "lineItems[0].description"},
		{"payments", sprintf(payFmt, `"billingAddress":{"street":"Main `+v+`","city":"A","country":"NL"}`), "billingAddress.street"},
		{"payments", sprintf(payFmt, `"deliveryAddress":{"city":"`+v+`"}`), "deliveryAddress.city"},
		{"payments", strings.Replace(sprintf(payFmt, `"channel":"Web"`), `"type":"scheme"`, `"type":"scheme","holderName":"J `+v+`"`, 1), "paymentMethod.holderName"},
		{"payments", sprintf(payFmt, `"browserInfo":{"userAgent":"Mozilla `+v+`"}`), "browserInfo.userAgent"},
		{"payments", sprintf(payFmt, `"riskData":{"basket":[{"name":"`+v+`"}]}`), "riskData.basket[0].name"},
		{"payments", sprintf(payFmt, `"additionalData":{"k":"`+v+`"}`), "additionalData.k"},
		{"details", `{"details":{"payload":"` + v + `"}}`, "details.payload"},
	}
}

func sprintf(format, s string) string { return strings.Replace(format, "%s", s, 1) }

// unescape returns the text the JSON string content v spells, as decoded
// for a path.
func unescape(v string) string {
	var s string
	_ = json.Unmarshal([]byte(`"`+v+`"`), &s)
	return s
}

// Each field is held to the rules of its class: identifiers refuse
// invisible format characters and noncharacters, free text only the
// bidirectional overrides (and every string unpaired surrogates); the
// error is one 400 naming the field.
func TestTextRulesByFieldClass(t *testing.T) {
	// judge decodes each place's body: accepted when ok, else refused
	// naming its field.
	judge := func(t *testing.T, places []place, what string, ok bool) {
		t.Helper()
		for _, p := range places {
			err := decoders[p.endpoint](p.body)
			e := apperr.As(err)
			switch {
			case ok && err != nil:
				t.Fatalf("%s with %s: %v (%+v)", p.endpoint, what, err, e.Fields)
			case ok:
			case err == nil || e.Kind != apperr.Invalid || len(e.Fields) == 0:
				t.Fatalf("%s %s: %v, want a 400 naming %s", p.endpoint, p.body, err, p.field)
			case !slices.ContainsFunc(e.Fields, func(f apperr.FieldError) bool { return f.Field == p.field }):
				t.Fatalf("%s with %s: fields %+v, want %s", p.endpoint, what, e.Fields, p.field)
			}
		}
	}
	for _, v := range []struct {
		name, text       string
		identifier, free bool // accepted in the class
	}{
		{"plain", "x-1", true, true},
		{"accented", `\u00e9t\u00e9`, true, true},
		{"RLO", `\u202e`, false, false},
		{"RLO unescaped", "\u202e", false, false},
		{"lone surrogate", `\ud800`, false, false},
		{"zero-width space", `\u200b`, false, true},
		{"ZWNJ (Persian)", `\u0645\u06cc\u200c\u0634\u0648\u062f`, false, true},
		{"ZWJ (emoji)", `\ud83d\udc69\u200d\ud83d\udcbb`, false, true},
		{"noncharacter", `\ufdd0`, false, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			judge(t, identifierPlaces(v.text), v.name, v.identifier)
			judge(t, freeTextPlaces(v.text), v.name, v.free)
		})
	}
}

// The stored-payment-method deletion's path id and shopperReference query
// value are identifiers, not UTF-8 checked by any JSON reader.
func TestDeleteStoredMethodIdentifiers(t *testing.T) {
	for _, tc := range []struct{ id, shopper, field string }{
		{"M5N7TQ4TG5PFWR50", "guest-1", ""},
		{"M5N7\u202e", "guest-1", "storedPaymentMethodId"},
		{"M5N7\xff", "guest-1", "storedPaymentMethodId"},
		{"M5N7", "guest\u200b1", "shopperReference"},
		{"M5N7", "guest\xfe1", "shopperReference"},
	} {
		_, err := DecodeDeleteStoredMethod(tc.id, tc.shopper)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%q %q: %v", tc.id, tc.shopper, err)
			}
			continue
		}
		if e := apperr.As(err); e.Kind != apperr.Invalid || len(e.Fields) != 1 || e.Fields[0].Field != tc.field {
			t.Errorf("%q %q: %v, want a 400 naming %s", tc.id, tc.shopper, err, tc.field)
		}
	}
}
