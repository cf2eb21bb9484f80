package paymentsapp

import (
	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/payments"
)

// DecodeRefund decodes and validates a POST refunds body strictly: amount
// is required, reference and lineItems optional, every other field refused
// (the fields the service sets with "set by the service").
func DecodeRefund(body []byte) (payments.RefundInput, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return payments.RefundInput{}, errs.Err()
	}
	var in payments.RefundInput
	o.Forbid(serverControlled...)
	in.Amount, _ = readAmount(o, "amount", false)
	in.Reference, _ = o.String("reference", false, referenceRules...)
	in.LineItems = readLineItems(o)
	o.Done()
	return in, errs.Err()
}
