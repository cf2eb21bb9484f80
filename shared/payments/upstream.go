package payments

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/yp/paysvc/shared/money"
)

// Upstream is the port to the checkout platform, in the domain's own
// terms: the domain decides what each call carries (merchant account,
// splits, routing metadata, country, shopper interaction, the idempotency
// key) and the adapter (shared/upstream/connector) translates it to the
// platform's wire format and its answers back. Errors the adapter returns
// are classified with ErrUpstreamInFlight and *UpstreamRejection; anything
// else is a failure without a definitive answer (retry with the same key).
type Upstream interface {
	CreateSession(ctx context.Context, req SessionRequest) (SessionAnswer, error)
	PaymentMethods(ctx context.Context, req PaymentMethodsRequest) (PaymentMethodsResult, error)
	Pay(ctx context.Context, req PaymentRequest) (PaymentAnswer, error)
	Details(ctx context.Context, req DetailsRequest) (PaymentAnswer, error)
	Modify(ctx context.Context, req ModificationRequest) (ModificationAnswer, error)
	DeleteStoredMethod(ctx context.Context, req DeleteStoredMethodRequest) error
}

// ErrUpstreamInFlight: the platform is still processing a request with the
// same idempotency key.
var ErrUpstreamInFlight = errors.New("payments: the upstream is still processing a request with this idempotency key")

// UpstreamRejection is the platform's deterministic refusal of a request
// (sending it again gets the same answer), with its message.
type UpstreamRejection struct {
	Message string
	// NotFound: the platform does not know what the request names.
	NotFound bool
	Err      error // the adapter's error, for logs
}

func (e *UpstreamRejection) Error() string { return e.Err.Error() }
func (e *UpstreamRejection) Unwrap() error { return e.Err }

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

// LineItem is one line of an order. Amounts are in minor units;
// TaxPercentage in minor units of a percent (2100 for 21 %).
type LineItem struct {
	ID                 string
	Description        string
	Quantity           int64
	AmountExcludingTax *int64
	AmountIncludingTax *int64
	TaxAmount          *int64
	TaxPercentage      *int64
	ProductURL         string
	ImageURL           string
	ItemCategory       string
	SKU                string
	Brand              string
	Color              string
	Size               string
	Manufacturer       string
	UPC                string
}

// SplitKind says who a Split pays.
type SplitKind int

// Split kinds.
const (
	SplitMerchant   SplitKind = iota // the merchant's balance account
	SplitCommission                  // the platform's commission
)

// Split is one part of an amount and the account it goes to.
type Split struct {
	Kind        SplitKind
	Account     string
	Value       int64
	Currency    string
	Reference   string
	Description string
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

// ModificationKind says what a ModificationRequest asks for.
type ModificationKind int

// Modification kinds.
const (
	ModifyCapture ModificationKind = iota
	ModifyRefund
	ModifyReversal
	ModifyAmount
)

// ModificationRequest captures, refunds, reverses or updates the amount of
// payment PSPReference.
type ModificationRequest struct {
	Kind            ModificationKind
	IdempotencyKey  string
	PSPReference    string
	MerchantAccount string
	Amount          money.Amount // not for reversals
	Reference       string
	Splits          []Split
	LineItems       []LineItem // refunds
}

// ModificationAnswer is the platform's acceptance of a modification (its
// outcome arrives as a notification).
type ModificationAnswer struct {
	PSPReference string
	Status       string
	Reference    string
}

// DeleteStoredMethodRequest deletes a shopper's stored payment method.
type DeleteStoredMethodRequest struct {
	StoredPaymentMethodID string
	MerchantAccount       string
	ShopperReference      string
}
