package payments

import (
	"context"
	"fmt"
	"strings"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
)

// Refunds (docs/payments.md): partial and multiple refunds of a captured
// payment. A refund's amount is reserved on the record before the
// upstream call (RefundReservations, keyed by the operation reference), so
// concurrent refunds never exceed what was captured; a failed call
// releases it; an accepted one moves it to the refund's own pspReference,
// where it stays in flight until the REFUND notification counts it as
// refunded or REFUND_FAILED releases it.

// History kinds written by the refunds endpoint.
const (
	kindAPIRefund         = "refund"
	kindAPIRefundRequest  = "refund-requested"
	kindAPIRefundReleased = "refund-released"
)

// opPrefix starts the operation references of calls not yet answered.
const opPrefix = "op_"

// RefundsInFlight returns the amount of refunds sent but not yet
// confirmed or failed.
func (p *Payment) RefundsInFlight() int64 {
	var n int64
	for _, v := range p.RefundReservations {
		n += v
	}
	return n
}

// CapturesInFlight returns the amount of captures sent but not yet answered.
func (p *Payment) CapturesInFlight() int64 {
	var n int64
	for _, v := range p.Reservations {
		n += v
	}
	return n
}

// Refundable returns what may still be refunded: captured, less refunded,
// less refunds in flight.
func (p *Payment) Refundable() int64 {
	return max(p.CapturedValue-p.RefundedValue-p.RefundsInFlight(), 0)
}

// RefundInput is a validated POST refunds body (shared/paymentsapp decodes it).
type RefundInput struct {
	Amount    money.Amount
	Reference string
	LineItems []LineItem
}

// refundableState reports whether a payment in state st may be refunded.
func refundableState(st State) bool {
	switch st {
	case StatePartiallyCaptured, StateCaptured, StatePartiallyRefunded:
		return true
	}
	return false
}

// Refund refunds (part of) a captured payment (docs/openapi.yaml). Allowed
// while captured − refunded − refunds in flight ≥ amount, in the payment's
// currency. Like a capture, the amount is reserved before the upstream call
// and released when it fails; the record's update after the upstream's
// answer runs alongside the rest of the request (c.Wait).
func (s *Service) Refund(ctx context.Context, c *Call, psp string, in RefundInput) (ModificationResult, error) {
	m := c.Merchant
	owned, err := Owned(ctx, s.store, m, c.Site, psp)
	if err != nil {
		return ModificationResult{}, err
	}
	op := opReference(c)
	now := s.clock.Now()
	amount := in.Amount
	reserved, err := MutateFrom(ctx, s.store, owned, func(p *Payment) error {
		if _, ok := p.RefundReservations[op]; ok {
			return ErrSkip // this retry's amount is already reserved
		}
		if !refundableState(p.State) {
			return apperr.Newf(apperr.Invalid, "payment in state %s cannot be refunded (only captured payments)", p.State)
		}
		if amount.Currency != p.Amount.Currency {
			return apperr.InvalidField("amount.currency", "must be the payment's currency, "+p.Amount.Currency)
		}
		if left := p.Refundable(); amount.Value > left {
			return apperr.InvalidField("amount.value", fmt.Sprintf("must be at most the captured amount not yet refunded or being refunded (%d)", left))
		}
		if p.RefundReservations == nil {
			p.RefundReservations = map[string]int64{}
		}
		p.RefundReservations[op] = amount.Value
		p.History = append(p.History, Event{At: now, Kind: kindAPIRefundRequest, Origin: OriginAPI, PSPReference: op, Amount: &amount})
		p.UpdatedAt = now
		return nil
	})
	if err != nil {
		return ModificationResult{}, recordError(err)
	}
	resp, err := s.up.Modify(ctx, ModificationRequest{Kind: ModifyRefund, IdempotencyKey: c.callUpstream(), PSPReference: psp,
		MerchantAccount: m.UpstreamAccount, Amount: amount, Reference: in.Reference, LineItems: in.LineItems,
		Splits: Splits(m, amount, orRef(in.Reference, psp)),
	})
	u := RecordUpdate{Kind: UpdateRefund, PSPReference: psp, Op: op, Amount: amount, At: s.clock.Now()}
	if err != nil {
		u.Kind = UpdateRefundRelease
		s.recordAfter(ctx, c, u, &reserved)
		return ModificationResult{}, upstreamError(err, apperr.RefundFailed, "refund")
	}
	u.Modification, u.Status = resp.PSPReference, resp.Status
	s.recordAfter(ctx, c, u, &reserved)
	return modificationResult(psp, resp), nil
}

// applyRefundItem applies a REFUND or REFUND_FAILED item. Refunds of the
// reversals endpoint keep their own rules (applyReversal); refunds of the
// refunds endpoint settle or release their reservation; others (made on
// the platform directly, or whose call is not recorded yet) follow the
// reversal rules too, except that a failure after the grace period also
// releases a reservation of the same amount whose call never settled.
func applyRefundItem(p *Payment, item Notification, opts NotificationOptions) error {
	op := item.PSPReference
	success := item.EventCode == EventRefund
	if _, byReversal := p.apiEvent(kindAPIReversal, op); byReversal {
		return applyReversal(p, item, true, success, opts)
	}
	success = success && item.Succeeded()
	_, inFlight := p.RefundReservations[op]
	_, byRefund := p.apiEvent(kindAPIRefund, op)
	switch {
	case !inFlight && !byRefund && success:
		return applyReversal(p, item, true, true, opts)
	case !inFlight && !byRefund:
		if res, ok := p.unsettledRefund(item.Amount.Value); ok {
			if withinGrace(opts) {
				return ErrNotReady
			}
			delete(p.RefundReservations, res)
			p.recomputeState()
			return nil
		}
		return applyReversal(p, item, true, false, opts)
	case success:
		delete(p.RefundReservations, op)
		if !p.notifiedAny(EventRefundFailed, op) {
			p.RefundedValue += item.Amount.Value
		}
	case inFlight:
		delete(p.RefundReservations, op) // released
	case p.notified(EventRefund, op, true):
		p.RefundedValue = max(p.RefundedValue-item.Amount.Value, 0)
	}
	p.recomputeState()
	return nil
}

// unsettledRefund returns a reservation of value whose refund call is not
// recorded yet (keyed by operation reference).
func (p *Payment) unsettledRefund(value int64) (string, bool) {
	for k, v := range p.RefundReservations {
		if v == value && strings.HasPrefix(k, opPrefix) {
			return k, true
		}
	}
	return "", false
}
