package webhooks

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/yp/paysvc/shared/upstream"
)

// KeyPaymentSource is the additionalData entry telling merchants how the
// payment was started: "sessions" or "advanced".
const KeyPaymentSource = "paymentSource"

// Payload is the body of one delivery: the upstream's notification format
// with one item, and live as a JSON boolean.
type Payload struct {
	Live              bool                        `json:"live"`
	NotificationItems []upstream.NotificationItem `json:"notificationItems"`
}

// BuildPayload renders the body delivered for item: the upstream's item
// with its hmacSignature and every "metadata.*" entry (the service's
// internal routing data; merchants cannot send metadata) removed from
// additionalData and paymentSource added (when source is not empty).
// Everything else, including tokenization.storedPaymentMethodId and
// recurring.recurringDetailReference, is kept. The encoding is
// deterministic, so the same item always gives the same bytes.
func BuildPayload(live bool, item upstream.NotificationRequestItem, source string) ([]byte, error) {
	item.AdditionalData = merchantAdditionalData(item.AdditionalData, source)
	b, err := json.Marshal(Payload{Live: live, NotificationItems: []upstream.NotificationItem{{Item: item}}})
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
	delete(out, upstream.KeyHMACSignature)
	for k := range out {
		if strings.HasPrefix(k, upstream.MetadataPrefix) {
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
