package payments

import (
	"cmp"
	"context"
	"fmt"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
)

// CaptureInput is a validated POST captures body.
type CaptureInput struct {
	Amount    money.Amount
	Reference string
	// LineItems are forwarded to the platform: buy-now-pay-later methods
	// need them on a partial capture (Checkout v71
	// PaymentCaptureRequest.lineItems).
	LineItems []LineItem
}

// Capture captures (part of) an authorised payment (docs/openapi.yaml).
// The capture's request is written before the upstream call, its amount in
// flight and taken from what can be captured, so concurrent captures can
// never exceed the authorised amount; the platform's answer is written
// after it, alongside the rest of the request (c.Wait). A payment whose
// amount is not known yet (a bare details answer) is guarded by the
// platform until its AUTHORISATION brings the amount.
//
// Unless the merchant takes multiple partial captures (its platform
// account's setting, tenant.Merchant.MultiplePartialCaptures, read when the
// capture is requested, as the platform reads its own), a capture is the
// only one: it needs nothing captured or being captured, and once it
// succeeds it releases the rest of the authorisation (Entry.Releases), as
// the platform cancels the remainder of a partial capture (Checkout v71,
// POST /payments/{paymentPspReference}/captures).
func (s *Service) Capture(ctx context.Context, c *Call, psp string, in CaptureInput) (ModificationResult, error) {
	m := c.Merchant
	amount := in.Amount.Value
	multi := m.MultiplePartialCaptures
	return s.run(ctx, c, psp, operation{kind: OpCapture,
		call: ModificationRequest{MerchantAccount: m.UpstreamAccount, Amount: in.Amount, Reference: in.Reference,
			LineItems: in.LineItems, Splits: splits(m, in.Amount, cmp.Or(in.Reference, psp))},
		expect: Expect{Authorised: true, NoReversal: true, NoAmountUpdate: true, NotReleased: true, Uncaptured: !multi,
			Currency: in.Amount.Currency, Capturable: &amount, NoLineItems: noLineItems(OpCapture, in.LineItems)},
		releases: !multi,
		why:      func(h Head) error { return captureRefusal(h, in, multi) },
		failed:   apperr.CaptureFailed, what: "capture"})
}

// captureRefusal is why head h cannot take capture in (nil: it could now);
// multi: the merchant takes multiple partial captures.
func captureRefusal(h Head, in CaptureInput, multi bool) error {
	v := h.View()
	switch {
	case !multi && (v.Captured > 0 || v.CapturesInFlight > 0) && v.Captured+v.CapturesInFlight < h.Authorised &&
		(v.State == StateAuthorised || v.State == StatePartiallyCaptured || v.State == StateCaptured || v.State == StatePartiallyRefunded):
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be captured again: its first capture releases the rest "+
			"of the authorisation (multiple partial captures are off for this merchant, as on its platform account)", v.State)
	case v.State != StateAuthorised && v.State != StatePartiallyCaptured && v.State != StatePartiallyRefunded:
		// A partial refund leaves the rest of the authorisation capturable
		// (the write's guard takes the capture): only the amount can
		// refuse it then.
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be captured", v.State)
	case h.Totals.Released > 0:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be captured: its uncaptured remainder was released (cancelled, expired, or ended by its only partial capture)", v.State)
	case h.Totals.CancelsInFlight > 0:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be captured: a cancel is in flight", v.State)
	case h.Totals.AmountUpdatesInFlight > 0:
		return nil // wait for the amount update's answer
	case h.AmountKnown() && in.Amount.Currency != h.Amount.Currency:
		return apperr.InvalidField("amount.currency", "must be the payment's currency, "+h.Amount.Currency)
	case h.AmountKnown() && in.Amount.Value > v.Capturable:
		return apperr.InvalidField("amount.value", fmt.Sprintf("must be at most the authorised amount not yet captured (%d)", v.Capturable))
	case h.AmountKnown() && h.NeedsLineItems() && len(in.LineItems) == 0 &&
		(h.Totals.Captured != 0 || h.Totals.CapturesInFlight != 0 || h.Totals.Capturable > in.Amount.Value):
		return lineItemsRefusal(h, "capture")
	}
	return nil
}

// noLineItems is Expect.NoLineItems for an operation of kind with items.
func noLineItems(kind OpKind, items []LineItem) OpKind {
	if len(items) > 0 {
		return ""
	}
	return kind
}
