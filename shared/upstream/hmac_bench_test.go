package upstream_test

import (
	"testing"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// benchHMACKey is a test-only HMAC key (hex, 32 bytes).
const benchHMACKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"

// benchItem is a typical AUTHORISATION notification item as the upstream
// sends it, signed with benchHMACKey.
func benchItem(b *testing.B, s *upstream.Signer) upstream.NotificationRequestItem {
	b.Helper()
	item := upstream.NotificationRequestItem{
		Amount:              money.Amount{Value: 12950, Currency: "EUR"},
		EventCode:           "AUTHORISATION",
		EventDate:           "2026-11-23T10:00:00+01:00",
		MerchantAccountCode: "DemoShopECOM",
		MerchantReference:   "order-2026-000123",
		PaymentMethod:       "visa",
		PSPReference:        "QFQTPCQ8HXSKGK82",
		Success:             "true",
		Operations:          []string{"CANCEL", "CAPTURE", "REFUND"},
		AdditionalData: map[string]string{
			"metadata.ypMerchant": "m_demo", "metadata.ypSite": "site_demo", "metadata.ypSource": "advanced",
			"authCode": "058158", "cardSummary": "1111", "expiryDate": "03/2030",
		},
	}
	item.AdditionalData[upstream.KeyHMACSignature] = s.SignItem(item)
	if !s.VerifyItem(item) {
		b.Fatal("sample item does not verify")
	}
	return item
}

// BenchmarkNotificationHMACVerify is the HMAC-SHA256 check of one
// notification item (hot path of the notifications endpoint).
func BenchmarkNotificationHMACVerify(b *testing.B) {
	s, err := upstream.NewSigner(benchHMACKey)
	if err != nil {
		b.Fatal(err)
	}
	item := benchItem(b, s)
	b.ReportAllocs()
	for b.Loop() {
		if !s.VerifyItem(item) {
			b.Fatal("verification failed")
		}
	}
}

// BenchmarkNotificationHMACReject is the check of an item with a wrong
// signature (what an attacker's request costs).
func BenchmarkNotificationHMACReject(b *testing.B) {
	s, err := upstream.NewSigner(benchHMACKey)
	if err != nil {
		b.Fatal(err)
	}
	item := benchItem(b, s)
	item.AdditionalData[upstream.KeyHMACSignature] = "ipnxGCaUZ4l8TUW75a71/ghd2Fe5ffvX0pV4TLTntIc="
	b.ReportAllocs()
	for b.Loop() {
		if s.VerifyItem(item) {
			b.Fatal("forged item verified")
		}
	}
}
