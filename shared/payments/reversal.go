package payments

import (
	"context"

	"github.com/yp/paysvc/shared/apperr"
)

// ReversalInput is a validated POST reversals body.
type ReversalInput struct {
	Reference string
}

// Reverse cancels a payment not yet captured or refunds a captured one
// (docs/openapi.yaml); the platform chooses. Its request is written before
// the upstream call (a reversal in flight stops captures and refunds), its
// answer after: accepted, the payment is cancelled, or refunded in full,
// until a failure notification says otherwise.
func (s *Service) Reverse(ctx context.Context, c *Call, psp string, in ReversalInput) (ModificationResult, error) {
	return s.run(ctx, c, psp, operation{kind: OpReversal,
		call:   ModificationRequest{MerchantAccount: c.Merchant.UpstreamAccount, Reference: in.Reference},
		expect: Expect{Authorised: true, NoReversal: true}, why: reversalRefusal,
		failed: apperr.ReversalFailed, what: "reversal"})
}

// reversalRefusal is why head h cannot be reversed (nil: it could now).
func reversalRefusal(h Head) error {
	if v := h.View(); !reversible(v.State) {
		return apperr.Newf(apperr.Invalid, "payment in state %s cannot be reversed", v.State)
	}
	return nil
}

// reversible reports whether a payment in state st can be reversed.
func reversible(st State) bool {
	switch st {
	case StateAuthorised, StatePartiallyCaptured, StateCaptured, StatePartiallyRefunded:
		return true
	}
	return false
}
