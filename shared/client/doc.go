// Package client is the Go client of the paysvc merchant API
// (docs/openapi.yaml). It is a module of its own,
// github.com/yp/paysvc/shared/client, and depends on the standard library
// only: a module that imports it needs nothing else. With read access to
// the (private) repository, go get fetches it (GOPRIVATE=github.com/yp/*);
// without, require it with a replace directive to a copy of this
// directory (docs/client.md says more):
//
//	require github.com/yp/paysvc/shared/client v0.0.0
//	replace github.com/yp/paysvc/shared/client => /path/to/paysvc/shared/client
//
// Every POST carries an Idempotency-Key: the caller's (WithIdempotencyKey)
// or one generated per call, kept across the client's own retries, so a
// retried call never pays twice. The client retries 409 yp_2004 and
// yp_2005, 429 (honouring Retry-After), 5xx and network errors with
// exponential backoff and full jitter, up to MaxRetries, and stops when the
// context ends.
//
// Results carry Meta: the request id, the Idempotency-Key sent and whether
// the answer was an idempotent replay. Failed calls return *Error, matched
// with errors.Is by ErrorCode (CodePaymentNotFound) or class (ErrNotFound,
// ErrRateLimited, …). AllEvents and AllWebhookDeliveries iterate over every
// page of a listing. A payment's next step is a typed Action whose Raw JSON
// goes to the checkout component. ConstructEvent verifies a webhook
// delivery's signature and timestamp and decodes it in one step.
package client
