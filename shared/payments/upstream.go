package payments

import (
	"encoding/json"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/tenant"
)

// Shopper interactions.
const (
	ShopperInteractionEcommerce = "Ecommerce"
	ShopperInteractionContAuth  = "ContAuth"
)

// Name is a shopper's name.
type Name struct {
	FirstName string
	LastName  string
}

// SessionRequest creates a checkout session.
type SessionRequest struct {
	IdempotencyKey           string
	MerchantAccount          string
	Amount                   money.Amount
	Reference                string
	ReturnURL                string
	CountryCode              string
	ShopperInteraction       string
	BlockedPaymentMethods    []string
	Splits                   []Split
	Metadata                 map[string]string
	LineItems                []LineItem
	ShopperReference         string
	ShopperEmail             string
	TelephoneNumber          string
	ShopperName              *Name
	ShopperLocale            string
	StorePaymentMethod       bool
	StorePaymentMethodMode   string
	RecurringProcessingModel string
	Mode                     string
	// CaptureMode is the merchant's, stated to the platform so that its
	// account default cannot disagree with the record.
	CaptureMode tenant.CaptureMode
}

// SessionAnswer is a session the platform created.
type SessionAnswer struct {
	ID          string
	SessionData string
	ExpiresAt   time.Time // zero: the platform gave none
	URL         string
}

// PaymentMethodsRequest lists the payment methods for an amount.
type PaymentMethodsRequest struct {
	IdempotencyKey        string
	MerchantAccount       string
	Amount                money.Amount
	CountryCode           string
	ShopperLocale         string
	Channel               string
	ShopperReference      string
	AllowedPaymentMethods []string
	BlockedPaymentMethods []string
}

// PaymentRequest starts a payment.
type PaymentRequest struct {
	IdempotencyKey           string
	MerchantAccount          string
	Amount                   money.Amount
	Reference                string
	ReturnURL                string
	CountryCode              string
	ShopperInteraction       string
	RecurringProcessingModel string
	IndustryUsage            string
	ShopperReference         string
	Splits                   []Split
	Metadata                 map[string]string
	AdditionalData           map[string]string
	// CaptureMode is the merchant's, stated to the platform (as sessions).
	CaptureMode tenant.CaptureMode
	// PaymentMethod and StateData are the client component's, passed
	// through unchanged (StateData: its other top-level fields; a field
	// the service sets always wins over one of them).
	PaymentMethod json.RawMessage
	StateData     map[string]json.RawMessage
}

// DetailsRequest submits an action's details.
type DetailsRequest struct {
	IdempotencyKey string
	Details        json.RawMessage
	PaymentData    string
}

// PaymentAnswer is the platform's answer to a payment or its details.
type PaymentAnswer struct {
	ResultCode        string
	PSPReference      string
	Action            json.RawMessage // passed unchanged to the client component
	RefusalReason     string
	RefusalReasonCode string
	MerchantReference string
	Amount            *money.Amount
	// PaymentMethod is the brand the platform answered, else the type.
	PaymentMethod string
	// ActionPaymentData is the paymentData of Action ("" for none).
	ActionPaymentData string
}

// DeleteStoredMethodRequest deletes a shopper's stored payment method.
type DeleteStoredMethodRequest struct {
	StoredPaymentMethodID string
	MerchantAccount       string
	ShopperReference      string
}
