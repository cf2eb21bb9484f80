package payments

import (
	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// RefundInput is a validated POST refunds body (docs/openapi.yaml).
type RefundInput struct {
	Amount    money.Amount
	Reference string
	LineItems []upstream.LineItem
}

// ParseRefund decodes and validates a refunds body strictly: amount is
// required, reference and lineItems optional, every other field refused
// (the fields the service sets with "set by the service").
func ParseRefund(body []byte) (RefundInput, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return RefundInput{}, errs.Err()
	}
	var in RefundInput
	o.Forbid(serverControlled...)
	in.Amount, _ = readAmount(o, "amount", false)
	in.Reference, _ = o.String("reference", false, jsonin.MaxLen(maxReference), jsonin.NotEmpty, jsonin.NoControl)
	in.LineItems = readLineItems(o)
	o.Done()
	return in, errs.Err()
}
