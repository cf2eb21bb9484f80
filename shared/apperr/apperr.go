// Package apperr defines the service's domain error kinds. Domain code returns
// *Error values (or wraps them); the HTTP layer maps each Kind to exactly one
// status and errorCode in one place (httpapi.errorTable).
package apperr

import (
	"errors"
	"fmt"
)

// Kind is a class of failure a caller can act on.
type Kind int

// The kinds. Their HTTP status and errorCode live in one place, httpapi's
// error table; a test there proves every kind has a row.
const (
	Internal             Kind = iota // a bug or a store failure
	Unauthenticated                  // no valid API key or notification credentials
	Forbidden                        // the key lacks the permission or site
	Invalid                          // the request is invalid (fields name what)
	TooLarge                         // the body is too large
	IdempotencyMismatch              // an Idempotency-Key reused with another request
	IdempotencyInFlight              // a request with the same Idempotency-Key is running
	SiteIDMalformed                  // the siteId is malformed
	SiteNotFound                     // no such site for this key
	SiteFlowNotEnabled               // the site lacks the flow
	MerchantNotFound                 // the merchant is missing or deactivated
	PaymentNotFound                  // no such payment for this site
	MerchantNotEcommerce             // the merchant is not set up for ecommerce
	RateLimited                      // over the key's rate limit
	NotFound                         // no such route
	MethodNotAllowed                 // the route lacks the method
	UnsupportedMediaType             // the body is not JSON
	CaptureFailed                    // the upstream capture failed
	DetailsFailed                    // the upstream details call failed
	ReversalFailed                   // the upstream reversal failed
	PaymentFailed                    // the upstream payment failed
	AmountUpdateFailed               // the upstream amount update failed
	SessionFailed                    // the upstream session creation failed
	PaymentMethodsFailed             // the upstream payment-methods call failed
	PaymentBusy                      // too many concurrent changes to one payment
	RefundFailed                     // the upstream refund failed
	WebhookNotFound                  // no such webhook delivery or subscription for this merchant
	CancelFailed                     // the upstream cancel failed

	kindEnd // after the last kind: new kinds go above
)

// Kinds returns every kind, for tests that walk them all.
func Kinds() []Kind {
	out := make([]Kind, 0, kindEnd)
	for k := Kind(0); k < kindEnd; k++ {
		out = append(out, k)
	}
	return out
}

// FieldError names one offending request field, e.g. "lineItems[1].description".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a domain error with a kind, a merchant-safe message and optional
// field details. Cause is for logs only and never reaches the caller.
type Error struct {
	Kind       Kind
	Message    string
	Fields     []FieldError
	RetryAfter int // seconds, for RateLimited
	Cause      error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Cause)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// New returns an error of kind k with a message.
func New(k Kind, msg string) *Error { return &Error{Kind: k, Message: msg} }

// Newf returns an error of kind k with a formatted message.
func Newf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of kind k with a message and a cause kept for logs.
func Wrap(k Kind, msg string, cause error) *Error {
	return &Error{Kind: k, Message: msg, Cause: cause}
}

// InvalidFields returns a 400 naming the fields. The message names the first.
func InvalidFields(fields []FieldError) *Error {
	msg := "invalid request"
	if len(fields) > 0 {
		msg = fields[0].Field + ": " + fields[0].Message
		if fields[0].Field == "" {
			msg = fields[0].Message
		}
	}
	return &Error{Kind: Invalid, Message: msg, Fields: fields}
}

// InvalidField returns a 400 naming one field.
func InvalidField(field, msg string) *Error {
	return InvalidFields([]FieldError{{Field: field, Message: msg}})
}

// KindOf returns the kind of err, or Internal when err carries none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// As returns the *Error inside err, or a generic Internal error.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: Internal, Message: "internal error", Cause: err}
}
