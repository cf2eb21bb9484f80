package client

import (
	"net/http"
	"time"

	"github.com/yp/paysvc/shared/webhooks/verify"
)

// DefaultWebhookTolerance is the recommended maximum distance between a
// delivery's timestamp and your clock.
const DefaultWebhookTolerance = verify.DefaultTolerance

// VerifyWebhook checks a webhook delivery's signature: secret is the
// subscription's whsec_ secret, body the raw request body. Call it before
// acting on a delivery; deduplicate by the X-Webhook-Id header.
func VerifyWebhook(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	return verify.Verify(secret, header, body, now, tolerance)
}

// Webhook is a delivery's body: one notification item.
type Webhook struct {
	Live              bool `json:"live"`
	NotificationItems []struct {
		Item WebhookItem `json:"NotificationRequestItem"`
	} `json:"notificationItems"`
}

// WebhookItem is one payment event.
type WebhookItem struct {
	EventCode           string            `json:"eventCode"`
	Success             string            `json:"success"` // "true" or "false"
	PSPReference        string            `json:"pspReference"`
	OriginalReference   string            `json:"originalReference,omitempty"`
	MerchantReference   string            `json:"merchantReference"`
	MerchantAccountCode string            `json:"merchantAccountCode"`
	EventDate           string            `json:"eventDate"`
	Amount              Amount            `json:"amount"`
	PaymentMethod       string            `json:"paymentMethod,omitempty"`
	Reason              string            `json:"reason,omitempty"`
	Operations          []string          `json:"operations,omitempty"`
	AdditionalData      map[string]string `json:"additionalData,omitempty"`
}
