package idempotency_test

import (
	"testing"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/testenv"
)

// BenchmarkFingerprint is the request fingerprint of an idempotent POST
// payments: canonical JSON of the body and SHA-256.
func BenchmarkFingerprint(b *testing.B) {
	body := []byte(testenv.PaymentBody("order-2026-000123"))
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
		if k := idempotency.UpstreamKey("m_demo", "order-2026-000123-attempt-1", "0a2f9c"); len(k) != 43 {
			b.Fatalf("key %q", k)
		}
	}
}
