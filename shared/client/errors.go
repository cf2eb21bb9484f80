package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is a failed call: the answer's status, errorCode, message and
// invalid fields, and its X-Request-Id (quote it to support). Match it with
// errors.Is against an ErrorCode (errors.Is(err, CodePaymentNotFound)) or a
// class of failures (errors.Is(err, ErrNotFound)), or take it with
// errors.As. A network failure after the last retry is returned as is, not
// as *Error.
type Error struct {
	Status  int          `json:"-"`
	Code    ErrorCode    `json:"errorCode"`
	Message string       `json:"message"`
	Fields  []FieldError `json:"fields,omitempty"`
	// RequestID, IdempotencyKey and Replayed are as in Meta: a Replayed
	// error is the stored answer of an earlier call with the same key (send
	// the call with a new key to try it again).
	RequestID      string        `json:"-"`
	IdempotencyKey string        `json:"-"`
	Replayed       bool          `json:"-"`
	RetryAfter     time.Duration `json:"-"` // from Retry-After on 429
}

// FieldError is one invalid request field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error says what failed in one line; the fields are in Fields, not
// repeated here.
func (e *Error) Error() string {
	s := fmt.Sprintf("paysvc: %d %s: %s", e.Status, e.Code, e.Message)
	var notes []string
	switch len(e.Fields) {
	case 0:
	case 1:
		notes = append(notes, "1 field")
	default:
		notes = append(notes, strconv.Itoa(len(e.Fields))+" fields")
	}
	if e.Replayed {
		notes = append(notes, "replayed")
	}
	if e.RequestID != "" {
		notes = append(notes, "request "+e.RequestID)
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// Retryable reports whether the same call may succeed later.
func (e *Error) Retryable() bool {
	return e.Code == CodeIdempotencyInFlight || e.Code == CodePaymentBusy || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// Is reports whether e is target: an ErrorCode equal to e's code, or one
// of the Err… classes e belongs to.
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case ErrorCode:
		return e.Code == t
	case *errorClass:
		return t.match(e)
	}
	return false
}

// answerError is the *Error of a non-2xx answer with body b.
func answerError(m Meta, b []byte) *Error {
	e := &Error{Status: m.StatusCode, RequestID: m.RequestID, IdempotencyKey: m.IdempotencyKey, Replayed: m.Replayed}
	if json.Unmarshal(b, e) != nil || e.Code == "" {
		e.Message = strings.TrimSpace(string(b))
		if e.Message == "" {
			e.Message = http.StatusText(m.StatusCode)
		}
	}
	if s, err := strconv.Atoi(m.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// ErrorCode is an answer's errorCode (docs/openapi.yaml, schema Error). It
// is an error itself, so errors.Is(err, CodePaymentNotFound) matches a
// failed call with that code.
type ErrorCode string

// Error is the code itself (so it prints as it is written).
func (c ErrorCode) Error() string { return string(c) }

// Every errorCode of the API, with its HTTP status.
const (
	CodeUnauthorized         ErrorCode = "yp_1001" // 401: missing, malformed, unknown or revoked API key, or one of the other environment
	CodeForbidden            ErrorCode = "yp_1002" // 403: the key lacks the permission or the site
	CodeInvalidRequest       ErrorCode = "yp_2002" // 400 (Fields says where), 413 body too large, 415 not JSON
	CodeIdempotencyMismatch  ErrorCode = "yp_2003" // 422: Idempotency-Key reused with another request
	CodeIdempotencyInFlight  ErrorCode = "yp_2004" // 409: a call with the same Idempotency-Key is still running (retried)
	CodePaymentBusy          ErrorCode = "yp_2005" // 409: too many concurrent changes to one payment, nothing sent upstream (retried)
	CodeMalformedSiteID      ErrorCode = "yp_3003" // 400: malformed siteId
	CodeSiteNotFound         ErrorCode = "yp_3004" // 404 unknown or non-ecommerce site; 409 site without the sessions flow
	CodeMerchantNotFound     ErrorCode = "yp_3005" // 404: merchant deactivated or unknown
	CodePaymentNotFound      ErrorCode = "yp_3006" // 404: payment (or stored payment method) not found for this site
	CodeWebhookNotFound      ErrorCode = "yp_3007" // 404: webhook delivery or subscription not found for this merchant
	CodeCaptureFailed        ErrorCode = "yp_4003" // 500: the platform refused or failed the capture
	CodeDetailsFailed        ErrorCode = "yp_4004" // 500: the platform failed the payment details
	CodeReversalFailed       ErrorCode = "yp_4005" // 500: the platform refused or failed the reversal
	CodePaymentFailed        ErrorCode = "yp_4006" // 500: the platform failed the payment (or the stored method's deletion)
	CodeAmountUpdateFailed   ErrorCode = "yp_4007" // 500: the platform refused or failed the amount update
	CodeSessionFailed        ErrorCode = "yp_4008" // 500: the platform refused or failed the session
	CodePaymentMethodsFailed ErrorCode = "yp_4009" // 500: the platform failed the payment methods
	CodeRefundFailed         ErrorCode = "yp_4010" // 500: the platform refused or failed the refund
	CodeCancelFailed         ErrorCode = "yp_4011" // 500: the platform refused or failed the cancel
	CodeMerchantNotEcommerce ErrorCode = "yp_5003" // 422: merchant not set up for ecommerce
	CodeInternal             ErrorCode = "yp_9000" // 500: internal error (retried)
	CodeNoSuchEndpoint       ErrorCode = "yp_9004" // 404: no such endpoint
	CodeMethodNotAllowed     ErrorCode = "yp_9005" // 405: method not allowed
	CodeRateLimited          ErrorCode = "yp_9006" // 429: too many requests for this API key (retried after Retry-After)
)

// errorClass is a class of failed calls, matched by errors.Is.
type errorClass struct {
	name  string
	match func(*Error) bool
}

func (c *errorClass) Error() string { return "paysvc: " + c.name }

func class(name string, match func(*Error) bool) error { return &errorClass{name, match} }

func status(s int) func(*Error) bool { return func(e *Error) bool { return e.Status == s } }

func code(codes ...ErrorCode) func(*Error) bool {
	return func(e *Error) bool {
		for _, c := range codes {
			if e.Code == c {
				return true
			}
		}
		return false
	}
}

// Classes of failed calls, for errors.Is(err, ErrNotFound) and the like.
var (
	ErrUnauthorized        = class("unauthorized", status(http.StatusUnauthorized))
	ErrForbidden           = class("forbidden", status(http.StatusForbidden))
	ErrInvalidRequest      = class("invalid request", code(CodeInvalidRequest, CodeMalformedSiteID))
	ErrNotFound            = class("not found", status(http.StatusNotFound))
	ErrIdempotencyMismatch = class("idempotency key reused with another request", code(CodeIdempotencyMismatch))
	ErrIdempotencyInFlight = class("idempotency key in flight", code(CodeIdempotencyInFlight))
	ErrPaymentBusy         = class("payment busy", code(CodePaymentBusy))
	ErrRateLimited         = class("rate limited", status(http.StatusTooManyRequests))
	// ErrUpstream: the platform refused or failed the operation (yp_4003–yp_4011).
	ErrUpstream = class("the platform failed", code(CodeCaptureFailed, CodeDetailsFailed, CodeReversalFailed, CodePaymentFailed,
		CodeAmountUpdateFailed, CodeSessionFailed, CodePaymentMethodsFailed, CodeRefundFailed, CodeCancelFailed))
	// ErrServer: any 5xx, ErrUpstream's included; the client retried it.
	ErrServer = class("server error", func(e *Error) bool { return e.Status >= 500 })
)
