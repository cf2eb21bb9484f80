package upstream

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/yp/paysvc/shared/money"
)

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
	EventExpire                  = "EXPIRE"
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
	AdditionalData      AdditionalData `json:"additionalData,omitempty"`
	Amount              money.Amount   `json:"amount"`
	EventCode           string         `json:"eventCode"`
	EventDate           string         `json:"eventDate"`
	MerchantAccountCode string         `json:"merchantAccountCode"`
	MerchantReference   string         `json:"merchantReference"`
	OriginalReference   string         `json:"originalReference,omitempty"`
	// OriginalPSP is RECURRING_CONTRACT's payment (its schema's name).
	OriginalPSP   string   `json:"originalPsp,omitempty"`
	PaymentMethod string   `json:"paymentMethod,omitempty"`
	PSPReference  string   `json:"pspReference"`
	Reason        string   `json:"reason,omitempty"`
	Success       string   `json:"success"`
	Operations    []string `json:"operations,omitempty"`
}

// Succeeded reports whether Success is "true".
func (it NotificationRequestItem) Succeeded() bool { return it.Success == "true" }

// AdditionalData is a notification's additionalData. The upstream sends
// string values, but its webhook document also models objects (for
// example "metadata": {"key": "value"}), and a notification the receiver
// cannot decode would be resent forever. Decoding therefore accepts any
// JSON value: an object is flattened into dotted keys ("metadata.key"),
// which is how the upstream spells request metadata on the wire; an array,
// number, boolean or null is kept as its compact JSON text.
type AdditionalData map[string]string

// UnmarshalJSON implements json.Unmarshaler (see AdditionalData).
func (a *AdditionalData) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*a = nil
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(AdditionalData, len(raw))
	if err := out.add("", raw); err != nil {
		return err
	}
	*a = out
	return nil
}

// add stores raw under prefix, flattening nested objects.
func (a AdditionalData) add(prefix string, raw map[string]json.RawMessage) error {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := bytes.TrimSpace(raw[k])
		name := prefix + k
		switch {
		case len(v) > 0 && v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			a[name] = s
		case len(v) > 0 && v[0] == '{':
			var nested map[string]json.RawMessage
			if err := json.Unmarshal(v, &nested); err != nil {
				return err
			}
			if err := a.add(name+".", nested); err != nil {
				return err
			}
		default:
			var buf bytes.Buffer
			if err := json.Compact(&buf, v); err != nil {
				return err
			}
			a[name] = buf.String()
		}
	}
	return nil
}
