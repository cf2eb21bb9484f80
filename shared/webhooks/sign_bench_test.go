package webhooks_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/webhooks"
)

// benchSecret returns a well-formed test signing secret (32 bytes of b).
func benchSecret(b byte) string {
	return webhooks.SecretPrefix + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(b), 32)))
}

// benchPayload is the delivery body of a typical AUTHORISATION item.
func benchPayload(b *testing.B) []byte {
	b.Helper()
	item := payments.Notification{
		Amount: money.Amount{Value: 12950, Currency: "EUR"}, EventCode: "AUTHORISATION",
		EventDate: "2026-11-23T10:00:00+01:00", MerchantAccountCode: "DemoShopECOM",
		MerchantReference: "order-2026-000123", PaymentMethod: "visa", PSPReference: "QFQTPCQ8HXSKGK82",
		Success: "true", Operations: []string{"CANCEL", "CAPTURE", "REFUND"},
		AdditionalData: map[string]string{
			"metadata.ypMerchant": "m_demo", "metadata.ypSite": "site_demo", "metadata.ypSource": "advanced",
			"authCode": "058158", "cardSummary": "1111", "expiryDate": "03/2030", payments.KeyHMACSignature: "x",
		},
	}
	body, err := webhooks.BuildPayload(false, item, "advanced", 0)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// BenchmarkWebhookSign is the Standard Webhooks signature of one delivery
// attempt: with one active secret, and with two during a secret rotation.
func BenchmarkWebhookSign(b *testing.B) {
	body := benchPayload(b)
	ts := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name    string
		secrets []string
	}{
		{"secrets=1", []string{benchSecret('a')}},
		{"secrets=2", []string{benchSecret('a'), benchSecret('b')}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := webhooks.Sign(bc.secrets, "msg_abcdefghijklmnopqrstuvwxyz", ts, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWebhookPayload is the rendering of a delivery body from a
// notification item (done once per delivery by the notifications function).
func BenchmarkWebhookPayload(b *testing.B) {
	item := payments.Notification{
		Amount: money.Amount{Value: 12950, Currency: "EUR"}, EventCode: "AUTHORISATION",
		EventDate: "2026-11-23T10:00:00+01:00", MerchantAccountCode: "DemoShopECOM",
		MerchantReference: "order-2026-000123", PaymentMethod: "visa", PSPReference: "QFQTPCQ8HXSKGK82",
		Success: "true", AdditionalData: map[string]string{"metadata.ypMerchant": "m_demo", "authCode": "058158"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := webhooks.BuildPayload(false, item, "advanced", 0); err != nil {
			b.Fatal(err)
		}
	}
}
