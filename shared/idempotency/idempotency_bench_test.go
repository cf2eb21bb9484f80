package idempotency_test

import (
	"testing"

	"github.com/yp/paysvc/shared/idempotency"
)

// benchBody is a typical Drop-in payments request body (about 1 KB): the
// fingerprint canonicalises it, so its size and shape drive the cost.
const benchBody = `{"amount":{"value":12950,"currency":"EUR"},"reference":"order-2026-000123",
"returnUrl":"https://shop.example/checkout/return?order=000123",
"paymentMethod":{"type":"scheme","holderName":"J. Smith","encryptedCardNumber":"test_4111111111111111",
"encryptedExpiryMonth":"test_03","encryptedExpiryYear":"test_2030","encryptedSecurityCode":"test_737","brand":"visa"},
"browserInfo":{"acceptHeader":"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8","colorDepth":24,
"language":"nl-NL","javaEnabled":false,"screenHeight":1080,"screenWidth":1920,
"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
"timeZoneOffset":-60},"origin":"https://shop.example","channel":"Web","shopperEmail":"j.smith@example.com",
"shopperIP":"192.0.2.10","shopperLocale":"nl-NL","billingAddress":{"street":"Simon Carmiggeltstraat",
"houseNumberOrName":"6-50","postalCode":"1011DJ","city":"Amsterdam","country":"NL"}}`

// BenchmarkFingerprint is the request fingerprint of an idempotent POST
// payments: canonical JSON of the body and SHA-256.
func BenchmarkFingerprint(b *testing.B) {
	body := []byte(benchBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if fp := idempotency.Fingerprint("POST", "/v1/ecom/site_demo/payments", body); len(fp) != 64 {
			b.Fatalf("fingerprint %q", fp)
		}
	}
}

// BenchmarkUpstreamKey is the derivation of the Idempotency-Key sent upstream.
func BenchmarkUpstreamKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if k := idempotency.UpstreamKey("m_demo", "order-2026-000123-attempt-1"); len(k) != 43 {
			b.Fatalf("key %q", k)
		}
	}
}
