package simulator

import (
	"context"
	"fmt"
	"net/http"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// modificationIn is a capture, reversal, amount-update or refund request.
type modificationIn struct {
	MerchantAccount string    `json:"merchantAccount"`
	Amount          *amountIn `json:"amount"`
	Reference       string    `json:"reference"`
	IndustryUsage   string    `json:"industryUsage"`
	Splits          []splitIn `json:"splits"`
	// LineItems (refunds) are echoed in the answer.
	LineItems []map[string]any `json:"lineItems"`
}

// modificationOut is the 201 answer of a modification.
type modificationOut struct {
	Amount              *money.Amount `json:"amount,omitempty"`
	IndustryUsage       string        `json:"industryUsage,omitempty"`
	MerchantAccount     string        `json:"merchantAccount"`
	PaymentPSPReference string        `json:"paymentPspReference"`
	PSPReference        string        `json:"pspReference"`
	Reference           string        `json:"reference,omitempty"`
	Status              string        `json:"status"`
}

// stateError is a modification the state machine refuses.
func stateError(msg string) *apiError { return validationError(codeGeneric, msg) }

// readModification decodes and validates a modification request and finds
// its payment (caller does not hold s.mu; on success s.mu is held).
func (s *Simulator) readModification(c *call, needAmount bool) (*payment, modificationIn, money.Amount, *apiError) {
	var in modificationIn
	if e := decodeJSON(c.body, &in); e != nil {
		return nil, in, money.Amount{}, e
	}
	if e := s.checkMerchant(in.MerchantAccount); e != nil {
		return nil, in, money.Amount{}, e
	}
	var amount money.Amount
	if needAmount {
		a, e := checkAmount(in.Amount, false)
		if e != nil {
			return nil, in, money.Amount{}, e
		}
		amount = a
	}
	if len(in.Reference) > 80 {
		return nil, in, money.Amount{}, validationError(codeMissingRef, "Field 'reference' exceeds 80 characters.")
	}
	psp := c.r.PathValue("psp")
	s.mu.Lock()
	p := s.payments[psp]
	if p == nil || p.MerchantAccount != in.MerchantAccount {
		s.mu.Unlock()
		return nil, in, money.Amount{}, errUnknownPSP(psp)
	}
	return p, in, amount, nil
}

// reject answers a refused modification: 422, or with
// AsyncModificationFailures 201 "received" and a failed notification
// (caller holds s.mu).
func (s *Simulator) reject(p *payment, kind, event, ref string, amount money.Amount, e *apiError) result {
	if !s.opts.AsyncModificationFailures {
		return errorResult(e)
	}
	psp := s.newModRef(p)
	p.Modifications = append(p.Modifications, ModificationState{PSPReference: psp, Kind: kind, Reference: ref, Amount: amount, Reason: e.Message, CreatedAt: s.clock.Now()})
	item := s.modificationItem(p, psp, event, ref, amount, false, e.Message)
	if event == upstream.EventCancelOrRefund {
		item.AdditionalData[upstream.KeyModificationAction] = kind
	}
	s.emit(item)
	out := modificationOut{MerchantAccount: p.MerchantAccount, PaymentPSPReference: p.PSP, PSPReference: psp, Reference: ref, Status: upstream.StatusReceived}
	if kind == ModCapture || kind == ModAmountUpdate || kind == ModRefund {
		out.Amount = &amount
	}
	if kind == ModAmountUpdate {
		out.Reference = firstNonEmpty(ref, p.Reference) // required in the published answer
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

func (s *Simulator) handleCapture(_ context.Context, c *call) result {
	p, in, amount, e := s.readModification(c, true)
	if e != nil {
		return errorResult(e)
	}
	defer s.mu.Unlock()
	remaining := p.Authorised - p.Captured
	switch {
	case p.State == StateCancelled || p.State == StateRefunded:
		return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount, stateError("Capture not allowed: the payment is "+p.State))
	case !authorisedState(p):
		return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount, stateError("Capture not allowed: the payment is not authorised ("+p.State+")"))
	case p.Released:
		return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount, stateError("Capture not allowed: the authorisation's remainder expired or was cancelled"))
	case p.RemainderClosed:
		return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount,
			stateError("Capture not allowed: the rest of the authorisation was cancelled by the partial capture (multiple partial captures are not enabled)"))
	case amount.Currency != p.Amount.Currency:
		return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount, stateError("Modification in different currency than authorisation"))
	case amount.Value > remaining:
		return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount,
			validationError(codeInvalidAmount, fmt.Sprintf("Invalid amount specified: capture of %d exceeds the remaining authorised amount %d", amount.Value, remaining)))
	case amount.Value < p.Authorised:
		if e := lineItemsRule(p, in, amount, "capture"); e != nil {
			return s.reject(p, ModCapture, upstream.EventCapture, in.Reference, amount, e)
		}
	}
	if _, e := checkSplits(in.Splits, amount); e != nil {
		return errorResult(e)
	}
	psp := s.newModRef(p)
	now := s.clock.Now()
	p.Captured += amount.Value
	p.RemainderClosed = !s.multiCapture[p.MerchantAccount]
	s.updateCaptureState(p)
	p.Modifications = append(p.Modifications, ModificationState{PSPReference: psp, Kind: ModCapture, Reference: in.Reference, Amount: amount, Success: true, CreatedAt: now})
	s.emit(s.modificationItem(p, psp, upstream.EventCapture, in.Reference, amount, true, ""))
	if p.CaptureFails {
		p.Captured -= amount.Value
		p.RemainderClosed = false // a failed capture released nothing
		s.updateCaptureState(p)
		p.Modifications[len(p.Modifications)-1].Success = false
		p.Modifications[len(p.Modifications)-1].Reason = "Capture failed"
		s.emit(s.modificationItem(p, psp, upstream.EventCaptureFailed, in.Reference, amount, true, "Capture failed (simulated)"))
	}
	return jsonResult(http.StatusCreated, modificationOut{
		Amount: &amount, MerchantAccount: p.MerchantAccount, PaymentPSPReference: p.PSP, PSPReference: psp,
		Reference: in.Reference, Status: upstream.StatusReceived,
	})
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

// lineItemsRule is the platform's refusal of partial modification what
// (capture, refund) of p without lineItems, or with lineItems that do not
// add up to its amount (Klarna "will only approve the payment if the total
// amount specified in lineItems matches"); nil when it passes.
func lineItemsRule(p *payment, in modificationIn, amount money.Amount, what string) *apiError {
	if !lineItemsMethods[p.MethodType] {
		return nil
	}
	if len(in.LineItems) == 0 {
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

func (s *Simulator) handleReversal(_ context.Context, c *call) result {
	p, in, _, e := s.readModification(c, false)
	if e != nil {
		return errorResult(e)
	}
	defer s.mu.Unlock()
	// The platform: "Do not use the /payments/{paymentPspReference}/reversals
	// endpoint for payments that involve multiple partial captures [or]
	// split data" (docs.adyen.com/online-payments/reversal).
	if len(p.Splits) > 0 || successfulCaptures(p) > 1 {
		return s.reject(p, ModCancel, upstream.EventCancelOrRefund, in.Reference, p.Amount,
			stateError("Reversal not allowed: the payment has split data or several partial captures (use /cancels or /refunds)"))
	}
	switch p.State {
	case StateAuthorised, StatePartiallyCaptured, StateCaptured, StateReceived, StatePending:
	case StateCancelled, StateRefunded:
		return s.reject(p, ModCancel, upstream.EventCancelOrRefund, in.Reference, p.Amount, stateError("Reversal not allowed: the payment is already "+p.State))
	default:
		return s.reject(p, ModCancel, upstream.EventCancelOrRefund, in.Reference, p.Amount, stateError("Reversal not allowed: the payment is not authorised ("+p.State+")"))
	}
	psp := s.newModRef(p)
	now := s.clock.Now()
	kind, amount := ModCancel, money.Amount{Value: p.Authorised, Currency: p.Amount.Currency}
	if p.Captured > p.Refunded {
		kind, amount.Value = ModRefund, p.Captured-p.Refunded
	}
	prevState := p.State
	mod := ModificationState{PSPReference: psp, Kind: kind, Reference: in.Reference, Amount: amount, Success: true, CreatedAt: now}
	item := s.modificationItem(p, psp, upstream.EventCancelOrRefund, in.Reference, amount, true, "")
	item.AdditionalData[upstream.KeyModificationAction] = kind
	if kind == ModCancel {
		p.State = StateCancelled
	} else {
		p.Refunded += amount.Value
		p.State = StateRefunded
	}
	p.Modifications = append(p.Modifications, mod)
	s.emit(item)
	if kind == ModRefund && p.RefundFails {
		p.Refunded -= amount.Value
		p.State = prevState
		p.Modifications[len(p.Modifications)-1].Success = false
		p.Modifications[len(p.Modifications)-1].Reason = "Refund failed"
		s.emit(s.modificationItem(p, psp, upstream.EventRefundFailed, in.Reference, amount, true, "Refund failed (simulated)"))
	}
	return jsonResult(http.StatusCreated, modificationOut{
		MerchantAccount: p.MerchantAccount, PaymentPSPReference: p.PSP, PSPReference: psp,
		Reference: in.Reference, Status: upstream.StatusReceived,
	})
}

// handleCancel is the platform's cancel (POST /payments/{psp}/cancels, v71
// PaymentCancelRequest): an authorised payment with nothing captured
// becomes Cancelled; after partial captures (an account with multiple
// partial captures) the rest of the authorisation is released and what was
// captured stays refundable. A CANCELLATION follows (originalReference the
// payment, as the published example), its amount what was cancelled.
func (s *Simulator) handleCancel(_ context.Context, c *call) result {
	p, in, _, e := s.readModification(c, false)
	if e != nil {
		return errorResult(e)
	}
	defer s.mu.Unlock()
	rest := money.Amount{Value: p.Authorised - p.Captured, Currency: p.Amount.Currency}
	switch {
	case p.State == StateCancelled || p.State == StateRefunded:
		return s.reject(p, ModCancel, upstream.EventCancellation, in.Reference, rest, stateError("Cancel not allowed: the payment is already "+p.State))
	case !authorisedState(p):
		return s.reject(p, ModCancel, upstream.EventCancellation, in.Reference, rest, stateError("Cancel not allowed: the payment is not authorised ("+p.State+")"))
	case p.Released:
		return s.reject(p, ModCancel, upstream.EventCancellation, in.Reference, rest,
			stateError("Cancel not allowed: the authorisation's remainder expired or was cancelled"))
	case p.RemainderClosed || rest.Value <= 0:
		return s.reject(p, ModCancel, upstream.EventCancellation, in.Reference, rest,
			stateError("Cancel not allowed: nothing of the authorisation is left uncaptured (refund the captured amount)"))
	}
	psp := s.newModRef(p)
	if p.Captured == 0 {
		p.State = StateCancelled
	} else {
		p.RemainderClosed = true
		s.updateCaptureState(p)
	}
	p.Modifications = append(p.Modifications, ModificationState{PSPReference: psp, Kind: ModCancel, Reference: in.Reference, Amount: rest, Success: true, CreatedAt: s.clock.Now()})
	s.emit(s.modificationItem(p, psp, upstream.EventCancellation, in.Reference, rest, true, ""))
	return jsonResult(http.StatusCreated, modificationOut{
		MerchantAccount: p.MerchantAccount, PaymentPSPReference: p.PSP, PSPReference: psp,
		Reference: in.Reference, Status: upstream.StatusReceived,
	})
}

func (s *Simulator) handleAmountUpdate(_ context.Context, c *call) result {
	p, in, amount, e := s.readModification(c, true)
	if e != nil {
		return errorResult(e)
	}
	defer s.mu.Unlock()
	switch {
	case s.opts.PlatformRules && !p.PreAuth:
		return errorResult(stateError("Amount update not allowed: the payment was not authorised as a pre-authorisation (additionalData.authorisationType PreAuth)"))
	case p.State != StateAuthorised:
		return s.reject(p, ModAmountUpdate, upstream.EventAuthorisationAdjustment, in.Reference, amount,
			stateError("Amount update not allowed: the payment is "+p.State+" (only authorised, not captured payments can be adjusted)"))
	case amount.Currency != p.Amount.Currency:
		return s.reject(p, ModAmountUpdate, upstream.EventAuthorisationAdjustment, in.Reference, amount, stateError("Modification in different currency than authorisation"))
	}
	if _, e := checkSplits(in.Splits, amount); e != nil {
		return errorResult(e)
	}
	psp := s.newModRef(p)
	p.Authorised = amount.Value
	p.Modifications = append(p.Modifications, ModificationState{PSPReference: psp, Kind: ModAmountUpdate, Reference: in.Reference, Amount: amount, Success: true, CreatedAt: s.clock.Now()})
	s.emit(s.modificationItem(p, psp, upstream.EventAuthorisationAdjustment, in.Reference, amount, true, ""))
	// The published answer always has a reference: without one in the
	// request, the payment's.
	return jsonResult(http.StatusCreated, modificationOut{
		Amount: &amount, IndustryUsage: in.IndustryUsage, MerchantAccount: p.MerchantAccount,
		PaymentPSPReference: p.PSP, PSPReference: psp, Reference: firstNonEmpty(in.Reference, p.Reference), Status: upstream.StatusReceived,
	})
}
