// Package simulator is an in-process stand-in for the upstream checkout
// platform's TEST environment (Adyen Checkout API v71 formats), so the
// service and its tests can run every flow without an account.
//
// A Simulator is an http.Handler serving, under a configurable base path
// (default "/v71"):
//
//	POST   {base}/sessions                         201
//	POST   {base}/paymentMethods                   200
//	POST   {base}/payments                         200
//	POST   {base}/payments/details                 200
//	POST   {base}/payments/{psp}/captures          201
//	POST   {base}/payments/{psp}/reversals         201
//	POST   {base}/payments/{psp}/amountUpdates     201
//	POST   {base}/payments/{psp}/refunds           201
//	DELETE {base}/storedPaymentMethods/{id}        204
//
// plus test hooks under /_sim/ (see hooks.go and README.md). It checks
// X-API-Key, validates like the upstream, honours Idempotency-Key, decides
// outcomes from a documented table of test cards and holder names
// (cards.go, README.md), completes actions through /payments/details, keeps
// a modification state machine, and emits signed standard notifications to a
// pluggable Notifier asynchronously (Flush makes them deterministic).
//
// Time, randomness and latency are injected through Options, so tests are
// fast and reproducible.
package simulator
