package paymentsapp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/payments"
)

// checkParsed is the property every body parser keeps: a refusal is a 400
// naming what is wrong (never an internal error, so never a 5xx), and an
// accepted body is valid JSON with no name given twice, no two names of
// one object that differ only in letter case, no text encoding/json reads
// otherwise than spelled, no bidirectional override in any string, and ids
// (the identifiers decoded from it) free of controls, invisible format
// characters and noncharacters — each checked here without jsonin.
func checkParsed(t *testing.T, body []byte, err error, ids ...string) {
	t.Helper()
	if err != nil {
		e := apperr.As(err)
		if e.Kind != apperr.Invalid || e.Message == "" {
			t.Fatalf("%q: refused with %v (kind %d), want a 400", body, err, e.Kind)
		}
		return
	}
	if !json.Valid(body) {
		t.Fatalf("%q: accepted invalid JSON", body)
	}
	if p, dup := jsonin.DuplicateKey(body); dup {
		t.Fatalf("%q: accepted a duplicate %s", body, p)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%q: %v", body, err)
	}
	decoded := 0
	eachJSON(v, func(obj map[string]any) {
		for a := range obj {
			for b := range obj {
				if a != b && strings.EqualFold(a, b) {
					t.Fatalf("%q: accepted %q and %q in one object", body, a, b)
				}
			}
		}
	}, func(s string, name bool) {
		decoded += strings.Count(s, "\ufffd")
		for _, r := range s {
			if !name && unicode.In(r, unicode.Bidi_Control) && r != 0x061C && r != 0x200E && r != 0x200F {
				t.Fatalf("%q: accepted U+%04X in %q", body, r, s)
			}
		}
	})
	if spelled := spelledReplacement(body); decoded != spelled {
		t.Fatalf("%q: accepted text encoding/json reads otherwise (%d U+FFFD decoded, %d spelled)", body, decoded, spelled)
	}
	for _, id := range ids {
		for _, r := range id {
			if unicode.IsControl(r) || unicode.In(r, unicode.Cf) || r&0xFFFE == 0xFFFE || 0xFDD0 <= r && r <= 0xFDEF {
				t.Fatalf("%q: accepted the identifier %q (U+%04X)", body, id, r)
			}
		}
	}
}

// eachJSON calls obj with every object of v and str with every string (a
// member name or a value) at any depth.
func eachJSON(v any, obj func(map[string]any), str func(s string, name bool)) {
	switch v := v.(type) {
	case map[string]any:
		obj(v)
		for k, e := range v {
			str(k, true)
			eachJSON(e, obj, str)
		}
	case []any:
		for _, e := range v {
			eachJSON(e, obj, str)
		}
	case string:
		str(v, false)
	}
}

// spelledReplacement counts the U+FFFD body spells: literally or as \ufffd.
func spelledReplacement(body []byte) int {
	n := strings.Count(string(body), "\ufffd")
	for i := 0; i < len(body)-1; i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] == 'u' && i+6 <= len(body) && strings.EqualFold(string(body[i+2:i+6]), "fffd") {
			n++
		}
		i++
	}
	return n
}

func FuzzParsePayment(f *testing.F) {
	for _, s := range []string{
		`{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111"},"returnUrl":"https://shop.example/r"}`,
		`{"amount":{"value":1000,"currency":"XXX"},"paymentMethod":{"type":"scheme"},"returnUrl":"https://s.example/","additionalData":{"Metadata.x":"y"}}`,
		`{"amount":{"value":1,"currency":"EUR"},"amount":{"value":2,"currency":"EUR"}}`,
		`{"lineItems":[{"quantity":1,"description":"a"}],"browserInfo":{"language":"en"},"shopperName":{"firstName":"A","lastName":"B"}}`,
		`{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":{"type":"x","Type":"scheme"},"returnUrl":"https://s.example/","reference":"a\ud800b"}`,
		`{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":{"type":"scheme","holderName":"\u202eJ"},"returnUrl":"https://s.example/","reference":"r\u200b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodePayment(body)
		checkParsed(t, body, err, in.Reference, in.ShopperReference, in.StoredMethodID)
	})
}

func FuzzParseSession(f *testing.F) {
	for _, s := range []string{
		`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"o-1"}`,
		`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","blockedPaymentMethods":["bacs"],"Splits":[]}`,
		`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","shopperName":{"firstName":"\u0645\u200c","lastName":"\u2066B"},"lineItems":[{"quantity":1,"id":"\ufdd0"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodeSession(body)
		checkParsed(t, body, err, append(lineItemIDs(in.LineItems), in.Reference, in.ShopperReference)...)
	})
}

func FuzzModificationBody(f *testing.F) {
	for _, s := range []string{`{"amount":{"value":34,"currency":"EUR"},"reference":"c-1"}`, `{"reference":"r"}`, `{}`, `{"amount":{"value":-1,"currency":"eur"}}`, `{"reference":"\udc00"}`, `{"reference":"a\u202eb"}`} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, wantAmount bool) {
		_, ref, err := modificationBody(body, wantAmount, nil)
		checkParsed(t, body, err, ref)
	})
}

// FuzzDetailsAndPaymentMethods decodes the bodies of the two endpoints
// that pass component data through. A refused body never reaches the
// upstream: the route handler calls the domain only with a decoded input.
func FuzzDetailsAndPaymentMethods(f *testing.F) {
	f.Add([]byte(`{"details":{"threeDSResult":"password"}}`), false)
	f.Add([]byte(`{"details":{"redirectResult":"X"},"paymentData":"Ab02"}`), false)
	f.Add([]byte(`{"amount":{"value":1000,"currency":"EUR"},"countryCode":"NL","channel":"Web"}`), true)
	f.Add([]byte(`{"blockedPaymentMethods":["a","a"],"shopperLocale":"nl-NL"}`), true)
	f.Fuzz(func(t *testing.T, body []byte, methods bool) {
		var err error
		var ids []string
		if methods {
			var in payments.PaymentMethodsInput
			in, err = DecodePaymentMethods(body)
			ids = append(append(ids, in.ShopperReference), append(in.AllowedPaymentMethods, in.BlockedPaymentMethods...)...)
		} else {
			var in payments.DetailsInput
			in, err = DecodeDetails(body)
			ids = append(ids, in.Reference)
		}
		checkParsed(t, body, err, ids...)
	})
}

func FuzzDecodeRefund(f *testing.F) {
	for _, s := range []string{`{"amount":{"value":34,"currency":"EUR"},"reference":"r-1"}`, `{"amount":{"value":1,"currency":"EUR"},"lineItems":[{"quantity":1}]}`, `{}`, `{"splits":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodeRefund(body)
		checkParsed(t, body, err, append(lineItemIDs(in.LineItems), in.Reference)...)
	})
}

func lineItemIDs(items []payments.LineItem) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}
