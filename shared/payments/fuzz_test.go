package payments

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
)

// countingUpstream answers every call with an empty success and counts them.
type countingUpstream struct{ calls atomic.Int64 }

func (u *countingUpstream) CreateSession(context.Context, upstream.SessionRequest, string) (upstream.SessionResponse, error) {
	u.calls.Add(1)
	return upstream.SessionResponse{}, nil
}
func (u *countingUpstream) PaymentMethods(context.Context, upstream.PaymentMethodsRequest, string) (upstream.PaymentMethodsResponse, error) {
	u.calls.Add(1)
	return upstream.PaymentMethodsResponse{}, nil
}
func (u *countingUpstream) Payments(context.Context, upstream.PaymentRequest, string) (upstream.PaymentResponse, error) {
	u.calls.Add(1)
	return upstream.PaymentResponse{}, nil
}
func (u *countingUpstream) PaymentDetails(context.Context, upstream.DetailsRequest, string) (upstream.PaymentResponse, error) {
	u.calls.Add(1)
	return upstream.PaymentResponse{}, nil
}
func (u *countingUpstream) Capture(context.Context, string, upstream.CaptureRequest, string) (upstream.ModificationResponse, error) {
	u.calls.Add(1)
	return upstream.ModificationResponse{}, nil
}
func (u *countingUpstream) Reverse(context.Context, string, upstream.ReversalRequest, string) (upstream.ModificationResponse, error) {
	u.calls.Add(1)
	return upstream.ModificationResponse{}, nil
}
func (u *countingUpstream) UpdateAmount(context.Context, string, upstream.AmountUpdateRequest, string) (upstream.ModificationResponse, error) {
	u.calls.Add(1)
	return upstream.ModificationResponse{}, nil
}
func (u *countingUpstream) Refund(context.Context, string, upstream.RefundRequest, string) (upstream.ModificationResponse, error) {
	u.calls.Add(1)
	return upstream.ModificationResponse{}, nil
}
func (u *countingUpstream) DeleteStoredPaymentMethod(context.Context, upstream.DeleteStoredPaymentMethodRequest) error {
	u.calls.Add(1)
	return nil
}

var _ Upstream = (*countingUpstream)(nil)

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
		_, err := ParsePayment(body)
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
		_, err := ParseSession(body)
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

func FuzzParseRefund(f *testing.F) {
	for _, s := range []string{`{"amount":{"value":34,"currency":"EUR"},"reference":"r-1"}`, `{"amount":{"value":1,"currency":"EUR"},"lineItems":[{"quantity":1}]}`, `{}`, `{"splits":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := ParseRefund(body)
		checkParsed(t, body, err)
	})
}

// FuzzDetailsAndPaymentMethods drives the two endpoints whose parsing sits in
// the service: a refused body never reaches the upstream.
func FuzzDetailsAndPaymentMethods(f *testing.F) {
	f.Add([]byte(`{"details":{"threeDSResult":"password"}}`), false)
	f.Add([]byte(`{"details":{"redirectResult":"X"},"paymentData":"Ab02"}`), false)
	f.Add([]byte(`{"amount":{"value":1000,"currency":"EUR"},"countryCode":"NL","channel":"Web"}`), true)
	f.Add([]byte(`{"blockedPaymentMethods":["a","a"],"shopperLocale":"nl-NL"}`), true)
	up := &countingUpstream{}
	s := NewService(nil, up, clock.System{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	m := tenant.Merchant{ID: "m_a", Country: "NL", UpstreamAccount: "AlphaECOM", Active: true, Ecommerce: true}
	site := tenant.Site{ID: "site_a", MerchantID: "m_a"}
	f.Fuzz(func(t *testing.T, body []byte, methods bool) {
		before := up.calls.Load()
		var err error
		if methods {
			_, err = s.PaymentMethods(context.Background(), m, site, body)
		} else {
			_, err = s.SubmitDetails(context.Background(), m, site, body)
		}
		called := up.calls.Load() != before
		checkParsed(t, body, err)
		if err != nil && called {
			t.Fatalf("%q: refused after calling the upstream", body)
		}
	})
}
