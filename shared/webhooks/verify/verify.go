// Package verify checks the signature of a webhook delivery from paysvc,
// as the merchants' Go client does: it is client.VerifyWebhook (one
// implementation, in the client module, which merchants import or copy),
// under the name the service's tests use.
//
// A delivery carries the Standard Webhooks v1 headers (webhook-id,
// webhook-timestamp, webhook-signature) and the same values as X-Webhook-Id,
// X-Webhook-Timestamp and X-Webhook-HMAC-Signature. The signature is
// base64(HMAC-SHA256(key, "{id}.{timestamp}.{raw body}")), where key is the
// base64-decoded part of the subscription secret after "whsec_". During a
// secret rotation the header holds several space-separated "v1,<sig>"
// values; one matching is enough.
package verify

import (
	"net/http"
	"time"

	"github.com/yp/paysvc/shared/client"
)

// DefaultTolerance is the recommended maximum distance between the
// delivery's timestamp and the receiver's clock.
const DefaultTolerance = client.DefaultWebhookTolerance

// Errors returned by Verify.
var (
	ErrBadSecret       = client.ErrWebhookSecret
	ErrMissingHeaders  = client.ErrWebhookHeaders
	ErrBadTimestamp    = client.ErrWebhookTimestamp
	ErrTooOld          = client.ErrWebhookTooOld
	ErrTooNew          = client.ErrWebhookTooNew
	ErrNoMatchingSigV1 = client.ErrWebhookSignature
)

// Verify checks that body and headers are a delivery signed with secret
// ("whsec_…") at most tolerance away from now (tolerance <= 0 means
// DefaultTolerance). It reads the webhook-* headers, or the X-Webhook-*
// ones when those are absent. nil means authentic.
func Verify(secret string, headers http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	return client.VerifyWebhook(secret, headers, body, now, tolerance)
}
