package webhooks

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
)

// KeyPaymentSource is the additionalData entry telling merchants how the
// payment was started: "sessions" or "advanced".
const KeyPaymentSource = "paymentSource"

// Payload is the body of one delivery: the upstream's notification format
// with one item, and live as a JSON boolean.
type Payload struct {
	Live              bool          `json:"live"`
	NotificationItems []PayloadItem `json:"notificationItems"`
}

// PayloadItem wraps one item as {"NotificationRequestItem": {...}}.
type PayloadItem struct {
	Item Item `json:"NotificationRequestItem"`
}

// Item is a notification item as merchants receive it: the platform's
// item format, field for field (docs/openapi.yaml, webhooks).
type Item struct {
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

// BuildPayload renders the body delivered for item: the upstream's item
// with its hmacSignature and every "metadata.*" entry (the service's
// internal routing data; merchants cannot send metadata) removed from
// additionalData and paymentSource added (when source is not empty).
// Everything else, including tokenization.storedPaymentMethodId and
// recurring.recurringDetailReference, is kept. The encoding is
// deterministic, so the same item always gives the same bytes.
func BuildPayload(live bool, n payments.Notification, source string) ([]byte, error) {
	item := Item{
		AdditionalData: merchantAdditionalData(n.AdditionalData, source), Amount: n.Amount, EventCode: n.EventCode,
		EventDate: n.EventDate, MerchantAccountCode: n.MerchantAccountCode, MerchantReference: n.MerchantReference,
		OriginalReference: n.OriginalReference, PaymentMethod: n.PaymentMethod, PSPReference: n.PSPReference,
		Reason: n.Reason, Success: n.Success, Operations: n.Operations,
	}
	b, err := json.Marshal(Payload{Live: live, NotificationItems: []PayloadItem{{Item: item}}})
	if err != nil {
		return nil, fmt.Errorf("webhooks: encode payload: %w", err)
	}
	return b, nil
}

// merchantAdditionalData returns a copy of ad without the service's
// internal entries and with paymentSource set.
func merchantAdditionalData(ad map[string]string, source string) map[string]string {
	out := maps.Clone(ad)
	if out == nil {
		out = map[string]string{}
	}
	delete(out, payments.KeyHMACSignature)
	for k := range out {
		if strings.HasPrefix(k, payments.MetadataPrefix) {
			delete(out, k)
		}
	}
	if source != "" {
		out[KeyPaymentSource] = source
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
