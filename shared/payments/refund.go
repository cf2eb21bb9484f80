package payments

import (
	"cmp"
	"context"
	"fmt"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
)

// RefundInput is a validated POST refunds body (shared/paymentsapp decodes it).
type RefundInput struct {
	Amount    money.Amount
	Reference string
	LineItems []LineItem
}

// Refund refunds (part of) a captured payment (docs/openapi.yaml), while
// captured − refunded − refunds in flight ≥ amount, in the payment's
// currency. Like a capture, the refund's request is written before the
// upstream call (its amount in flight) and the answer after; an accepted
// refund stays in flight until its REFUND notification counts it as
// refunded (or REFUND_FAILED releases it).
func (s *Service) Refund(ctx context.Context, c *Call, psp string, in RefundInput) (ModificationResult, error) {
	m := c.Merchant
	amount := in.Amount.Value
	return s.run(ctx, c, psp, operation{kind: OpRefund,
		call: ModificationRequest{MerchantAccount: m.UpstreamAccount, Amount: in.Amount, Reference: in.Reference,
			LineItems: in.LineItems, Splits: splits(m, in.Amount, cmp.Or(in.Reference, psp))},
		expect: Expect{Authorised: true, NoReversal: true, Currency: in.Amount.Currency, Refundable: &amount,
			NoLineItems: noLineItems(OpRefund, in.LineItems)},
		why:    func(h Head) error { return refundRefusal(h, in) },
		failed: apperr.RefundFailed, what: "refund"})
}

// refundRefusal is why head h cannot take refund in (nil: it could now).
func refundRefusal(h Head, in RefundInput) error {
	v := h.View()
	switch {
	case v.State != StatePartiallyCaptured && v.State != StateCaptured && v.State != StatePartiallyRefunded &&
		!(h.AmountKnown() == false && v.State == StateAuthorised):
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be refunded (only captured payments)", v.State)
	case h.AmountKnown() && in.Amount.Currency != h.Amount.Currency:
		return apperr.InvalidField("amount.currency", "must be the payment's currency, "+h.Amount.Currency)
	case h.AmountKnown() && in.Amount.Value > v.Refundable:
		return apperr.InvalidField("amount.value", fmt.Sprintf("must be at most the captured amount not yet refunded or being refunded (%d)", v.Refundable))
	case h.AmountKnown() && h.NeedsLineItems() && len(in.LineItems) == 0 && h.Totals.Captured > in.Amount.Value:
		return lineItemsRefusal(h, "refund")
	}
	return nil
}
