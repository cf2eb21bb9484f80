package simulator

import (
	"context"
	"net/http"
	"slices"
	"strings"
)

// methodDef is one entry of the payment-method catalogue.
type methodDef struct {
	Type       string
	Name       string
	Brands     []string
	Countries  []string // empty: every country
	Currencies []string // empty: every currency
}

// catalogue returns the payment methods the simulator offers.
func catalogue() []methodDef {
	eu := []string{"AT", "BE", "DE", "DK", "ES", "FI", "FR", "GB", "IE", "IT", "NL", "NO", "PL", "PT", "SE", "CH"}
	return []methodDef{
		{Type: "scheme", Name: "Cards", Brands: []string{"visa", "mc", "amex", "maestro", "cup", "diners", "discover", "jcb"}},
		{Type: "applepay", Name: "Apple Pay"},
		{Type: "googlepay", Name: "Google Pay"},
		{Type: "paypal", Name: "PayPal"},
		{Type: "ideal", Name: "iDEAL", Countries: []string{"NL"}, Currencies: []string{"EUR"}},
		{Type: "bcmc", Name: "Bancontact card", Countries: []string{"BE"}, Currencies: []string{"EUR"}},
		{Type: "klarna", Name: "Pay later with Klarna.", Countries: eu, Currencies: []string{"EUR", "GBP", "SEK", "NOK", "DKK", "CHF", "PLN"}},
		{Type: "klarna_paynow", Name: "Pay now with Klarna.", Countries: eu, Currencies: []string{"EUR", "GBP", "SEK", "NOK", "DKK", "CHF", "PLN"}},
		{Type: "klarna_account", Name: "Pay over time with Klarna.", Countries: eu, Currencies: []string{"EUR", "GBP", "SEK", "NOK", "DKK", "CHF", "PLN"}},
		{Type: "sepadirectdebit", Name: "SEPA Direct Debit", Currencies: []string{"EUR"}},
		{Type: "directdebit_GB", Name: "BACS Direct Debit", Countries: []string{"GB"}, Currencies: []string{"GBP"}},
		{Type: "twint", Name: "TWINT", Countries: []string{"CH"}, Currencies: []string{"CHF"}},
		{Type: "swish", Name: "Swish", Countries: []string{"SE"}, Currencies: []string{"SEK"}},
		{Type: "blik", Name: "BLIK", Countries: []string{"PL"}, Currencies: []string{"PLN"}},
		{Type: "mobilepay", Name: "MobilePay", Countries: []string{"DK", "FI"}, Currencies: []string{"DKK", "EUR"}},
		{Type: "trustly", Name: "Trustly", Countries: []string{"DE", "DK", "EE", "ES", "FI", "GB", "LT", "LV", "NL", "NO", "PL", "SE"}},
	}
}

// paymentMethodsIn is a /paymentMethods request.
type paymentMethodsIn struct {
	MerchantAccount       string    `json:"merchantAccount"`
	Amount                *amountIn `json:"amount"`
	CountryCode           string    `json:"countryCode"`
	ShopperReference      string    `json:"shopperReference"`
	AllowedPaymentMethods []string  `json:"allowedPaymentMethods"`
	BlockedPaymentMethods []string  `json:"blockedPaymentMethods"`
	ShopperInteraction    string    `json:"shopperInteraction"`
}

type methodListed struct {
	Brands        []string          `json:"brands,omitempty"`
	Configuration map[string]string `json:"configuration,omitempty"`
	Name          string            `json:"name"`
	Type          string            `json:"type"`
}

type storedListed struct {
	Brand                              string   `json:"brand"`
	ExpiryMonth                        string   `json:"expiryMonth"`
	ExpiryYear                         string   `json:"expiryYear"`
	HolderName                         string   `json:"holderName,omitempty"`
	ID                                 string   `json:"id"`
	LastFour                           string   `json:"lastFour"`
	Name                               string   `json:"name"`
	SupportedRecurringProcessingModels []string `json:"supportedRecurringProcessingModels"`
	SupportedShopperInteractions       []string `json:"supportedShopperInteractions"`
	Type                               string   `json:"type"`
}

type paymentMethodsOut struct {
	PaymentMethods       []methodListed `json:"paymentMethods"`
	StoredPaymentMethods []storedListed `json:"storedPaymentMethods,omitempty"`
}

func (s *Simulator) handlePaymentMethods(_ context.Context, c *call) result {
	var in paymentMethodsIn
	if e := decodeJSON(c.body, &in); e != nil {
		return errorResult(e)
	}
	if e := s.checkMerchant(in.MerchantAccount); e != nil {
		return errorResult(e)
	}
	currency := ""
	if in.Amount != nil {
		a, e := checkAmount(in.Amount, true)
		if e != nil {
			return errorResult(e)
		}
		currency = a.Currency
	}
	country := strings.ToUpper(in.CountryCode)
	out := paymentMethodsOut{PaymentMethods: []methodListed{}}
	for _, m := range catalogue() {
		if len(in.AllowedPaymentMethods) > 0 && !slices.Contains(in.AllowedPaymentMethods, m.Type) ||
			slices.Contains(in.BlockedPaymentMethods, m.Type) ||
			country != "" && len(m.Countries) > 0 && !slices.Contains(m.Countries, country) ||
			currency != "" && len(m.Currencies) > 0 && !slices.Contains(m.Currencies, currency) {
			continue
		}
		l := methodListed{Brands: m.Brands, Name: m.Name, Type: m.Type}
		switch m.Type {
		case "applepay":
			l.Configuration = map[string]string{"merchantId": "000000000200001", "merchantName": in.MerchantAccount}
		case "googlepay":
			l.Configuration = map[string]string{"merchantId": "1000", "gatewayMerchantId": in.MerchantAccount}
		}
		out.PaymentMethods = append(out.PaymentMethods, l)
	}
	if in.ShopperReference != "" && !slices.Contains(in.BlockedPaymentMethods, "scheme") {
		s.mu.Lock()
		for _, t := range s.tokens[tokenKey{in.MerchantAccount, in.ShopperReference}] {
			out.StoredPaymentMethods = append(out.StoredPaymentMethods, storedListed{
				Brand: t.Card.Brand, ExpiryMonth: t.Card.ExpiryMonth, ExpiryYear: t.Card.ExpiryYear,
				HolderName: t.Card.HolderName, ID: t.ID, LastFour: t.Card.last4(), Name: brandName(t.Card.Brand),
				SupportedRecurringProcessingModels: []string{"CardOnFile", "Subscription", "UnscheduledCardOnFile"},
				SupportedShopperInteractions:       []string{"Ecommerce", "ContAuth"},
				Type:                               "scheme",
			})
		}
		s.mu.Unlock()
	}
	return jsonResult(http.StatusOK, out)
}

func brandName(brand string) string {
	switch brand {
	case "visa":
		return "VISA"
	case "mc":
		return "MasterCard"
	case "amex":
		return "American Express"
	}
	return strings.ToUpper(brand)
}

// findToken returns a shopper's token by id (caller holds s.mu).
func (s *Simulator) findToken(merchantAccount, shopperReference, id string) *storedMethod {
	t, _ := find(s.tokens[tokenKey{merchantAccount, shopperReference}], func(t *storedMethod) bool { return t.ID == id })
	return t
}

func (s *Simulator) handleDeleteStored(_ context.Context, c *call) result {
	id := c.r.PathValue("id")
	q := c.r.URL.Query()
	ma, shopper := q.Get("merchantAccount"), q.Get("shopperReference")
	if e := s.checkMerchant(ma); e != nil {
		return errorResult(e)
	}
	if shopper == "" {
		return errorResult(validationError(codeGeneric, "Required field 'shopperReference' is not provided."))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tokenKey{ma, shopper}
	list := s.tokens[k]
	i := slices.IndexFunc(list, func(t *storedMethod) bool { return t.ID == id })
	if i < 0 {
		return errorResult(validationError(codeContractMissing, "Contract not found"))
	}
	s.tokens[k] = slices.Delete(list, i, i+1)
	return result{status: http.StatusNoContent}
}

// StoredPaymentMethods returns the ids of a shopper's tokens.
func (s *Simulator) StoredPaymentMethods(merchantAccount, shopperReference string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, t := range s.tokens[tokenKey{merchantAccount, shopperReference}] {
		ids = append(ids, t.ID)
	}
	return ids
}
