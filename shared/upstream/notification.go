package upstream

import "github.com/yp/paysvc/shared/money"

// Event codes of standard notifications used by the service.
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

// AdditionalData keys of notifications.
const (
	// KeyHMACSignature holds the item's HMAC signature (see SignItem).
	KeyHMACSignature = "hmacSignature"
	// KeyModificationAction is "cancel" or "refund" on CANCEL_OR_REFUND.
	KeyModificationAction = "modification.action"
	// KeyStoredPaymentMethodID is the token created by a tokenising payment.
	KeyStoredPaymentMethodID = "tokenization.storedPaymentMethodId"
	// KeyRecurringDetailReference is the legacy name of the same token.
	KeyRecurringDetailReference = "recurring.recurringDetailReference"
	// KeyCheckoutSessionID is the session of a Sessions-flow payment.
	KeyCheckoutSessionID = "checkoutSessionId"
	// MetadataPrefix prefixes each request metadata key echoed in
	// additionalData ("metadata.<key>").
	MetadataPrefix = "metadata."
)

// Notification is the body of one standard notification POST. Live is the
// string "true" or "false". The upstream sends one item per POST.
type Notification struct {
	Live              string             `json:"live"`
	NotificationItems []NotificationItem `json:"notificationItems"`
}

// NotificationItem wraps one item as {"NotificationRequestItem": {...}}.
type NotificationItem struct {
	Item NotificationRequestItem `json:"NotificationRequestItem"`
}

// NotificationRequestItem is one event. Success is the string "true" or
// "false"; modifications carry the payment's pspReference in
// OriginalReference.
type NotificationRequestItem struct {
	AdditionalData      map[string]string `json:"additionalData,omitempty"`
	Amount              money.Amount      `json:"amount"`
	EventCode           string            `json:"eventCode"`
	EventDate           string            `json:"eventDate"`
	MerchantAccountCode string            `json:"merchantAccountCode"`
	MerchantReference   string            `json:"merchantReference"`
	OriginalReference   string            `json:"originalReference,omitempty"`
	PaymentMethod       string            `json:"paymentMethod,omitempty"`
	PSPReference        string            `json:"pspReference"`
	Reason              string            `json:"reason,omitempty"`
	Success             string            `json:"success"`
	Operations          []string          `json:"operations,omitempty"`
}

// Succeeded reports whether Success is "true".
func (it NotificationRequestItem) Succeeded() bool { return it.Success == "true" }
