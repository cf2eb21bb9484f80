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

// The kinds. Their HTTP status and errorCode live in httpapi.
const (
	Internal             Kind = iota // 500 yp_9000: a bug or a store failure
	Unauthenticated                  // 401 yp_1001
	Forbidden                        // 403 yp_1002
	Invalid                          // 400 yp_2002
	TooLarge                         // 413 yp_2002
	IdempotencyMismatch              // 422 yp_2003
	IdempotencyInFlight              // 409 yp_2004
	SiteIDMalformed                  // 400 yp_3003
	SiteNotFound                     // 404 yp_3004
	SiteFlowNotEnabled               // 409 yp_3004
	MerchantNotFound                 // 404 yp_3005
	PaymentNotFound                  // 404 yp_3006
	MerchantNotEcommerce             // 422 yp_5003
	RateLimited                      // 429 yp_9006
	NotFound                         // 404 yp_9004: no such route
	MethodNotAllowed                 // 405 yp_9005
	UnsupportedMediaType             // 415 yp_2002
	CaptureFailed                    // 500 yp_4003
	DetailsFailed                    // 500 yp_4004
	ReversalFailed                   // 500 yp_4005
	PaymentFailed                    // 500 yp_4006
	AmountUpdateFailed               // 500 yp_4007
	SessionFailed                    // 500 yp_4008
	PaymentMethodsFailed             // 500 yp_4009
	PaymentBusy                      // 409 yp_2005: too many concurrent changes to one payment
)

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
