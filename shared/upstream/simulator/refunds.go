package simulator

import (
	"context"
	"fmt"
	"net/http"

	"github.com/yp/paysvc/shared/upstream"
)

// refundOut is the 201 answer of POST /payments/{paymentPspReference}/refunds
// (PaymentRefundResponse: amount, merchantAccount, paymentPspReference,
// pspReference and status required).
type refundOut struct {
	modificationOut
	LineItems []map[string]any `json:"lineItems,omitempty"`
}

// handleRefund refunds (part of) the captured amount not yet refunded:
// 201 "received", then REFUND — and REFUND_FAILED after it for a payment of
// holder "refund failed". A payment with nothing left to refund, in
// another currency or not captured is refused like the platform (422, or
// with AsyncModificationFailures 201 and a failed REFUND).
func (s *Simulator) handleRefund(_ context.Context, c *call) result {
	p, in, amount, e := s.readModification(c, true)
	if e != nil {
		return errorResult(e)
	}
	defer s.mu.Unlock()
	left := p.Captured - p.Refunded
	switch {
	case p.State == StateCancelled:
		return s.reject(p, ModRefund, upstream.EventRefund, in.Reference, amount, stateError("Refund not allowed: the payment is "+p.State))
	case p.Captured == 0:
		return s.reject(p, ModRefund, upstream.EventRefund, in.Reference, amount, stateError("Refund not allowed: nothing of the payment is captured ("+p.State+")"))
	case amount.Currency != p.Amount.Currency:
		return s.reject(p, ModRefund, upstream.EventRefund, in.Reference, amount, stateError("Modification in different currency than authorisation"))
	case amount.Value > left:
		return s.reject(p, ModRefund, upstream.EventRefund, in.Reference, amount,
			validationError(codeInvalidAmount, fmt.Sprintf("Invalid amount specified: refund of %d exceeds the captured amount not yet refunded %d", amount.Value, left)))
	case amount.Value < p.Captured:
		if e := lineItemsRule(p, in, amount, "refund"); e != nil {
			return s.reject(p, ModRefund, upstream.EventRefund, in.Reference, amount, e)
		}
	}
	if _, e := checkSplits(in.Splits, amount); e != nil {
		return errorResult(e)
	}
	psp := s.newModRef(p)
	now := s.clock.Now()
	prevState := p.State
	p.Refunded += amount.Value
	if p.Refunded >= p.Captured {
		p.State = StateRefunded
	}
	p.Modifications = append(p.Modifications, ModificationState{PSPReference: psp, Kind: ModRefund, Reference: in.Reference, Amount: amount, Success: true, CreatedAt: now})
	s.emit(s.modificationItem(p, psp, upstream.EventRefund, in.Reference, amount, true, ""))
	if p.RefundFails {
		p.Refunded -= amount.Value
		p.State = prevState
		p.Modifications[len(p.Modifications)-1].Success = false
		p.Modifications[len(p.Modifications)-1].Reason = "Refund failed"
		s.emit(s.modificationItem(p, psp, upstream.EventRefundFailed, in.Reference, amount, true, "Refund failed (simulated)"))
	}
	return jsonResult(http.StatusCreated, refundOut{modificationOut: modificationOut{
		Amount: &amount, MerchantAccount: p.MerchantAccount, PaymentPSPReference: p.PSP, PSPReference: psp,
		Reference: in.Reference, Status: upstream.StatusReceived,
	}, LineItems: in.LineItems})
}
