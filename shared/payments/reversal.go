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

// errRedecide: the payment changed under a reversal so that it no longer
// leads to the same call; Reverse reads it and decides again.
var errRedecide = errors.New("payments: the reversal must be decided again")

// Reverse cancels a payment not yet captured or refunds a captured one in
// full (docs/openapi.yaml). The service sends splits on every payment, and
// the platform says not to use /reversals for payments with split data
// (or multiple partial captures): check whether the payment is captured,
// and cancel it if not, else refund it (docs.adyen.com/online-payments/
// reversal). So Reverse reads the payment and makes one of the two: the
// platform's cancel (the entry is a cancel, its webhook CANCELLATION), or
// a refund of everything refundable, with its splits (a refund, REFUND).
// A payment with a capture in flight, or captured with a remainder still
// capturable, is refused naming the two calls to make. The operation's
// guard fails when the payment no longer leads to the same call: Reverse
// then reads it and decides again.
func (s *Service) Reverse(ctx context.Context, c *Call, psp string, in ReversalInput) (ModificationResult, error) {
	for attempt := 1; ; attempt++ {
		h, err := Owned(ctx, s.store, c.Merchant, c.Site, psp)
		if err != nil {
			return ModificationResult{}, err
		}
		op, err := reversalOf(h, c.Merchant, psp, in)
		if err != nil {
			// A retry of a reversal already written (its answer lost, or
			// its refund in flight) repeats that call under its key.
			if again, ok := s.earlierReversal(ctx, c, psp); ok {
				op, err = again, nil
			} else {
				return ModificationResult{}, err
			}
		}
		res, err := s.run(ctx, c, psp, op)
		if !errors.Is(err, errRedecide) || attempt == maxReserveAttempts {
			if errors.Is(err, errRedecide) {
				err = apperr.New(apperr.PaymentBusy, "the payment changed while it was being reversed; retry")
			}
			return res, err
		}
	}
}

// earlierReversal is the operation an earlier attempt of call c's request
// wrote on payment psp, to be repeated as written (reserve returns the
// stored entry); false if none.
func (s *Service) earlierReversal(ctx context.Context, c *Call, psp string) (operation, bool) {
	if c.UpstreamKey == "" {
		return operation{}, false
	}
	stored, err := s.store.GetEntries(ctx, psp, opPrefix+c.UpstreamKey)
	if err != nil || len(stored) == 0 || stored[0].Requested == nil {
		return operation{}, false
	}
	e := stored[0]
	return operation{kind: e.Kind, call: ModificationRequest{MerchantAccount: e.Requested.Account},
		expect: Expect{Authorised: true}, why: func(Head) error { return nil },
		failed: apperr.ReversalFailed, what: "reversal"}, true
}

// reversalOf is the operation that reverses head h of merchant m: a
// cancel when nothing is captured or being captured, a refund of what is
// refundable when nothing is left to capture; otherwise a refusal.
func reversalOf(h Head, m tenant.Merchant, psp string, in ReversalInput) (operation, error) {
	v, t := h.View(), h.Totals
	if !reversible(v.State) {
		return operation{}, apperr.Newf(apperr.Invalid, "payment in state %s cannot be reversed", v.State)
	}
	same := func(kind OpKind, amount int64) func(Head) error {
		return func(now Head) error {
			op, err := reversalOf(now, m, psp, in)
			switch {
			case err != nil:
				return err
			case op.kind != kind || op.call.Amount.Value != amount:
				return errRedecide
			}
			return nil // the same call: the guard waits (an amount update in flight)
		}
	}
	switch {
	case t.Captured == 0 && t.CapturesInFlight == 0:
		return operation{kind: OpCancel,
			call:   ModificationRequest{MerchantAccount: m.UpstreamAccount, Reference: in.Reference},
			expect: Expect{Authorised: true, NoReversal: true, NoAmountUpdate: true, NotReleased: true, Uncaptured: true},
			why:    same(OpCancel, 0), failed: apperr.ReversalFailed, what: "reversal"}, nil
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
		why: same(OpRefund, amount.Value), failed: apperr.ReversalFailed, what: "reversal"}, nil
}

// reversible reports whether a payment in state st can be reversed.
func reversible(st State) bool {
	switch st {
	case StateAuthorised, StatePartiallyCaptured, StateCaptured, StatePartiallyRefunded:
		return true
	}
	return false
}
