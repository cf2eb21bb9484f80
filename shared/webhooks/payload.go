package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/tenant"
)

// The body merchants receive (the platform's item, as they may see it) and
// its Standard Webhooks signature.

// KeyPaymentSource is the additionalData entry telling merchants how the
// payment was started: "sessions" or "advanced".
const KeyPaymentSource = "paymentSource"

// KeyEventSequence is the additionalData entry numbering a payment's
// events as the service applied them (1, 2, …): receivers order one
// payment's webhooks by it.
const KeyEventSequence = "paymentEventSequence"

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
	OriginalPSP         string            `json:"originalPsp,omitempty"`
	PaymentMethod       string            `json:"paymentMethod,omitempty"`
	PSPReference        string            `json:"pspReference"`
	Reason              string            `json:"reason,omitempty"`
	Success             string            `json:"success"`
	Operations          []string          `json:"operations,omitempty"`
}

// BuildPayload renders the body delivered for item: the upstream's item
// with its hmacSignature and every "metadata.*" entry (the service's
// internal routing data; merchants cannot send metadata) removed from
// additionalData, and paymentSource (when source is not empty) and the
// event's sequence number in its payment (KeyEventSequence, when seq is
// not 0) added. Everything else, including
// tokenization.storedPaymentMethodId and recurring.recurringDetailReference,
// is kept. The encoding is deterministic, so the same item always gives
// the same bytes.
func BuildPayload(live bool, n payments.Notification, source string, seq int64) ([]byte, error) {
	ad := merchantAdditionalData(n.AdditionalData, source)
	if seq != 0 {
		if ad == nil {
			ad = map[string]string{}
		}
		ad[KeyEventSequence] = strconv.FormatInt(seq, 10)
	}
	item := Item{
		AdditionalData: ad, Amount: n.Amount, EventCode: n.EventCode,
		EventDate: n.EventDate, MerchantAccountCode: n.MerchantAccountCode, MerchantReference: n.MerchantReference,
		OriginalReference: n.OriginalReference, OriginalPSP: n.OriginalPSP, PaymentMethod: n.PaymentMethod, PSPReference: n.PSPReference,
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

// Delivery headers (docs/webhooks.md). The X-Webhook-* names are the
// specification's; the webhook-* names are Standard Webhooks', carrying the
// same values so any Standard Webhooks library verifies a delivery.
const (
	HeaderID             = "X-Webhook-Id"
	HeaderTimestamp      = "X-Webhook-Timestamp"
	HeaderSignature      = "X-Webhook-HMAC-Signature"
	HeaderAttempt        = "X-Webhook-Delivery-Attempt"
	HeaderPayloadVersion = "X-Webhook-Payload-Version"

	HeaderStdID        = "webhook-id"
	HeaderStdTimestamp = "webhook-timestamp"
	HeaderStdSignature = "webhook-signature"

	// PayloadVersion is the value of X-Webhook-Payload-Version.
	PayloadVersion = "1"
	// SecretPrefix starts every signing secret: "whsec_" + base64 key.
	SecretPrefix = "whsec_"
)

// ErrBadSecret is returned for a secret that is not "whsec_" + base64 of
// at least 24 bytes.
var ErrBadSecret = errors.New("webhooks: signing secret must be whsec_ followed by base64 of at least 24 bytes")

// DecodeSecret returns the HMAC key of a "whsec_…" secret.
func DecodeSecret(secret string) ([]byte, error) {
	raw, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) < 24 {
		return nil, ErrBadSecret
	}
	return key, nil
}

// SignedContent is what is signed: "{id}.{unix seconds}.{body}".
func SignedContent(id string, ts time.Time, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(body)+22)
	b = append(b, id...)
	b = append(b, '.')
	b = strconv.AppendInt(b, ts.Unix(), 10)
	b = append(b, '.')
	return append(b, body...)
}

// Sign returns the signature header value for body: one "v1,<base64
// HMAC-SHA256>" per secret, space-separated (several during a secret
// rotation). It fails when a secret is malformed or none is given.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("webhooks: no active signing secret")
	}
	content := SignedContent(id, ts, body)
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := DecodeSecret(s)
		if err != nil {
			return "", err
		}
		m := hmac.New(sha256.New, key)
		m.Write(content)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

// signFor signs body with the secrets of sub active at now.
func signFor(sub tenant.Subscription, id string, now time.Time, body []byte) (string, error) {
	var secrets []string
	for _, s := range sub.ActiveSecrets(now) {
		secrets = append(secrets, s.Value)
	}
	return Sign(secrets, id, now, body)
}
