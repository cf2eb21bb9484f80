package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

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
