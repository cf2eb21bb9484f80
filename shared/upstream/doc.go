// Package upstream is a small typed client for the upstream checkout API,
// whose formats are those of Adyen's Checkout API v71 (docs/upstream.md).
//
// It covers the seven endpoints the service uses — POST /sessions,
// /paymentMethods, /payments, /payments/details,
// /payments/{pspReference}/captures, /reversals, /amountUpdates — plus
// DELETE /storedPaymentMethods/{id} for stored-card deletion, and the
// standard-notification types with their HMAC signature (hmac.go).
//
// Behaviour worth knowing:
//
//   - Every call sends X-API-Key and, when the caller gives one, the
//     Idempotency-Key header (at most 64 characters, the upstream's limit).
//   - Upstream 4xx answers become *Error (Temporary() false). Upstream 5xx,
//     429, timeouts and connection failures satisfy
//     errors.Is(err, ErrUnavailable): the outcome is unknown or the request
//     was not processed, and the caller retries with the same idempotency key.
//     A 409 with errorCode "704" (a concurrent request with the same
//     idempotency key is still running) satisfies errors.Is(err, ErrInFlight).
//   - The only retry is a single one for a connection that could not be
//     established (no byte of the request was sent). Nothing is retried after
//     a timeout or a 5xx: the caller's idempotency handles that.
//   - The API key never appears in errors or logs.
package upstream
