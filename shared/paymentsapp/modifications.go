package paymentsapp

import (
	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
)

// DecodeCapture decodes and validates a POST captures body.
func DecodeCapture(body []byte) (payments.CaptureInput, error) {
	var items []payments.LineItem
	amount, ref, err := modificationBody(body, true, func(o *jsonin.Obj) { items = readLineItems(o) })
	return payments.CaptureInput{Amount: amount, Reference: ref, LineItems: items}, err
}

// DecodeReversal decodes and validates a POST reversals body.
func DecodeReversal(body []byte) (payments.ReversalInput, error) {
	_, ref, err := modificationBody(body, false, nil)
	return payments.ReversalInput{Reference: ref}, err
}

// DecodeAmountUpdate decodes and validates a POST amount-updates body; its
// pspReference must equal psp, the path's.
func DecodeAmountUpdate(body []byte, psp string) (payments.AmountUpdateInput, error) {
	amount, ref, err := modificationBody(body, true, func(o *jsonin.Obj) {
		if v, ok := o.String("pspReference", true, jsonin.Identifier); ok && v != psp {
			o.Fail("pspReference", "must equal the pspReference in the path")
		}
	})
	return payments.AmountUpdateInput{Amount: amount, Reference: ref}, err
}

// modificationBody reads the common fields: amount (when wanted) and reference.
func modificationBody(body []byte, wantAmount bool, extra func(o *jsonin.Obj)) (money.Amount, string, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return money.Amount{}, "", errs.Err()
	}
	o.Forbid(serverControlled...)
	var amount money.Amount
	if wantAmount {
		amount, _ = readAmount(o, "amount", false)
	}
	ref, _ := o.String("reference", false, referenceRules...)
	if extra != nil {
		extra(o)
	}
	o.Done()
	return amount, ref, errs.Err()
}

// DecodeDeleteStoredMethod validates DELETE stored-payment-methods/{id}'s
// path id and shopperReference query parameter.
func DecodeDeleteStoredMethod(id, shopperReference string) (payments.DeleteStoredMethodInput, error) {
	if msg := shopperReferenceRule(shopperReference); msg != "" {
		return payments.DeleteStoredMethodInput{}, apperr.InvalidField("shopperReference", msg)
	}
	if id == "" || len(id) > 64 {
		return payments.DeleteStoredMethodInput{}, apperr.InvalidField("storedPaymentMethodId", "must be 1 to 64 characters")
	}
	if msg := jsonin.Identifier(id); msg != "" {
		return payments.DeleteStoredMethodInput{}, apperr.InvalidField("storedPaymentMethodId", msg)
	}
	return payments.DeleteStoredMethodInput{StoredPaymentMethodID: id, ShopperReference: shopperReference}, nil
}

// ModificationResponse is the answer of captures, reversals and amount
// updates: the operation's pspReference and status ("received"), plus the
// payment's pspReference and the operation's reference.
type ModificationResponse struct {
	PSPReference        string `json:"pspReference"`
	Status              string `json:"status"`
	PaymentPSPReference string `json:"paymentPspReference"`
	Reference           string `json:"reference,omitempty"`
}

// PSP reports the payment's pspReference for the request log.
func (r ModificationResponse) PSP() string { return r.PaymentPSPReference }

// Modification encodes a modification's result.
func Modification(r payments.ModificationResult) ModificationResponse {
	return ModificationResponse{PSPReference: r.PSPReference, Status: r.Status, PaymentPSPReference: r.PaymentPSPReference, Reference: r.Reference}
}

// DeletedResponse is the answer of DELETE stored-payment-methods/{id}.
type DeletedResponse struct {
	StoredPaymentMethodID string `json:"storedPaymentMethodId"`
	Status                string `json:"status"`
}

// Deleted encodes a deleted stored payment method.
func Deleted(in payments.DeleteStoredMethodInput) DeletedResponse {
	return DeletedResponse{StoredPaymentMethodID: in.StoredPaymentMethodID, Status: "deleted"}
}

// DecodeRefund decodes and validates a POST refunds body strictly, as a
// capture's: amount is required, reference and lineItems optional, every
// other field refused (the fields the service sets with "set by the
// service").
func DecodeRefund(body []byte) (payments.RefundInput, error) {
	in, err := DecodeCapture(body)
	return payments.RefundInput(in), err
}
