package payments

import (
	"encoding/json"

	"github.com/yp/paysvc/shared/money"
)

// The typed inputs of the payment operations. The app layer
// (shared/paymentsapp) decodes and validates the merchant's JSON into them;
// the domain trusts their shape and applies the money rules.

// SessionInput is a validated POST sessions body.
type SessionInput struct {
	Amount                   money.Amount
	ReturnURL                string
	Reference                string
	ShopperEmail             string
	TelephoneNumber          string
	ShopperName              *Name
	Mode                     string
	BlockedPaymentMethods    []string
	ShopperLocale            string
	CountryCode              string // "" for the merchant's country
	LineItems                []LineItem
	ShopperReference         string
	StorePaymentMethod       bool
	StorePaymentMethodMode   string
	RecurringProcessingModel string
}

// PaymentInput is a validated POST payments body.
type PaymentInput struct {
	Amount                   money.Amount
	PaymentMethod            json.RawMessage
	StoredMethodID           string
	ReturnURL                string
	Reference                string
	AdditionalData           map[string]string
	ShopperReference         string
	ShopperInteraction       string
	RecurringProcessingModel string
	IndustryUsage            string
	// StateData are the client component's other fields, passed through.
	StateData map[string]json.RawMessage
}

// StorePaymentMethod reports whether the payment asks to store its method.
func (in PaymentInput) StorePaymentMethod() bool {
	return string(in.StateData["storePaymentMethod"]) == "true"
}

// AuthorisationType is "PreAuth" for a pre-authorisation, else "".
func (in PaymentInput) AuthorisationType() string {
	if in.AdditionalData[KeyAuthorisationType] == AuthorisationPreAuth {
		return AuthorisationPreAuth
	}
	return ""
}

// DetailsInput is a validated POST payments/details body.
type DetailsInput struct {
	Details     json.RawMessage
	PaymentData string
	// Reference is the payment's reference, when the merchant sends it:
	// it binds a payment that started with an action (pending.go).
	Reference string
}

// PaymentMethodsInput is a validated POST payment-methods body.
type PaymentMethodsInput struct {
	Amount                money.Amount
	CountryCode           string // "" for the merchant's country
	ShopperLocale         string
	Channel               string
	AllowedPaymentMethods []string
	BlockedPaymentMethods []string
	ShopperReference      string
}

// DeleteStoredMethodInput names a shopper's stored payment method.
type DeleteStoredMethodInput struct {
	StoredPaymentMethodID string
	ShopperReference      string
}
