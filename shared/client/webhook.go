package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultWebhookTolerance is the recommended maximum distance between a
// delivery's timestamp and your clock.
const DefaultWebhookTolerance = 5 * time.Minute

// Errors of VerifyWebhook.
var (
	ErrWebhookSecret    = errors.New("paysvc: webhook secret must be whsec_ followed by base64")
	ErrWebhookHeaders   = errors.New("paysvc: webhook id, timestamp or signature header missing")
	ErrWebhookTimestamp = errors.New("paysvc: webhook timestamp header is not Unix seconds")
	ErrWebhookTooOld    = errors.New("paysvc: webhook timestamp too old")
	ErrWebhookTooNew    = errors.New("paysvc: webhook timestamp too far in the future")
	ErrWebhookSignature = errors.New("paysvc: no matching v1 webhook signature")
)

// VerifyWebhook checks a webhook delivery's signature: secret is the
// subscription's whsec_ secret, body the raw request body, and the
// delivery's timestamp must be at most tolerance away from now (tolerance
// <= 0 means DefaultWebhookTolerance). Call it before acting on a
// delivery; deduplicate by the X-Webhook-Id header. nil means authentic.
//
// A delivery carries the Standard Webhooks v1 headers (webhook-id,
// webhook-timestamp, webhook-signature), and the same values as
// X-Webhook-Id, X-Webhook-Timestamp and X-Webhook-HMAC-Signature, which
// are read when the others are absent. The signature is
// base64(HMAC-SHA256(key, "{id}.{timestamp}.{raw body}")), key being the
// base64-decoded part of the secret after "whsec_". During a secret
// rotation the header holds several space-separated "v1,<sig>" values; one
// matching is enough.
func VerifyWebhook(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return ErrWebhookSecret
	}
	id := firstHeader(header, "webhook-id", "X-Webhook-Id")
	ts := firstHeader(header, "webhook-timestamp", "X-Webhook-Timestamp")
	sigs := firstHeader(header, "webhook-signature", "X-Webhook-HMAC-Signature")
	if id == "" || ts == "" || sigs == "" {
		return ErrWebhookHeaders
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrWebhookTimestamp
	}
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	at := time.Unix(sec, 0)
	if now.Sub(at) > tolerance {
		return ErrWebhookTooOld
	}
	if at.Sub(now) > tolerance {
		return ErrWebhookTooNew
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		// Strict: only the canonical encoding of the signature is its
		// signature (lax decoding also accepts other padding bits).
		got, err := base64.StdEncoding.Strict().DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrWebhookSignature
}

// WebhookEvent is a verified webhook delivery (ConstructEvent).
type WebhookEvent struct {
	// ID is the delivery's X-Webhook-Id, the same for every attempt of one
	// event: deduplicate by it.
	ID        string
	Timestamp time.Time // of this attempt (X-Webhook-Timestamp)
	Attempt   int       // X-Webhook-Delivery-Attempt, 1 for the first
	Live      bool
	Item      WebhookItem // the event: a delivery carries one
}

// WebhookOptions tune ConstructEventWithOptions.
type WebhookOptions struct {
	Now       time.Time     // your clock's time (zero: time.Now())
	Tolerance time.Duration // the most a delivery's timestamp may be away from Now (0: DefaultWebhookTolerance)
}

// ConstructEvent verifies a webhook delivery and decodes it, in one step:
// body is the raw request body, header the request's headers, secrets your
// subscription's whsec_ secret (or several, while you rotate it: one
// matching is enough). It refuses a delivery whose signature matches none
// of them or whose timestamp is more than DefaultWebhookTolerance from
// your clock (VerifyWebhook's errors), and a body that is not one
// notification item.
//
//	http.HandleFunc("/webhooks", func(w http.ResponseWriter, r *http.Request) {
//		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
//		if err != nil {
//			http.Error(w, "bad body", http.StatusBadRequest)
//			return
//		}
//		ev, err := client.ConstructEvent(body, r.Header, secret)
//		if err != nil {
//			http.Error(w, "bad signature", http.StatusUnauthorized)
//			return
//		}
//		// Deduplicate by ev.ID, store ev.Item, answer 2xx within 15 s.
//		w.WriteHeader(http.StatusNoContent)
//	})
func ConstructEvent(body []byte, header http.Header, secrets ...string) (WebhookEvent, error) {
	return ConstructEventWithOptions(body, header, WebhookOptions{}, secrets...)
}

// ConstructEventWithOptions is ConstructEvent with your clock and tolerance.
func ConstructEventWithOptions(body []byte, header http.Header, o WebhookOptions, secrets ...string) (WebhookEvent, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	err := ErrWebhookSecret // no secret given
	for _, s := range secrets {
		if err = VerifyWebhook(s, header, body, o.Now, o.Tolerance); err == nil {
			break
		}
	}
	if err != nil {
		return WebhookEvent{}, err
	}
	var hook Webhook
	if err := json.Unmarshal(body, &hook); err != nil {
		return WebhookEvent{}, fmt.Errorf("paysvc: webhook body: %w", err)
	}
	if n := len(hook.NotificationItems); n != 1 {
		return WebhookEvent{}, fmt.Errorf("paysvc: webhook body has %d notification items, not 1", n)
	}
	sec, _ := strconv.ParseInt(firstHeader(header, "webhook-timestamp", "X-Webhook-Timestamp"), 10, 64) // verified above
	attempt, _ := strconv.Atoi(header.Get("X-Webhook-Delivery-Attempt"))
	return WebhookEvent{
		ID:        firstHeader(header, "webhook-id", "X-Webhook-Id"),
		Timestamp: time.Unix(sec, 0),
		Attempt:   attempt,
		Live:      hook.Live,
		Item:      hook.NotificationItems[0].Item,
	}, nil
}

// firstHeader returns the first non-empty header among names.
func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
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
	OriginalPSP         string            `json:"originalPsp,omitempty"`
	MerchantReference   string            `json:"merchantReference"`
	MerchantAccountCode string            `json:"merchantAccountCode"`
	EventDate           string            `json:"eventDate"`
	Amount              Amount            `json:"amount"`
	PaymentMethod       string            `json:"paymentMethod,omitempty"`
	Reason              string            `json:"reason,omitempty"`
	Operations          []string          `json:"operations,omitempty"`
	AdditionalData      map[string]string `json:"additionalData,omitempty"`
}
