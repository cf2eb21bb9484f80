package paymentsapp

import (
	"encoding/json"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/jsonin"
)

// checkParsed is the property every body parser keeps: a refusal is a 400
// naming what is wrong (never an internal error, so never a 5xx), and an
// accepted body is valid JSON with no name given twice.
func checkParsed(t *testing.T, body []byte, err error) {
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
}

func FuzzParsePayment(f *testing.F) {
	for _, s := range []string{
		`{"amount":{"value":1000,"currency":"EUR"},"paymentMethod":{"type":"scheme","encryptedCardNumber":"test_4111111111111111"},"returnUrl":"https://shop.example/r"}`,
		`{"amount":{"value":1000,"currency":"XXX"},"paymentMethod":{"type":"scheme"},"returnUrl":"https://s.example/","additionalData":{"Metadata.x":"y"}}`,
		`{"amount":{"value":1,"currency":"EUR"},"amount":{"value":2,"currency":"EUR"}}`,
		`{"lineItems":[{"quantity":1,"description":"a"}],"browserInfo":{"language":"en"},"shopperName":{"firstName":"A","lastName":"B"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := DecodePayment(body)
		checkParsed(t, body, err)
	})
}

func FuzzParseSession(f *testing.F) {
	for _, s := range []string{
		`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","reference":"o-1"}`,
		`{"amount":{"value":1000,"currency":"EUR"},"returnUrl":"https://shop.example/r","blockedPaymentMethods":["bacs"],"Splits":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := DecodeSession(body)
		checkParsed(t, body, err)
	})
}

func FuzzModificationBody(f *testing.F) {
	for _, s := range []string{`{"amount":{"value":34,"currency":"EUR"},"reference":"c-1"}`, `{"reference":"r"}`, `{}`, `{"amount":{"value":-1,"currency":"eur"}}`} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, wantAmount bool) {
		_, _, err := modificationBody(body, wantAmount, nil)
		checkParsed(t, body, err)
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
		if methods {
			_, err = DecodePaymentMethods(body)
		} else {
			_, err = DecodeDetails(body)
		}
		checkParsed(t, body, err)
	})
}
