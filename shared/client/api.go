package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Amount is an amount in minor units (1000 EUR = 10.00 EUR).
type Amount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

// Name is a shopper's name.
type Name struct {
	FirstName string `json:"firstName,omitempty"`
	LastName  string `json:"lastName,omitempty"`
}

// LineItem is one line of an order. TaxPercentage is in basis points.
type LineItem struct {
	Quantity           int64  `json:"quantity"`
	Description        string `json:"description,omitempty"`
	ID                 string `json:"id,omitempty"`
	AmountExcludingTax *int64 `json:"amountExcludingTax,omitempty"`
	AmountIncludingTax *int64 `json:"amountIncludingTax,omitempty"`
	TaxAmount          *int64 `json:"taxAmount,omitempty"`
	TaxPercentage      *int64 `json:"taxPercentage,omitempty"`
	ProductURL         string `json:"productUrl,omitempty"`
	ImageURL           string `json:"imageUrl,omitempty"`
}

// Config is GET /v1/ecom/config's answer.
type Config struct {
	ClientToken string `json:"clientToken"`
	Environment string `json:"environment"`
	Meta        Meta   `json:"-"`
}

// Config returns the client key for the checkout components.
func (c *Client) Config(ctx context.Context) (Config, error) {
	var out Config
	err := c.do(ctx, http.MethodGet, "/v1/ecom/config", nil, &out, &out.Meta, nil)
	return out, err
}

// SessionParams is a drop-in session request.
type SessionParams struct {
	Amount                   Amount     `json:"amount"`
	ReturnURL                string     `json:"returnUrl"`
	Reference                string     `json:"reference,omitempty"`
	ShopperEmail             string     `json:"shopperEmail,omitempty"`
	TelephoneNumber          string     `json:"telephoneNumber,omitempty"`
	ShopperName              *Name      `json:"shopperName,omitempty"`
	Mode                     string     `json:"mode,omitempty"` // embedded (default) or hosted
	BlockedPaymentMethods    []string   `json:"blockedPaymentMethods,omitempty"`
	ShopperLocale            string     `json:"shopperLocale,omitempty"`
	CountryCode              string     `json:"countryCode,omitempty"`
	LineItems                []LineItem `json:"lineItems,omitempty"`
	ShopperReference         string     `json:"shopperReference,omitempty"`
	StorePaymentMethod       bool       `json:"storePaymentMethod,omitempty"`
	StorePaymentMethodMode   string     `json:"storePaymentMethodMode,omitempty"`
	RecurringProcessingModel string     `json:"recurringProcessingModel,omitempty"`
}

// Session is a created session: give ID and SessionData to the drop-in.
type Session struct {
	ID          string     `json:"id"`
	SessionData string     `json:"sessionData"`
	Reference   string     `json:"reference"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	URL         string     `json:"url,omitempty"`
	Meta        Meta       `json:"-"`
}

// CreateSession creates a checkout session on a site.
func (c *Client) CreateSession(ctx context.Context, siteID string, p SessionParams, opts ...CallOption) (Session, error) {
	var out Session
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "sessions"), p, &out, &out.Meta, opts)
	return out, err
}

// PaymentMethodsParams asks which payment methods fit an amount.
type PaymentMethodsParams struct {
	Amount                Amount   `json:"amount"`
	CountryCode           string   `json:"countryCode,omitempty"`
	ShopperLocale         string   `json:"shopperLocale,omitempty"`
	Channel               string   `json:"channel,omitempty"` // Web, iOS or Android
	AllowedPaymentMethods []string `json:"allowedPaymentMethods,omitempty"`
	BlockedPaymentMethods []string `json:"blockedPaymentMethods,omitempty"`
	ShopperReference      string   `json:"shopperReference,omitempty"`
}

// PaymentMethods is the platform's answer, for the checkout component.
type PaymentMethods struct {
	PaymentMethods       []json.RawMessage `json:"paymentMethods"`
	StoredPaymentMethods []json.RawMessage `json:"storedPaymentMethods"`
	Meta                 Meta              `json:"-"`
}

// PaymentMethods lists the payment methods for an amount.
func (c *Client) PaymentMethods(ctx context.Context, siteID string, p PaymentMethodsParams, opts ...CallOption) (PaymentMethods, error) {
	var out PaymentMethods
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payment-methods"), p, &out, &out.Meta, opts)
	return out, err
}

// PaymentParams starts a payment. PaymentMethod (and BrowserInfo and the
// other raw fields) are the checkout component's state data, unchanged.
type PaymentParams struct {
	Amount        Amount          `json:"amount"`
	PaymentMethod json.RawMessage `json:"paymentMethod"`
	ReturnURL     string          `json:"returnUrl"`
	Reference     string          `json:"reference,omitempty"`
	// AdditionalData: {"authorisationType": "PreAuth"} makes a
	// pre-authorisation, the only kind of payment whose amount can be updated.
	AdditionalData           map[string]string `json:"additionalData,omitempty"`
	ShopperReference         string            `json:"shopperReference,omitempty"`
	ShopperInteraction       string            `json:"shopperInteraction,omitempty"` // Ecommerce (default) or ContAuth
	RecurringProcessingModel string            `json:"recurringProcessingModel,omitempty"`
	IndustryUsage            string            `json:"industryUsage,omitempty"`
	BrowserInfo              json.RawMessage   `json:"browserInfo,omitempty"`
	RiskData                 json.RawMessage   `json:"riskData,omitempty"`
	BillingAddress           json.RawMessage   `json:"billingAddress,omitempty"`
	DeliveryAddress          json.RawMessage   `json:"deliveryAddress,omitempty"`
	AuthenticationData       json.RawMessage   `json:"authenticationData,omitempty"`
	Origin                   string            `json:"origin,omitempty"`
	Channel                  string            `json:"channel,omitempty"`
	ShopperEmail             string            `json:"shopperEmail,omitempty"`
	ShopperIP                string            `json:"shopperIP,omitempty"`
	ShopperLocale            string            `json:"shopperLocale,omitempty"`
	TelephoneNumber          string            `json:"telephoneNumber,omitempty"`
	ClientStateDataIndicator *bool             `json:"clientStateDataIndicator,omitempty"`
	StorePaymentMethod       *bool             `json:"storePaymentMethod,omitempty"`
	ShopperName              *Name             `json:"shopperName,omitempty"`
	LineItems                []LineItem        `json:"lineItems,omitempty"`
}

// PaymentResult is the answer of payments and payments/details. An Action
// goes to the checkout component (its Raw JSON, unchanged); the details
// the component returns come back through SubmitDetails.
type PaymentResult struct {
	ResultCode        ResultCode `json:"resultCode"`
	PSPReference      string     `json:"pspReference,omitempty"`
	Action            *Action    `json:"action,omitempty"` // nil: no action
	RefusalReason     string     `json:"refusalReason,omitempty"`
	RefusalReasonCode string     `json:"refusalReasonCode,omitempty"`
	MerchantReference string     `json:"merchantReference,omitempty"`
	Meta              Meta       `json:"-"`
}

// ResultCode is a payment's result code, the platform's.
type ResultCode string

// Result codes of PaymentResult: every one the platform's checkout API
// (v71) answers.
const (
	ResultAuthorised                ResultCode = "Authorised"
	ResultPartiallyAuthorised       ResultCode = "PartiallyAuthorised"
	ResultRefused                   ResultCode = "Refused"
	ResultError                     ResultCode = "Error" // the platform failed to process it; RefusalReason says why
	ResultCancelled                 ResultCode = "Cancelled"
	ResultPending                   ResultCode = "Pending"  // the outcome arrives as a webhook
	ResultReceived                  ResultCode = "Received" // the outcome arrives as a webhook
	ResultIdentifyShopper           ResultCode = "IdentifyShopper"
	ResultChallengeShopper          ResultCode = "ChallengeShopper"
	ResultRedirectShopper           ResultCode = "RedirectShopper"
	ResultPresentToShopper          ResultCode = "PresentToShopper" // a voucher or QR code to show the shopper
	ResultAuthenticationFinished    ResultCode = "AuthenticationFinished"
	ResultAuthenticationNotRequired ResultCode = "AuthenticationNotRequired"
	ResultSuccess                   ResultCode = "Success"
)

// Action is what the checkout component must do next: a 3-D Secure 2
// fingerprint or challenge, a redirect, a QR code, a voucher… Give Raw to
// the component unchanged (it also is what Action marshals to); the typed
// fields are for your server's own decisions and logs. Which fields are set
// depends on Type.
type Action struct {
	Type              ActionType `json:"type"`
	PaymentMethodType string     `json:"paymentMethodType,omitempty"`
	URL               string     `json:"url,omitempty"`
	// Method and Data: a redirect's HTTP method (GET or POST) and, for a
	// POST, its form fields.
	Method string            `json:"method,omitempty"`
	Data   map[string]string `json:"data,omitempty"`
	// PaymentData identifies the action; send it back with the details
	// (DetailsParams.PaymentData) when the component gives it.
	PaymentData        string `json:"paymentData,omitempty"`
	Subtype            string `json:"subtype,omitempty"` // threeDS2: fingerprint or challenge
	Token              string `json:"token,omitempty"`   // threeDS2
	AuthorisationToken string `json:"authorisationToken,omitempty"`
	QRCodeData         string `json:"qrCodeData,omitempty"` // qrCode
	// Raw is the action exactly as the platform sent it.
	Raw json.RawMessage `json:"-"`
}

// ActionType is an Action's type.
type ActionType string

// Action types (the platform's checkout API, v71).
const (
	ActionThreeDS2                ActionType = "threeDS2"
	ActionRedirect                ActionType = "redirect"
	ActionNativeRedirect          ActionType = "nativeRedirect"
	ActionAwait                   ActionType = "await"
	ActionQRCode                  ActionType = "qrCode"
	ActionVoucher                 ActionType = "voucher"
	ActionSDK                     ActionType = "sdk"
	ActionWeChatPaySDK            ActionType = "wechatpaySDK"
	ActionBankTransfer            ActionType = "bankTransfer"
	ActionDelegatedAuthentication ActionType = "delegatedAuthentication"
)

// actionFields is Action without its methods (for encoding/json).
type actionFields Action

// UnmarshalJSON reads the typed fields and keeps the JSON as Raw.
func (a *Action) UnmarshalJSON(b []byte) error {
	var f actionFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*a = Action(f)
	a.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes Raw, or the typed fields when there is no Raw.
func (a Action) MarshalJSON() ([]byte, error) {
	if len(a.Raw) > 0 {
		return a.Raw, nil
	}
	return json.Marshal(actionFields(a))
}

// CreatePayment starts a payment on a site.
func (c *Client) CreatePayment(ctx context.Context, siteID string, p PaymentParams, opts ...CallOption) (PaymentResult, error) {
	var out PaymentResult
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payments"), p, &out, &out.Meta, opts)
	return out, err
}

// DetailsParams submits the component's additional details (after a 3-D
// Secure challenge or a redirect).
type DetailsParams struct {
	Details     json.RawMessage `json:"details"`
	PaymentData string          `json:"paymentData,omitempty"`
	// Reference is the payment's reference (PaymentResult.MerchantReference
	// of CreatePayment). Sent, the payment's record is complete as soon as
	// the details answer, even when the platform's answer carries nothing
	// but resultCode and pspReference.
	Reference string `json:"reference,omitempty"`
}

// SubmitDetails submits additional details of a payment.
func (c *Client) SubmitDetails(ctx context.Context, siteID string, p DetailsParams, opts ...CallOption) (PaymentResult, error) {
	var out PaymentResult
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payments", "details"), p, &out, &out.Meta, opts)
	return out, err
}

// Modification is the answer of captures, reversals and amount updates:
// received by the platform; the outcome arrives as a webhook.
type Modification struct {
	PSPReference        string `json:"pspReference"`
	Status              string `json:"status"`
	PaymentPSPReference string `json:"paymentPspReference"`
	Reference           string `json:"reference,omitempty"`
	Meta                Meta   `json:"-"`
}

// CaptureParams captures (part of) a payment.
type CaptureParams struct {
	Amount    Amount `json:"amount"`
	Reference string `json:"reference,omitempty"`
	// LineItems: the captured items (buy-now-pay-later methods need them
	// on a partial capture).
	LineItems []LineItem `json:"lineItems,omitempty"`
}

// Capture captures an authorised payment.
func (c *Client) Capture(ctx context.Context, siteID, pspReference string, p CaptureParams, opts ...CallOption) (Modification, error) {
	var out Modification
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payments", pspReference, "captures"), p, &out, &out.Meta, opts)
	return out, err
}

// ReversalParams cancels or refunds a payment in full.
type ReversalParams struct {
	Reference string `json:"reference,omitempty"`
}

// Reverse cancels an uncaptured payment or refunds a captured one.
func (c *Client) Reverse(ctx context.Context, siteID, pspReference string, p ReversalParams, opts ...CallOption) (Modification, error) {
	var out Modification
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payments", pspReference, "reversals"), p, &out, &out.Meta, opts)
	return out, err
}

// CancelParams cancels what is left uncaptured of a payment.
type CancelParams struct {
	Reference string `json:"reference,omitempty"`
}

// Cancel cancels an authorised payment's uncaptured authorisation: all of
// it when nothing was captured, else the remainder (what was captured
// stays refundable). The outcome is a CANCELLATION webhook.
func (c *Client) Cancel(ctx context.Context, siteID, pspReference string, p CancelParams, opts ...CallOption) (Modification, error) {
	var out Modification
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payments", pspReference, "cancels"), p, &out, &out.Meta, opts)
	return out, err
}

// AmountUpdateParams changes the authorised amount.
type AmountUpdateParams struct {
	Amount    Amount `json:"amount"`
	Reference string `json:"reference,omitempty"`
}

// UpdateAmount changes the amount of an authorised, uncaptured payment.
func (c *Client) UpdateAmount(ctx context.Context, siteID, pspReference string, p AmountUpdateParams, opts ...CallOption) (Modification, error) {
	body := struct {
		PSPReference string `json:"pspReference"`
		AmountUpdateParams
	}{pspReference, p}
	var out Modification
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payments", pspReference, "amount-updates"), body, &out, &out.Meta, opts)
	return out, err
}

// StoredPaymentMethodDeleted is DeleteStoredPaymentMethod's answer.
type StoredPaymentMethodDeleted struct {
	StoredPaymentMethodID string `json:"storedPaymentMethodId"`
	Status                string `json:"status"` // deleted
	Meta                  Meta   `json:"-"`
}

// DeleteStoredPaymentMethod deletes a shopper's stored payment method.
func (c *Client) DeleteStoredPaymentMethod(ctx context.Context, siteID, storedPaymentMethodID, shopperReference string) (StoredPaymentMethodDeleted, error) {
	path := sitePath(siteID, "stored-payment-methods", storedPaymentMethodID) + "?shopperReference=" + url.QueryEscape(shopperReference)
	var out StoredPaymentMethodDeleted
	err := c.do(ctx, http.MethodDelete, path, nil, &out, &out.Meta, nil)
	return out, err
}
