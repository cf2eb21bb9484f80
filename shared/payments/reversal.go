package payments

import (
	"cmp"
	"context"
	"errors"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/tenant"
)

// ReversalInput is a validated POST reversals (or cancels) body.
type ReversalInput struct {
	Reference string
}

// redecide: the payment, read when a reversal's guard failed (head), leads
// to another call than the one tried; Reverse decides again from it.
type redecide struct{ head Head }

func (redecide) Error() string { return "payments: the reversal must be decided again" }

// Reverse cancels a payment not yet captured or refunds a captured one in
// full (docs/openapi.yaml). The service sends splits on every payment, and
// the platform says not to use /reversals for payments with split data
// (or multiple partial captures): check whether the payment is captured,
// and cancel it if not, else refund it (docs.adyen.com/online-payments/
// reversal). So Reverse makes one of the two: the platform's cancel (the
// entry is a cancel, its webhook CANCELLATION), or a refund of everything
// refundable, with its splits (a refund, REFUND). It tries the cancel
// first, reading nothing: its guard (nothing captured) fails on a captured
// payment, and the head the failure reads decides the refund. A payment
// with a capture in flight, or captured with a remainder still capturable,
// is refused naming the two calls to make. A retry of a reversal already
// written repeats the call first written under its key (reserve).
func (s *Service) Reverse(ctx context.Context, c *Call, psp string, in ReversalInput) (ModificationResult, error) {
	op := cancelFor(c.Merchant, psp, in)
	for attempt := 1; ; attempt++ {
		res, err := s.run(ctx, c, psp, op)
		var again redecide
		if !errors.As(err, &again) {
			return res, err
		}
		if attempt == maxReserveAttempts {
			return res, apperr.New(apperr.PaymentBusy, "the payment changed while it was being reversed; retry")
		}
		if op, err = reversalOf(again.head, c.Merchant, psp, in); err != nil {
			return ModificationResult{}, err
		}
	}
}

// reversalOf is the operation that reverses head h of merchant m: a
// cancel when nothing is captured or being captured, a refund of what is
// refundable when nothing is left to capture; otherwise a refusal.
func reversalOf(h Head, m tenant.Merchant, psp string, in ReversalInput) (operation, error) {
	v, t := h.View(), h.Totals
	if !reversible(v.State) {
		return operation{}, apperr.Newf(apperr.Invalid, "payment in state %s cannot be reversed", v.State)
	}
	switch {
	case t.Captured == 0 && t.CapturesInFlight == 0:
		return cancelFor(m, psp, in), nil
	case t.CapturesInFlight > 0:
		return operation{}, apperr.Newf(apperr.Invalid, "payment in state %s cannot be reversed while a capture is in flight: "+
			"once it is answered, cancel what is left uncaptured (cancels) and refund what was captured (refunds)", v.State)
	case v.Capturable > 0:
		return operation{}, apperr.Newf(apperr.Invalid, "payment in state %s cannot be reversed in one call: part of the "+
			"authorisation is uncaptured; cancel it (cancels), then reverse or refund what was captured (refunds)", v.State)
	case v.Refundable == 0:
		return operation{}, apperr.Newf(apperr.Invalid, "payment in state %s cannot be reversed: nothing is left to refund "+
			"(refunds in flight count)", v.State)
	}
	amount := h.Amount
	amount.Value = v.Refundable
	return operation{kind: OpRefund,
		call: ModificationRequest{MerchantAccount: m.UpstreamAccount, Amount: amount, Reference: in.Reference,
			Splits: splits(m, amount, cmp.Or(in.Reference, psp))},
		expect: Expect{Authorised: true, NoReversal: true, NoAmountUpdate: true, Currency: amount.Currency,
			Refundable: &amount.Value},
		why: sameReversal(m, psp, in, OpRefund, amount.Value), failed: apperr.ReversalFailed, what: "reversal"}, nil
}

// cancelFor is the reversal of merchant m's payment psp as a cancel of
// everything authorised (nothing captured or being captured).
func cancelFor(m tenant.Merchant, psp string, in ReversalInput) operation {
	return operation{kind: OpCancel,
		call:   ModificationRequest{MerchantAccount: m.UpstreamAccount, Reference: in.Reference},
		expect: Expect{Authorised: true, NoReversal: true, NoAmountUpdate: true, NotReleased: true, Uncaptured: true},
		why:    sameReversal(m, psp, in, OpCancel, 0), failed: apperr.ReversalFailed, what: "reversal"}
}

// sameReversal explains a reversal's failed guard from the head now: the
// refusal the head now meets, nil when it still leads to the same call
// (the guard waits: an amount update in flight), else redecide.
func sameReversal(m tenant.Merchant, psp string, in ReversalInput, kind OpKind, amount int64) func(Head) error {
	return func(now Head) error {
		op, err := reversalOf(now, m, psp, in)
		switch {
		case err != nil:
			return err
		case op.kind != kind || op.call.Amount.Value != amount:
			return redecide{now}
		}
		return nil
	}
}

// reversible reports whether a payment in state st can be reversed.
func reversible(st State) bool {
	switch st {
	case StateAuthorised, StatePartiallyCaptured, StateCaptured, StatePartiallyRefunded:
		return true
	}
	return false
}
