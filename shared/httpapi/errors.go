package httpapi

import (
	"net/http"
	"strconv"

	"github.com/yp/paysvc/shared/apperr"
)

// errorSpec is the HTTP face of one domain error kind.
type errorSpec struct {
	Status int
	Code   string
}

// errorTable is the one place that maps domain error kinds to HTTP status and
// errorCode (docs/openapi.yaml). docs/api.md's error table mirrors it and
// TestErrorTableDocumented keeps the two in step.
var errorTable = map[apperr.Kind]errorSpec{
	apperr.Internal:             {http.StatusInternalServerError, "yp_9000"},
	apperr.Unauthenticated:      {http.StatusUnauthorized, "yp_1001"},
	apperr.Forbidden:            {http.StatusForbidden, "yp_1002"},
	apperr.Invalid:              {http.StatusBadRequest, "yp_2002"},
	apperr.TooLarge:             {http.StatusRequestEntityTooLarge, "yp_2002"},
	apperr.UnsupportedMediaType: {http.StatusUnsupportedMediaType, "yp_2002"},
	apperr.IdempotencyMismatch:  {http.StatusUnprocessableEntity, "yp_2003"},
	apperr.IdempotencyInFlight:  {http.StatusConflict, "yp_2004"},
	apperr.SiteIDMalformed:      {http.StatusBadRequest, "yp_3003"},
	apperr.SiteNotFound:         {http.StatusNotFound, "yp_3004"},
	apperr.SiteFlowNotEnabled:   {http.StatusConflict, "yp_3004"},
	apperr.MerchantNotFound:     {http.StatusNotFound, "yp_3005"},
	apperr.PaymentNotFound:      {http.StatusNotFound, "yp_3006"},
	apperr.MerchantNotEcommerce: {http.StatusUnprocessableEntity, "yp_5003"},
	apperr.RateLimited:          {http.StatusTooManyRequests, "yp_9006"},
	apperr.NotFound:             {http.StatusNotFound, "yp_9004"},
	apperr.MethodNotAllowed:     {http.StatusMethodNotAllowed, "yp_9005"},
	apperr.CaptureFailed:        {http.StatusInternalServerError, "yp_4003"},
	apperr.DetailsFailed:        {http.StatusInternalServerError, "yp_4004"},
	apperr.ReversalFailed:       {http.StatusInternalServerError, "yp_4005"},
	apperr.PaymentFailed:        {http.StatusInternalServerError, "yp_4006"},
	apperr.AmountUpdateFailed:   {http.StatusInternalServerError, "yp_4007"},
	apperr.SessionFailed:        {http.StatusInternalServerError, "yp_4008"},
	apperr.PaymentMethodsFailed: {http.StatusInternalServerError, "yp_4009"},
	apperr.PaymentBusy:          {http.StatusConflict, "yp_2005"},
	apperr.RefundFailed:         {http.StatusInternalServerError, "yp_4010"},
	apperr.WebhookNotFound:      {http.StatusNotFound, "yp_3007"},
	apperr.CancelFailed:         {http.StatusInternalServerError, "yp_4011"},
}

// specFor returns the status and code of a kind (Internal for an unknown one).
func specFor(k apperr.Kind) errorSpec {
	if s, ok := errorTable[k]; ok {
		return s
	}
	return errorTable[apperr.Internal]
}

// errorBody is the JSON error object of every error response.
type errorBody struct {
	ErrorCode string              `json:"errorCode"`
	Message   string              `json:"message"`
	Fields    []apperr.FieldError `json:"fields,omitempty"`
}

// writeError writes err as the service's JSON error and notes it on the
// request's log record (info; nil for none). Internal errors never show
// their cause to the caller; it is attached to the request log instead.
func writeError(w http.ResponseWriter, info *reqInfo, err error) {
	resp := renderError(err)
	e := apperr.As(err)
	if info != nil {
		info.ErrorCode = specFor(e.Kind).Code
		info.Err = err
	}
	if e.Kind == apperr.RateLimited && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeRaw(w, resp.status, resp.body)
}
