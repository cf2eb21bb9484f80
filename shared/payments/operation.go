package payments

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"

	"github.com/yp/paysvc/shared/apperr"
)

// operation is what a capture, refund, reversal or amount update hands to
// run: its kind, its call's parts, and the guard of its request.
type operation struct {
	kind OpKind
	// call is the upstream call, without idempotency key and payment.
	call ModificationRequest
	// expect guards the request's write; why explains a failed guard.
	expect Expect
	why    func(h Head) error
	// failed and what name the endpoint's failure.
	failed apperr.Kind
	what   string
}

// run makes operation op on payment psp: its request is written (the
// entry, its fact and its contribution, guarded by op.expect), the
// upstream called with what the entry holds, and the answer recorded
// alongside the rest of the request (c.Wait). The call always carries an
// idempotency key — the merchant's, derived, else the service's own — so
// that Recover can repeat it exactly when its answer is lost.
func (s *Service) run(ctx context.Context, c *Call, psp string, op operation) (ModificationResult, error) {
	key := c.UpstreamKey
	if key == "" {
		b := make([]byte, 16)
		_, _ = crand.Read(b)
		key = hex.EncodeToString(b)
	}
	r := op.call
	e := Entry{Ref: opPrefix + key, Kind: op.kind, Version: 1, Requested: &Request{Amount: r.Amount, Reference: r.Reference,
		UpstreamKey: key, Account: r.MerchantAccount, Splits: r.Splits, LineItems: r.LineItems, At: s.clock.Now()}}
	if err := c.pass(false); err != nil {
		return ModificationResult{}, err // refused already: nothing written
	}
	e, wrote, err := s.reserve(ctx, c, psp, e, op.expect, op.why)
	if err != nil {
		return ModificationResult{}, err
	}
	if err := c.pass(true); err != nil {
		if !wrote {
			// An earlier attempt's request, which may have been sent: it
			// stays (its answer is learnt by a retry or by Recover).
			return ModificationResult{}, err
		}
		werr := s.withdraw(context.WithoutCancel(ctx), psp, e, err)
		if werr == nil {
			return ModificationResult{}, err
		}
		// Not withdrawn, the request would stay in flight and Recover
		// would send it later, unseen by the caller: it is sent now, and
		// the caller gets its answer.
		s.log.WarnContext(ctx, "request refused after its reservation and not withdrawn: sent anyway",
			"pspReference", psp, "operation", e.Ref, "refusal", err.Error(), "err", werr.Error())
	}
	c.callUpstream()
	resp, err := s.up.Modify(ctx, e.call(psp))
	return s.answered(ctx, c, psp, e, resp, err, op.failed, op.what)
}

// call is the upstream call of operation e of payment psp, as its request
// was first sent: a repeat is the same request under the same key.
func (e Entry) call(psp string) ModificationRequest {
	q := e.Requested
	return ModificationRequest{Kind: modificationKind(e.Kind), IdempotencyKey: q.UpstreamKey, PSPReference: psp,
		MerchantAccount: q.Account, Amount: q.Amount, Reference: q.Reference, Splits: q.Splits, LineItems: q.LineItems}
}

// modificationKind is the upstream call of an operation kind.
func modificationKind(k OpKind) ModificationKind {
	switch k {
	case OpCapture:
		return ModifyCapture
	case OpRefund:
		return ModifyRefund
	case OpReversal:
		return ModifyReversal
	}
	return ModifyAmount
}
