package paymentsapp_test

import (
	"testing"

	"github.com/yp/paysvc/shared/paymentsapp"
)

// benchPaymentBody is a typical Drop-in payments request: the component's
// state data (encrypted card, browserInfo, riskData, origin, channel,
// billing address) plus amount, reference and returnUrl — about 1.3 KB.
const benchPaymentBody = `{
  "amount": {"value": 12950, "currency": "EUR"},
  "reference": "order-2026-000123",
  "returnUrl": "https://shop.example/checkout/return?order=000123",
  "paymentMethod": {"type": "scheme", "holderName": "J. Smith",
    "encryptedCardNumber": "test_4111111111111111", "encryptedExpiryMonth": "test_03",
    "encryptedExpiryYear": "test_2030", "encryptedSecurityCode": "test_737", "brand": "visa",
    "checkoutAttemptId": "do-not-track-6f1a0c5e-6a89-4d3e-9b7f-2f1c5a8e0b11"},
  "browserInfo": {"acceptHeader": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "colorDepth": 24, "language": "nl-NL", "javaEnabled": false, "screenHeight": 1080, "screenWidth": 1920,
    "userAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    "timeZoneOffset": -60},
  "riskData": {"clientData": "eyJ2ZXJzaW9uIjoiMS4wLjAiLCJkZXZpY2VGaW5nZXJwcmludCI6IkRwcXdVNHpFZE4wMDUwMDAwMDAwMDAwMDAwQlRXREFxR2lzTDAwNTE0Nzg3NzZjVkI5NGlLekJHcjdvd0NDaDNkN0hQMDA"},
  "origin": "https://shop.example",
  "channel": "Web",
  "shopperEmail": "j.smith@example.com",
  "shopperIP": "192.0.2.10",
  "shopperLocale": "nl-NL",
  "billingAddress": {"street": "Simon Carmiggeltstraat", "houseNumberOrName": "6-50", "postalCode": "1011DJ",
    "city": "Amsterdam", "country": "NL"}
}`

// benchSessionBody is a typical sessions request with two line items.
const benchSessionBody = `{
  "amount": {"value": 12950, "currency": "EUR"},
  "reference": "order-2026-000124",
  "returnUrl": "https://shop.example/checkout/return?order=000124",
  "shopperEmail": "j.smith@example.com",
  "shopperLocale": "nl-NL",
  "shopperReference": "shopper-000042",
  "lineItems": [
    {"id": "sku-1", "description": "Trail running shoes", "quantity": 1, "amountIncludingTax": 9950},
    {"id": "sku-2", "description": "Merino socks (3 pairs)", "quantity": 1, "amountIncludingTax": 3000}
  ]
}`

// BenchmarkParsePayment is the decoding and strict validation of a
// payments request body (hot path of POST payments).
func BenchmarkParsePayment(b *testing.B) {
	body := []byte(benchPaymentBody)
	if _, err := paymentsapp.DecodePayment(body); err != nil {
		b.Fatalf("sample body rejected: %v", err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := paymentsapp.DecodePayment(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseSession is the decoding and strict validation of a
// sessions request body (hot path of POST sessions).
func BenchmarkParseSession(b *testing.B) {
	body := []byte(benchSessionBody)
	if _, err := paymentsapp.DecodeSession(body); err != nil {
		b.Fatalf("sample body rejected: %v", err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := paymentsapp.DecodeSession(body); err != nil {
			b.Fatal(err)
		}
	}
}
