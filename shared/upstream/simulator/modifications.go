package simulator

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// modificationIn is a capture, cancel, reversal, amount-update or refund request.
type modificationIn struct {
	MerchantAccount string    `json:"merchantAccount"`
	Amount          *amountIn `json:"amount"`
	Reference       string    `json:"reference"`
	IndustryUsage   string    `json:"industryUsage"`
	Splits          []splitIn `json:"splits"`
	// LineItems (refunds) are echoed in the answer.
	LineItems []map[string]any `json:"lineItems"`
}

// modificationOut is the 201 answer of a modification (a refund's,
// PaymentRefundResponse, echoes lineItems).
type modificationOut struct {
	Amount              *money.Amount    `json:"amount,omitempty"`
	IndustryUsage       string           `json:"industryUsage,omitempty"`
	MerchantAccount     string           `json:"merchantAccount"`
	PaymentPSPReference string           `json:"paymentPspReference"`
	PSPReference        string           `json:"pspReference"`
	Reference           string           `json:"reference,omitempty"`
	Status              string           `json:"status"`
	LineItems           []map[string]any `json:"lineItems,omitempty"`
}

// received is the 201 answer of modification psp of p.
func received(p *payment, psp, ref string, amount *money.Amount) modificationOut {
	return modificationOut{
		Amount: amount, MerchantAccount: p.MerchantAccount, PaymentPSPReference: p.PSP, PSPReference: psp,
		Reference: ref, Status: upstream.StatusReceived,
	}
}

// stateError is a modification the state machine refuses.
func stateError(msg string) *apiError { return validationError(codeGeneric, msg) }

const msgOtherCurrency = "Modification in different currency than authorisation"

// modification is the apiHandler of a modification: it decodes and
// validates the request, finds its payment and runs h with s.mu held.
func (s *Simulator) modification(needAmount bool, h func(*payment, modificationIn, money.Amount) result) apiHandler {
	return func(_ context.Context, c *call) result {
		var in modificationIn
		if e := decodeJSON(c.body, &in); e != nil {
			return errorResult(e)
		}
		if e := s.checkMerchant(in.MerchantAccount); e != nil {
			return errorResult(e)
		}
		var amount money.Amount
		if needAmount {
			var e *apiError
			if amount, e = checkAmount(in.Amount, false); e != nil {
				return errorResult(e)
			}
		}
		if len(in.Reference) > 80 {
			return errorResult(validationError(codeMissingRef, "Field 'reference' exceeds 80 characters."))
		}
		psp := c.r.PathValue("psp")
		s.mu.Lock()
		defer s.mu.Unlock()
		p := s.payments[psp]
		if p == nil || p.MerchantAccount != in.MerchantAccount {
			return errorResult(errUnknownPSP(psp))
		}
		return h(p, in, amount)
	}
}

// record adds a modification of p, succeeded (failure "") or refused, and
// emits its notification (caller holds s.mu); it returns its pspReference.
func (s *Simulator) record(p *payment, kind, event, ref string, amount money.Amount, failure string) string {
	psp := s.newModRef(p)
	p.Modifications = append(p.Modifications, ModificationState{
		PSPReference: psp, Kind: kind, Reference: ref, Amount: amount, Success: failure == "", Reason: failure, CreatedAt: s.clock.Now(),
	})
	item := s.modificationItem(p, psp, event, ref, amount, failure == "", failure)
	if event == upstream.EventCancelOrRefund {
		item.AdditionalData[upstream.KeyModificationAction] = kind
	}
	s.emit(item)
	return psp
}

// failLast marks p's latest modification, what ("Capture", "Refund"),
// failed later and emits event (CAPTURE_FAILED, REFUND_FAILED) for it
// (caller holds s.mu).
func (s *Simulator) failLast(p *payment, event, what string) {
	m := &p.Modifications[len(p.Modifications)-1]
	m.Success, m.Reason = false, what+" failed"
	s.emit(s.modificationItem(p, m.PSPReference, event, m.Reference, m.Amount, true, what+" failed (simulated)"))
}

// reject answers a refused modification: 422, or with
// AsyncModificationFailures 201 "received" and a failed notification
// (caller holds s.mu).
func (s *Simulator) reject(p *payment, kind, event, ref string, amount money.Amount, e *apiError) result {
	if !s.opts.AsyncModificationFailures {
		return errorResult(e)
	}
	out := received(p, s.record(p, kind, event, ref, amount, e.Message), ref, nil)
	if kind != ModCancel {
		out.Amount = &amount
	}
	if kind == ModAmountUpdate {
		out.Reference = cmp.Or(ref, p.Reference) // required in the published answer
	}
	return jsonResult(http.StatusCreated, out)
}

// newModRef returns a fresh pspReference for a modification of p.
func (s *Simulator) newModRef(p *payment) string {
	psp := s.uniquePSP()
	s.modRefs[psp] = p.PSP
	return psp
}

// authorisedState reports whether p is authorised and not yet reversed.
func authorisedState(p *payment) bool {
	switch p.State {
	case StateAuthorised, StatePartiallyCaptured, StateCaptured:
		return true
	}
	return false
}

func (s *Simulator) capture(p *payment, in modificationIn, amount money.Amount) result {
	var refusal *apiError
	switch {
	case p.State == StateCancelled || p.State == StateRefunded:
		refusal = stateError("Capture not allowed: the payment is " + p.State)
	case !authorisedState(p):
		refusal = stateError("Capture not allowed: the payment is not authorised (" + p.State + ")")
	case p.Released:
		refusal = stateError("Capture not allowed: the authorisation's remainder expired or was cancelled")
	case p.RemainderClosed:
		refusal = stateError("Capture not allowed: the rest of the authorisation was cancelled by the partial capture (multiple partial captures are not enabled)")
	default:
		refusal = amountRule(p, in, amount, "capture", "the remaining authorised amount", p.Authorised-p.Captured, p.Authorised)
	}
	if refusal != nil {
		return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount, refusal)
	}
	if _, e := checkSplits(in.Splits, amount); e != nil {
		return errorResult(e)
	}
	p.Captured += amount.Value
	p.RemainderClosed = !s.multiCapture[p.MerchantAccount]
	s.updateCaptureState(p)
	psp := s.record(p, ModCapture, upstream.EventCapture, in.Reference, amount, "")
	if p.CaptureFails {
		p.Captured -= amount.Value
		p.RemainderClosed = false // a failed capture released nothing
		s.updateCaptureState(p)
		s.failLast(p, upstream.EventCaptureFailed, "Capture")
	}
	return jsonResult(http.StatusCreated, received(p, psp, in.Reference, &amount))
}

// lineItemsMethods are the buy-now-pay-later methods that need lineItems on
// a partial capture or refund (Checkout v71 PaymentCaptureRequest.lineItems
// and PaymentRefundRequest.lineItems: "required for partial refunds with 3x
// 4x Oney, Affirm, Afterpay, Atome, Clearpay, Klarna, Ratepay, Walley, and
// Zip"; docs.adyen.com/payment-methods/klarna/invoice-lines).
var lineItemsMethods = map[string]bool{
	"klarna": true, "klarna_account": true, "klarna_paynow": true, "affirm": true, "afterpaytouch": true, "clearpay": true,
	"atome": true, "zip": true, "ratepay": true, "walley": true, "facilypay_3x": true, "facilypay_4x": true, "riverty": true,
}

// amountRule is the platform's refusal of modification what (capture,
// refund) of amount of p: in another currency, above limit (what limitName
// names), or, below full, a partial one of a lineItemsMethods payment
// without lineItems or with lineItems that do not add up to its amount
// (Klarna "will only approve the payment if the total amount specified in
// lineItems matches"); nil when it passes.
func amountRule(p *payment, in modificationIn, amount money.Amount, what, limitName string, limit, full int64) *apiError {
	switch {
	case amount.Currency != p.Amount.Currency:
		return stateError(msgOtherCurrency)
	case amount.Value > limit:
		return validationError(codeInvalidAmount, fmt.Sprintf("Invalid amount specified: %s of %d exceeds %s %d", what, amount.Value, limitName, limit))
	case amount.Value >= full || !lineItemsMethods[p.MethodType]:
		return nil
	case len(in.LineItems) == 0:
		return validationError(codeGeneric, fmt.Sprintf("Required field 'lineItems' is not provided: a partial %s of a %s payment needs them.", what, p.MethodType))
	}
	var sum float64
	for _, li := range in.LineItems {
		each, _ := li["amountIncludingTax"].(float64)
		n, ok := li["quantity"].(float64)
		if !ok {
			n = 1
		}
		sum += each * n
	}
	if int64(sum) != amount.Value {
		return validationError(codeGeneric, fmt.Sprintf("Invalid lineItems: their total %d is not the %s amount %d.", int64(sum), what, amount.Value))
	}
	return nil
}

// successfulCaptures counts p's accepted captures.
func successfulCaptures(p *payment) int {
	n := 0
	for _, m := range p.Modifications {
		if m.Kind == ModCapture && m.Success {
			n++
		}
	}
	return n
}

func (s *Simulator) updateCaptureState(p *payment) {
	switch {
	case p.Captured == 0:
		p.State = StateAuthorised
	case p.Captured < p.Authorised && !p.RemainderClosed:
		p.State = StatePartiallyCaptured
	default:
		p.State = StateCaptured
	}
}

// refund refunds amount of p, a modification of kind that event notifies,
// and then fails it for a payment of holder "refund failed" (caller holds
// s.mu); it returns the refund's pspReference.
func (s *Simulator) refund(p *payment, kind, event, ref string, amount money.Amount) string {
	prevState := p.State
	p.Refunded += amount.Value
	if p.Refunded >= p.Captured {
		p.State = StateRefunded
	}
	psp := s.record(p, kind, event, ref, amount, "")
	if p.RefundFails {
		p.Refunded -= amount.Value
		p.State = prevState
		s.failLast(p, upstream.EventRefundFailed, "Refund")
	}
	return psp
}

func (s *Simulator) reversal(p *payment, in modificationIn, _ money.Amount) result {
	var refusal *apiError
	switch {
	case len(p.Splits) > 0 || successfulCaptures(p) > 1:
		// The platform: "Do not use the /payments/{paymentPspReference}/reversals
		// endpoint for payments that involve multiple partial captures [or]
		// split data" (docs.adyen.com/online-payments/reversal).
		refusal = stateError("Reversal not allowed: the payment has split data or several partial captures (use /cancels or /refunds)")
	case p.State == StateCancelled || p.State == StateRefunded:
		refusal = stateError("Reversal not allowed: the payment is already " + p.State)
	case !authorisedState(p) && p.State != StateReceived && p.State != StatePending:
		refusal = stateError("Reversal not allowed: the payment is not authorised (" + p.State + ")")
	}
	if refusal != nil {
		return s.reject(p, ModCancel, upstream.EventCancelOrRefund, in.Reference, p.Amount, refusal)
	}
	var psp string
	if p.Captured > p.Refunded {
		amount := money.Amount{Value: p.Captured - p.Refunded, Currency: p.Amount.Currency}
		psp = s.refund(p, ModRefund, upstream.EventCancelOrRefund, in.Reference, amount)
	} else {
		p.State = StateCancelled
		amount := money.Amount{Value: p.Authorised, Currency: p.Amount.Currency}
		psp = s.record(p, ModCancel, upstream.EventCancelOrRefund, in.Reference, amount, "")
	}
	return jsonResult(http.StatusCreated, received(p, psp, in.Reference, nil))
}

// cancel is the platform's cancel (POST /payments/{psp}/cancels, v71
// PaymentCancelRequest): an authorised payment with nothing captured
// becomes Cancelled; after partial captures (an account with multiple
// partial captures) the rest of the authorisation is released and what was
// captured stays refundable. A CANCELLATION follows (originalReference the
// payment, as the published example), its amount what was cancelled.
func (s *Simulator) cancel(p *payment, in modificationIn, _ money.Amount) result {
	rest := money.Amount{Value: p.Authorised - p.Captured, Currency: p.Amount.Currency}
	var refusal *apiError
	switch {
	case p.State == StateCancelled || p.State == StateRefunded:
		refusal = stateError("Cancel not allowed: the payment is already " + p.State)
	case !authorisedState(p):
		refusal = stateError("Cancel not allowed: the payment is not authorised (" + p.State + ")")
	case p.Released:
		refusal = stateError("Cancel not allowed: the authorisation's remainder expired or was cancelled")
	case p.RemainderClosed || rest.Value <= 0:
		refusal = stateError("Cancel not allowed: nothing of the authorisation is left uncaptured (refund the captured amount)")
	}
	if refusal != nil {
		return s.reject(p, ModCancel, upstream.EventCancellation, in.Reference, rest, refusal)
	}
	if p.Captured == 0 {
		p.State = StateCancelled
	} else {
		p.RemainderClosed = true
		s.updateCaptureState(p)
	}
	psp := s.record(p, ModCancel, upstream.EventCancellation, in.Reference, rest, "")
	return jsonResult(http.StatusCreated, received(p, psp, in.Reference, nil))
}

func (s *Simulator) amountUpdate(p *payment, in modificationIn, amount money.Amount) result {
	switch {
	case s.opts.PlatformRules && !p.PreAuth:
		return errorResult(stateError("Amount update not allowed: the payment was not authorised as a pre-authorisation (additionalData.authorisationType PreAuth)"))
	case p.State != StateAuthorised:
		return s.reject(p, ModAmountUpdate, upstream.EventAuthorisationAdjustment, in.Reference, amount,
			stateError("Amount update not allowed: the payment is "+p.State+" (only authorised, not captured payments can be adjusted)"))
	case amount.Currency != p.Amount.Currency:
		return s.reject(p, ModAmountUpdate, upstream.EventAuthorisationAdjustment, in.Reference, amount, stateError(msgOtherCurrency))
	}
	if _, e := checkSplits(in.Splits, amount); e != nil {
		return errorResult(e)
	}
	p.Authorised = amount.Value
	psp := s.record(p, ModAmountUpdate, upstream.EventAuthorisationAdjustment, in.Reference, amount, "")
	// The published answer always has a reference: without one in the
	// request, the payment's.
	out := received(p, psp, cmp.Or(in.Reference, p.Reference), &amount)
	out.IndustryUsage = in.IndustryUsage
	return jsonResult(http.StatusCreated, out)
}

// refundRequest refunds (part of) the captured amount not yet refunded:
// 201 "received", then REFUND — and REFUND_FAILED after it for a payment of
// holder "refund failed". A payment with nothing left to refund, in
// another currency or not captured is refused like the platform (422, or
// with AsyncModificationFailures 201 and a failed REFUND).
func (s *Simulator) refundRequest(p *payment, in modificationIn, amount money.Amount) result {
	var refusal *apiError
	switch {
	case p.State == StateCancelled:
		refusal = stateError("Refund not allowed: the payment is " + p.State)
	case p.Captured == 0:
		refusal = stateError("Refund not allowed: nothing of the payment is captured (" + p.State + ")")
	default:
		refusal = amountRule(p, in, amount, "refund", "the captured amount not yet refunded", p.Captured-p.Refunded, p.Captured)
	}
	if refusal != nil {
		return s.reject(p, ModRefund, upstream.EventRefund, in.Reference, amount, refusal)
	}
	if _, e := checkSplits(in.Splits, amount); e != nil {
		return errorResult(e)
	}
	out := received(p, s.refund(p, ModRefund, upstream.EventRefund, in.Reference, amount), in.Reference, &amount)
	out.LineItems = in.LineItems
	return jsonResult(http.StatusCreated, out)
}
