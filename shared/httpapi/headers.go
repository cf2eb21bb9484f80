package httpapi

import (
	"net/http"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/idempotency"
)

// onceHeaders are the request headers the service reads one value of. Sent
// twice, which one counts depends on who reads it (net/http's Get takes the
// first, other readers the last or both joined), so a request carrying
// merchant B's key and then A's is served as neither: it is refused.
var onceHeaders = [...]string{"Authorization", idempotency.Header, "Content-Type"}

// singleHeaders returns a 400 naming each of onceHeaders that h carries
// more than once, or nil. Behind API Gateway repeated headers arrive as
// the event's multiValueHeaders, which shared/lambdaapi turns into the
// same repeated values.
func singleHeaders(h http.Header) error {
	var repeated []apperr.FieldError
	for _, name := range onceHeaders {
		if len(h[name]) > 1 { // canonical names: no lookup that allocates
			repeated = append(repeated, apperr.FieldError{Field: name, Message: "must be sent once"})
		}
	}
	if repeated != nil {
		return apperr.InvalidFields(repeated)
	}
	return nil
}
