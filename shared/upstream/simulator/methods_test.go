package simulator

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

func methodTypes(t *testing.T, r upstream.PaymentMethodsResponse) []string {
	t.Helper()
	var out []string
	for _, raw := range r.PaymentMethods {
		var m struct {
			Type   string   `json:"type"`
			Name   string   `json:"name"`
			Brands []string `json:"brands"`
		}
		if err := json.Unmarshal(raw, &m); err != nil || m.Name == "" {
			t.Fatalf("method %s: %v", raw, err)
		}
		if m.Type == "scheme" && !slices.Contains(m.Brands, "visa") {
			t.Fatalf("scheme without brands: %s", raw)
		}
		out = append(out, m.Type)
	}
	return out
}

func TestPaymentMethodsFilters(t *testing.T) {
	e := newEnv(t)
	eurAmount := eur(1000)
	sek := money.Amount{Value: 1000, Currency: "SEK"}
	tests := []struct {
		name     string
		req      upstream.PaymentMethodsRequest
		want     []string
		excluded []string
	}{
		{"all", upstream.PaymentMethodsRequest{}, []string{"scheme", "ideal", "paypal", "klarna", "sepadirectdebit", "directdebit_GB", "swish"}, nil},
		{"NL EUR", upstream.PaymentMethodsRequest{CountryCode: "NL", Amount: &eurAmount}, []string{"scheme", "ideal", "paypal", "klarna", "sepadirectdebit", "applepay", "googlepay"}, []string{"swish", "directdebit_GB", "bcmc", "twint"}},
		{"SE SEK", upstream.PaymentMethodsRequest{CountryCode: "SE", Amount: &sek}, []string{"scheme", "swish", "klarna"}, []string{"ideal", "sepadirectdebit"}},
		{"blocked", upstream.PaymentMethodsRequest{CountryCode: "NL", BlockedPaymentMethods: []string{"sepadirectdebit", "bacs", "directdebit_GB", "paypal"}}, []string{"scheme", "ideal"}, []string{"sepadirectdebit", "paypal", "directdebit_GB"}},
		{"allowed", upstream.PaymentMethodsRequest{AllowedPaymentMethods: []string{"scheme", "ideal"}}, []string{"scheme", "ideal"}, []string{"paypal", "klarna"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.MerchantAccount = testMerchant
			r, err := e.client.PaymentMethods(context.Background(), tt.req, "")
			must(t, err)
			got := methodTypes(t, r)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("missing %s in %v", w, got)
				}
			}
			for _, x := range tt.excluded {
				if slices.Contains(got, x) {
					t.Errorf("%s not filtered out of %v", x, got)
				}
			}
			if tt.name == "allowed" && len(got) != 2 {
				t.Errorf("allowed list = %v", got)
			}
			if len(r.StoredPaymentMethods) != 0 {
				t.Errorf("stored methods without shopperReference")
			}
		})
	}
}
