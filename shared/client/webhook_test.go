package client_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/client"
)

// A delivery as paysvc sends it, signed by the service's own signer
// (shared/webhooks.Sign) with one secret, then with that and another
// during a rotation. The service's module checks the client against the
// signer itself (tests/client_webhooks_test.go).
const (
	hookSecret     = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw5cCuyBpMt2o="
	hookNewSecret  = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	hookID         = "msg_2bq8z4y7"
	hookTimestamp  = "1767225600"
	hookBody       = `{"live":false,"notificationItems":[{"NotificationRequestItem":{"additionalData":{"paymentSource":"advanced"},"amount":{"currency":"EUR","value":1000},"eventCode":"AUTHORISATION","eventDate":"2026-01-01T00:00:00Z","merchantAccountCode":"DemoShopECOM","merchantReference":"order-1002","paymentMethod":"visa","pspReference":"QFQTPCQ8HXSKGK82","success":"true"}}]}`
	hookSignature  = "v1,1ZGFI9WK7lYANTIyVFMwK4wZiVNkMAyAyL+Umy6O8hY="
	hookSignatures = "v1,1ZGFI9WK7lYANTIyVFMwK4wZiVNkMAyAyL+Umy6O8hY= v1,J228Ic/9zjY8aI7fd0aLRy6DqKODhaP+s3Eyr+a5vfM="
)

func hookHeader(names [3]string, sig string) http.Header {
	h := http.Header{}
	h.Set(names[0], hookID)
	h.Set(names[1], hookTimestamp)
	h.Set(names[2], sig)
	h.Set("X-Webhook-Delivery-Attempt", "2")
	return h
}

var (
	standardNames = [3]string{"webhook-id", "webhook-timestamp", "webhook-signature"}
	xNames        = [3]string{"X-Webhook-Id", "X-Webhook-Timestamp", "X-Webhook-HMAC-Signature"}
)

func TestConstructEvent(t *testing.T) {
	sent := time.Unix(1767225600, 0)
	for _, tc := range []struct {
		name      string
		body      string
		header    http.Header
		secrets   []string
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{"signed", hookBody, hookHeader(standardNames, hookSignature), []string{hookSecret}, sent.Add(time.Minute), 0, nil},
		{"X-Webhook-* headers only", hookBody, hookHeader(xNames, hookSignature), []string{hookSecret}, sent, 0, nil},
		{"rotation: the new secret alone", hookBody, hookHeader(standardNames, hookSignatures), []string{hookNewSecret}, sent, 0, nil},
		{"the receiver's rotation: one of two secrets", hookBody, hookHeader(standardNames, hookSignature), []string{hookNewSecret, hookSecret}, sent, 0, nil},
		{"another secret", hookBody, hookHeader(standardNames, hookSignature), []string{hookNewSecret}, sent, 0, client.ErrWebhookSignature},
		{"body changed", hookBody + " ", hookHeader(standardNames, hookSignature), []string{hookSecret}, sent, 0, client.ErrWebhookSignature},
		{"too old", hookBody, hookHeader(standardNames, hookSignature), []string{hookSecret}, sent.Add(6 * time.Minute), 0, client.ErrWebhookTooOld},
		{"old, within a longer tolerance", hookBody, hookHeader(standardNames, hookSignature), []string{hookSecret}, sent.Add(6 * time.Minute), 10 * time.Minute, nil},
		{"too new", hookBody, hookHeader(standardNames, hookSignature), []string{hookSecret}, sent.Add(-6 * time.Minute), 0, client.ErrWebhookTooNew},
		{"unsigned", hookBody, http.Header{}, []string{hookSecret}, sent, 0, client.ErrWebhookHeaders},
		{"no secret", hookBody, hookHeader(standardNames, hookSignature), nil, sent, 0, client.ErrWebhookSecret},
		{"not a secret", hookBody, hookHeader(standardNames, hookSignature), []string{"whsec_***"}, sent, 0, client.ErrWebhookSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := client.ConstructEventWithOptions([]byte(tc.body), tc.header, client.WebhookOptions{Now: tc.now, Tolerance: tc.tolerance}, tc.secrets...)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			if ev.ID != hookID || !ev.Timestamp.Equal(sent) || ev.Attempt != 2 || ev.Live || ev.Item.EventCode != "AUTHORISATION" ||
				ev.Item.PSPReference != "QFQTPCQ8HXSKGK82" || ev.Item.Amount.Value != 1000 || ev.Item.AdditionalData["paymentSource"] != "advanced" {
				t.Fatalf("%+v", ev)
			}
		})
	}
}
