package upstream

import (
	"context"
	"encoding/json"
	"time"

	"github.com/yp/paysvc/shared/money"
)

// SessionRequest is the body of POST /sessions (CreateCheckoutSessionRequest).
// Amount, MerchantAccount, Reference and ReturnURL are required upstream.
type SessionRequest struct {
	MerchantAccount       string            `json:"merchantAccount"`
	Amount                money.Amount      `json:"amount"`
	Reference             string            `json:"reference"`
	ReturnURL             string            `json:"returnUrl"`
	CountryCode           string            `json:"countryCode,omitempty"`
	ShopperInteraction    string            `json:"shopperInteraction,omitempty"`
	BlockedPaymentMethods []string          `json:"blockedPaymentMethods,omitempty"`
	AllowedPaymentMethods []string          `json:"allowedPaymentMethods,omitempty"`
	Splits                []Split           `json:"splits,omitempty"`
	Metadata              map[string]string `json:"metadata,omitempty"`
	// AdditionalData carries manualCapture "true" for manual capture;
	// CaptureDelayHours 0 captures at authorisation (both v71
	// CreateCheckoutSessionRequest fields).
	AdditionalData           map[string]string `json:"additionalData,omitempty"`
	CaptureDelayHours        *int              `json:"captureDelayHours,omitempty"`
	LineItems                []LineItem        `json:"lineItems,omitempty"`
	ShopperReference         string            `json:"shopperReference,omitempty"`
	ShopperEmail             string            `json:"shopperEmail,omitempty"`
	TelephoneNumber          string            `json:"telephoneNumber,omitempty"`
	ShopperName              *Name             `json:"shopperName,omitempty"`
	ShopperLocale            string            `json:"shopperLocale,omitempty"`
	StorePaymentMethod       *bool             `json:"storePaymentMethod,omitempty"`
	StorePaymentMethodMode   string            `json:"storePaymentMethodMode,omitempty"`
	RecurringProcessingModel string            `json:"recurringProcessingModel,omitempty"`
	// Mode is "embedded" (drop-in on the merchant's page) or "hosted".
	Mode string `json:"mode,omitempty"`
	// Channel is "Web", "iOS" or "Android".
	Channel string `json:"channel,omitempty"`
	// ExpiresAt overrides the session expiry (default one hour upstream).
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// SessionResponse is the 201 answer of POST /sessions.
type SessionResponse struct {
	ID                       string            `json:"id"`
	SessionData              string            `json:"sessionData"`
	Amount                   money.Amount      `json:"amount"`
	Reference                string            `json:"reference"`
	ReturnURL                string            `json:"returnUrl"`
	ExpiresAt                time.Time         `json:"expiresAt"`
	MerchantAccount          string            `json:"merchantAccount"`
	Mode                     string            `json:"mode,omitempty"`
	CountryCode              string            `json:"countryCode,omitempty"`
	ShopperLocale            string            `json:"shopperLocale,omitempty"`
	ShopperReference         string            `json:"shopperReference,omitempty"`
	ShopperInteraction       string            `json:"shopperInteraction,omitempty"`
	StorePaymentMethodMode   string            `json:"storePaymentMethodMode,omitempty"`
	RecurringProcessingModel string            `json:"recurringProcessingModel,omitempty"`
	BlockedPaymentMethods    []string          `json:"blockedPaymentMethods,omitempty"`
	Metadata                 map[string]string `json:"metadata,omitempty"`
	// URL is the hosted checkout page (mode "hosted" only).
	URL string `json:"url,omitempty"`
	// Raw is the whole upstream response body.
	Raw []byte `json:"-"`
}

// CreateSession creates a checkout session for the drop-in (POST /sessions,
// answered 201).
func (c *Client) CreateSession(ctx context.Context, req SessionRequest, idempotencyKey string) (SessionResponse, error) {
	out, raw, err := post[SessionResponse](ctx, c, "/sessions", req, idempotencyKey)
	out.Raw = raw
	return out, err
}

// PaymentMethodsRequest is the body of POST /paymentMethods.
type PaymentMethodsRequest struct {
	MerchantAccount       string        `json:"merchantAccount"`
	Amount                *money.Amount `json:"amount,omitempty"`
	CountryCode           string        `json:"countryCode,omitempty"`
	ShopperLocale         string        `json:"shopperLocale,omitempty"`
	ShopperReference      string        `json:"shopperReference,omitempty"`
	AllowedPaymentMethods []string      `json:"allowedPaymentMethods,omitempty"`
	BlockedPaymentMethods []string      `json:"blockedPaymentMethods,omitempty"`
	Channel               string        `json:"channel,omitempty"`
	// ShopperInteraction filters stored payment methods by supported interaction.
	ShopperInteraction string `json:"shopperInteraction,omitempty"`
}

// PaymentMethodsResponse is the answer of POST /paymentMethods. The elements
// are kept as raw JSON so they pass through to the client component unchanged.
type PaymentMethodsResponse struct {
	PaymentMethods       []json.RawMessage `json:"paymentMethods,omitempty"`
	StoredPaymentMethods []json.RawMessage `json:"storedPaymentMethods,omitempty"`
	// Raw is the whole upstream response body.
	Raw []byte `json:"-"`
}

// PaymentMethods lists the payment methods available for a payment
// (POST /paymentMethods, answered 200).
func (c *Client) PaymentMethods(ctx context.Context, req PaymentMethodsRequest, idempotencyKey string) (PaymentMethodsResponse, error) {
	out, raw, err := post[PaymentMethodsResponse](ctx, c, "/paymentMethods", req, idempotencyKey)
	out.Raw = raw
	return out, err
}
