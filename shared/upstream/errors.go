package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrUnavailable is matched (errors.Is) by every failure where the upstream
// did not give a definitive answer: 5xx and 429 responses, timeouts,
// cancellations and connection failures. Whether the upstream processed the
// request is unknown; retry with the same idempotency key.
var ErrUnavailable = errors.New("upstream unavailable")

// ErrInFlight is matched (errors.Is) by a 409 answer with errorCode "704":
// a request with the same idempotency key is still being processed upstream.
var ErrInFlight = errors.New("upstream request with this idempotency key is in progress")

// ErrorCodeInFlight is the upstream errorCode of a concurrent request with
// the same Idempotency-Key (HTTP 409).
const ErrorCodeInFlight = "704"

// ErrorCodeContractNotFound is the upstream errorCode of an unknown stored
// payment method (HTTP 422, "Contract not found").
const ErrorCodeContractNotFound = "800"

// Error is an error answer of the upstream: its HTTP status and the fields of
// its JSON error body {status, errorCode, message, errorType, pspReference}.
type Error struct {
	// Op names the call, e.g. "POST /payments".
	Op string
	// HTTPStatus is the status code of the upstream response.
	HTTPStatus int
	// ErrorCode is the upstream's errorCode, e.g. "101".
	ErrorCode string
	// Message is the upstream's message (or the start of a non-JSON body).
	Message string
	// ErrorType is the upstream's errorType, e.g. "validation".
	ErrorType string
	// PSPReference is the upstream's reference of the failed request, if any.
	PSPReference string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("upstream: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "HTTP %d", e.HTTPStatus)
	if e.ErrorCode != "" {
		fmt.Fprintf(&b, " errorCode %s", e.ErrorCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.PSPReference != "" {
		fmt.Fprintf(&b, " (pspReference %s)", e.PSPReference)
	}
	return b.String()
}

// Temporary reports whether retrying the same request may succeed: true for
// 5xx and 429 answers, false for every other 4xx (a deterministic rejection).
func (e *Error) Temporary() bool {
	return e.HTTPStatus >= 500 || e.HTTPStatus == http.StatusTooManyRequests
}

// Rejected reports a deterministic refusal of the request itself: any
// answer that is neither temporary nor a refusal of the service's own
// credentials (401, 403). Sending the same request again gets the same
// answer.
func (e *Error) Rejected() bool {
	return !e.Temporary() && e.HTTPStatus != http.StatusUnauthorized && e.HTTPStatus != http.StatusForbidden
}

// NotFound reports that the upstream does not know what the request names:
// 404, or errorCode "800" (Contract not found, as it answers an unknown
// stored payment method).
func (e *Error) NotFound() bool {
	return e.HTTPStatus == http.StatusNotFound || e.ErrorCode == ErrorCodeContractNotFound
}

// Is makes errors.Is(err, ErrUnavailable) true for 5xx and 429 answers and
// errors.Is(err, ErrInFlight) true for 409 errorCode "704".
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return e.Temporary()
	case ErrInFlight:
		return e.HTTPStatus == http.StatusConflict && e.ErrorCode == ErrorCodeInFlight
	}
	return false
}

// unavailableError is a transport-level failure: timeout, cancellation,
// connection error or an unreadable response.
type unavailableError struct {
	op    string
	cause error
}

func (e *unavailableError) Error() string {
	return "upstream: " + e.op + ": unavailable: " + e.cause.Error()
}

func (e *unavailableError) Unwrap() error { return e.cause }

func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

// Temporary reports true: the request may succeed when retried.
func (e *unavailableError) Temporary() bool { return true }

// IsUnavailable reports whether err means the upstream gave no definitive
// answer (5xx, 429, timeout, connection failure).
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// IsInFlight reports whether err is the upstream's 409 "704": a request with
// the same idempotency key is still in progress.
func IsInFlight(err error) bool { return errors.Is(err, ErrInFlight) }

// AsError returns the *Error in err's chain, if there is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
