package payments

import (
	"context"

	"github.com/yp/paysvc/shared/apperr"
)

// Cancel cancels what is left uncaptured of an authorised payment: the
// whole authorisation when nothing was captured (the payment becomes
// Cancelled), else its remainder, and what was captured stays refundable
// (docs/openapi.yaml; the platform's POST /payments/{psp}/cancels, whose
// outcome is a CANCELLATION notification). The body is a reversal's
// ({reference}). Like a capture, its request is written before the
// upstream call — a cancel in flight stops captures and amount updates —
// and its answer after; once accepted, the remainder is released
// (Totals.Released) until a failure notification says otherwise.
func (s *Service) Cancel(ctx context.Context, c *Call, psp string, in ReversalInput) (ModificationResult, error) {
	something := int64(1)
	return s.run(ctx, c, psp, operation{kind: OpCancel,
		call: ModificationRequest{MerchantAccount: c.Merchant.UpstreamAccount, Reference: in.Reference},
		expect: Expect{Authorised: true, NoReversal: true, NoAmountUpdate: true, NotReleased: true,
			Capturable: &something},
		why:    cancelRefusal,
		failed: apperr.CancelFailed, what: "cancel"})
}

// cancelRefusal is why head h cannot be cancelled (nil: it could now).
func cancelRefusal(h Head) error {
	v, t := h.View(), h.Totals
	switch {
	case v.State != StateAuthorised && v.State != StatePartiallyCaptured && v.State != StatePartiallyRefunded && v.State != StateCaptured:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be cancelled", v.State)
	case t.Released > 0:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be cancelled: its uncaptured remainder was already released (cancelled, expired, or ended by its only capture)", v.State)
	case h.AmountKnown() && t.Captured >= h.Authorised:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be cancelled: it is captured in full (refund it)", v.State)
	case t.CancelsInFlight > 0:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be cancelled: a cancel is in flight", v.State)
	case t.ReversalsInFlight > 0:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be cancelled: a reversal is in flight", v.State)
	case t.AmountUpdatesInFlight > 0:
		return nil // wait for the amount update's answer
	case h.AmountKnown() && t.Capturable < 1:
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be cancelled: nothing is left to capture (captures in flight count; refund what was captured)", v.State)
	}
	return nil
}
