package payments

import "github.com/yp/paysvc/shared/money"

// Notification is one item of the platform's notifications, as the domain
// reads it: the upstream adapter translates the wire item to it (and back,
// for storage and the merchants' webhooks, which carry the item as the
// platform sent it).
type Notification struct {
	EventCode           string
	PSPReference        string
	OriginalReference   string
	MerchantAccountCode string
	MerchantReference   string
	Amount              money.Amount
	EventDate           string
	PaymentMethod       string
	Reason              string
	// Success is "true" or "false", as sent (Succeeded).
	Success        string
	Operations     []string
	AdditionalData map[string]string
}

// Succeeded reports whether the item reports a success.
func (n Notification) Succeeded() bool { return n.Success == "true" }

// Event codes of the notifications the domain applies.
const (
	EventAuthorisation           = "AUTHORISATION"
	EventAuthorisationAdjustment = "AUTHORISATION_ADJUSTMENT"
	EventCapture                 = "CAPTURE"
	EventCaptureFailed           = "CAPTURE_FAILED"
	EventCancellation            = "CANCELLATION"
	EventCancelOrRefund          = "CANCEL_OR_REFUND"
	EventRefund                  = "REFUND"
	EventRefundFailed            = "REFUND_FAILED"
	EventOfferClosed             = "OFFER_CLOSED"
)

// Entries of a notification's AdditionalData the service reads.
const (
	// KeyHMACSignature is the item's signature: checked on arrival, never
	// forwarded.
	KeyHMACSignature = "hmacSignature"
	// KeyModificationAction is "cancel" or "refund" on CANCEL_OR_REFUND.
	KeyModificationAction = "modification.action"
	// KeyStoredPaymentMethodID is the token a tokenising payment created;
	// KeyRecurringDetailReference its legacy name.
	KeyStoredPaymentMethodID    = "tokenization.storedPaymentMethodId"
	KeyRecurringDetailReference = "recurring.recurringDetailReference"
	// KeyCheckoutSessionID is the session of a Sessions-flow payment.
	KeyCheckoutSessionID = "checkoutSessionId"
	// MetadataPrefix prefixes the request metadata the platform echoes
	// ("metadata.<key>": the routing metadata, MetaMerchant and others).
	MetadataPrefix = "metadata."
)
