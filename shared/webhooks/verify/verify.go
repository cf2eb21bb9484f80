// Package verify checks the signature of a webhook delivery from paysvc.
// It depends on the standard library only, so merchants can import it or
// copy this file into their code base.
//
// A delivery carries the Standard Webhooks v1 headers (webhook-id,
// webhook-timestamp, webhook-signature) and the same values as X-Webhook-Id,
// X-Webhook-Timestamp and X-Webhook-HMAC-Signature. The signature is
// base64(HMAC-SHA256(key, "{id}.{timestamp}.{raw body}")), where key is the
// base64-decoded part of the subscription secret after "whsec_". During a
// secret rotation the header holds several space-separated "v1,<sig>"
// values; one matching is enough.
//
//	func handle(w http.ResponseWriter, r *http.Request) {
//		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
//		if err != nil {
//			http.Error(w, "bad body", http.StatusBadRequest)
//			return
//		}
//		if err := verify.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
//			http.Error(w, "bad signature", http.StatusUnauthorized)
//			return
//		}
//		// Deduplicate by X-Webhook-Id, store the event, answer 2xx within 15 s.
//		w.WriteHeader(http.StatusNoContent)
//	}
package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is the recommended maximum distance between the
// delivery's timestamp and the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// Errors returned by Verify.
var (
	ErrBadSecret       = errors.New("verify: secret must be whsec_ followed by base64")
	ErrMissingHeaders  = errors.New("verify: webhook id, timestamp or signature header missing")
	ErrBadTimestamp    = errors.New("verify: timestamp header is not Unix seconds")
	ErrTooOld          = errors.New("verify: timestamp too old")
	ErrTooNew          = errors.New("verify: timestamp too far in the future")
	ErrNoMatchingSigV1 = errors.New("verify: no matching v1 signature")
)

// Verify checks that body and headers are a delivery signed with secret
// ("whsec_…") at most tolerance away from now (tolerance <= 0 means
// DefaultTolerance). It reads the webhook-* headers, or the X-Webhook-*
// ones when those are absent. nil means authentic.
func Verify(secret string, headers http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return ErrBadSecret
	}
	id := first(headers, "webhook-id", "X-Webhook-Id")
	ts := first(headers, "webhook-timestamp", "X-Webhook-Timestamp")
	sigs := first(headers, "webhook-signature", "X-Webhook-HMAC-Signature")
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeaders
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	at := time.Unix(sec, 0)
	if now.Sub(at) > tolerance {
		return ErrTooOld
	}
	if at.Sub(now) > tolerance {
		return ErrTooNew
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
	return ErrNoMatchingSigV1
}

// first returns the first non-empty header among names.
func first(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}
