package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
)

// This file applies the upstream's notifications to payment records
// (docs/payments.md, docs/webhooks.md). Notifications are the source of truth; the
// service's own calls update records optimistically first (capture
// reservations, reversal and amount-update states), and a notification
// confirms or reverts that. Every notification is applied once (history),
// in any order with the others and with the service's own calls.

// Origins of history events.
const (
	OriginAPI          = "api"
	OriginNotification = "notification"
)

// API history kinds written by the service's own calls (modifications.go).
const (
	kindAPICapture      = "capture"
	kindAPIReversal     = "reversal"
	kindAPIAmountUpdate = "amount-update"
)

// DefaultNotReadyGrace is how long after its first arrival a failure
// notification waits for the service's own call to be recorded (see
// ErrNotReady).
const DefaultNotReadyGrace = 30 * time.Second

var (
	// ErrUnknownPayment: the notification's payment has no record and the
	// notification cannot create one (no owner, or not an AUTHORISATION).
	ErrUnknownPayment = errors.New("payments: no record of the notification's payment")
	// ErrNotReady: a failure notification arrived for an operation of the
	// service whose own result is not recorded yet (a capture reservation
	// still open, or no trace yet of a reversal or amount update), within
	// the grace period after its first arrival. Reverting now would be
	// overwritten by the call's own update, so the caller answers the
	// upstream with an error and applies the notification on its retry.
	ErrNotReady = errors.New("payments: the operation this notification reports is still being recorded; retry later")
)

// NotificationOwner is who a payment first seen in a notification belongs
// to (from the routing metadata or the session record).
type NotificationOwner struct {
	MerchantID string
	SiteID     string
	Source     Source
	SessionID  string
}

// NotificationOptions are the context of one ApplyNotification.
type NotificationOptions struct {
	Now time.Time
	// FirstSeen is when the service first received this item (the event
	// store's record), for the grace period of ErrNotReady.
	FirstSeen time.Time
	// Grace overrides DefaultNotReadyGrace; a negative value never waits.
	Grace time.Duration
	// Owner lets an AUTHORISATION create the record of a payment the
	// service has not seen (Sessions flow). Nil: records are only updated.
	Owner *NotificationOwner
	// CaptureMode is the owning merchant's: an authorisation of an
	// auto-capture merchant is recorded as captured, as the API does.
	CaptureMode tenant.CaptureMode
}

// NotificationResult is what ApplyNotification did.
type NotificationResult struct {
	Payment Payment
	Created bool // the record was created by this notification
	Applied bool // false for a duplicate (already in the history)
}

// NotificationPayment returns the pspReference of the payment an item is
// about: the modification's originalReference, or the item's own
// pspReference for AUTHORISATION, OFFER_CLOSED and items without one.
func NotificationPayment(item upstream.NotificationRequestItem) string {
	switch item.EventCode {
	case upstream.EventAuthorisation, upstream.EventOfferClosed:
		return item.PSPReference
	}
	if item.OriginalReference != "" {
		return item.OriginalReference
	}
	return item.PSPReference
}

// ApplyNotification applies one notification item to its payment's record
// with optimistic concurrency (Mutate), once: a repeated item (same event
// code, pspReference and success) changes nothing. It returns
// ErrUnknownPayment when there is no record to update and ErrNotReady (see
// there) when the item must be retried later.
func ApplyNotification(ctx context.Context, st Store, item upstream.NotificationRequestItem, opts NotificationOptions) (NotificationResult, error) {
	psp := NotificationPayment(item)
	if psp == "" {
		return NotificationResult{}, fmt.Errorf("notification %s without pspReference", item.EventCode)
	}
	var create func() Payment
	if opts.Owner != nil && opts.Owner.MerchantID != "" && item.EventCode == upstream.EventAuthorisation {
		create = func() Payment { return recordFromNotification(item, *opts.Owner, opts.Now) }
	}
	var res NotificationResult
	p, err := Mutate(ctx, st, psp, create, func(p *Payment) error {
		res.Created, res.Applied = p.Version == 0, false
		if p.hasNotification(item) {
			return ErrSkip
		}
		if err := applyItem(p, item, opts); err != nil {
			return err
		}
		res.Applied = true
		p.History = append(p.History, notificationEvent(item, opts.Now))
		p.UpdatedAt = opts.Now
		return nil
	})
	if errors.Is(err, storeerr.ErrNotFound) {
		return NotificationResult{}, fmt.Errorf("payment %s: %w", psp, ErrUnknownPayment)
	}
	if err != nil {
		return NotificationResult{}, err
	}
	if !res.Applied {
		res.Created = false
	}
	res.Payment = p
	return res, nil
}

// recordFromNotification is the record of a payment first seen in its
// AUTHORISATION notification.
func recordFromNotification(item upstream.NotificationRequestItem, o NotificationOwner, now time.Time) Payment {
	src := o.Source
	if src == "" {
		src = SourceSessions
	}
	return Payment{
		MerchantID: o.MerchantID, SiteID: o.SiteID, Reference: item.MerchantReference, Source: src,
		SessionID: o.SessionID, Amount: item.Amount, PaymentMethod: item.PaymentMethod,
		CreatedAt: now, UpdatedAt: now,
	}
}

// notificationEvent is the history entry of an applied item.
func notificationEvent(item upstream.NotificationRequestItem, now time.Time) Event {
	ok := item.Succeeded()
	amount := item.Amount
	detail := item.Reason
	if a := item.AdditionalData[upstream.KeyModificationAction]; a != "" {
		detail = a
	}
	return Event{At: now, Kind: item.EventCode, Origin: OriginNotification, PSPReference: item.PSPReference,
		Amount: &amount, Success: &ok, Detail: detail}
}

// hasNotification reports whether item was applied before.
func (p *Payment) hasNotification(item upstream.NotificationRequestItem) bool {
	for _, e := range p.History {
		if e.Origin == OriginNotification && e.Kind == item.EventCode && e.PSPReference == item.PSPReference &&
			e.Success != nil && *e.Success == item.Succeeded() {
			return true
		}
	}
	return false
}

// notified reports whether a notification of kind for operation opPSP with
// the given outcome was applied.
func (p *Payment) notified(kind, opPSP string, success bool) bool {
	for _, e := range p.History {
		if e.Origin == OriginNotification && e.Kind == kind && e.PSPReference == opPSP && e.Success != nil && *e.Success == success {
			return true
		}
	}
	return false
}

// notifiedAny reports whether a notification of kind for operation opPSP
// was applied, whatever its success field (the upstream sends *_FAILED
// events with success "true").
func (p *Payment) notifiedAny(kind, opPSP string) bool {
	return p.notified(kind, opPSP, true) || p.notified(kind, opPSP, false)
}

// apiEvent returns the service's own history entry of kind for operation
// opPSP (the upstream's pspReference of the modification).
func (p *Payment) apiEvent(kind, opPSP string) (Event, bool) {
	for _, e := range p.History {
		if e.Origin == OriginAPI && e.Kind == kind && e.PSPReference == opPSP {
			return e, true
		}
	}
	return Event{}, false
}

// applyItem changes p's fields for item.
func applyItem(p *Payment, item upstream.NotificationRequestItem, opts NotificationOptions) error {
	switch item.EventCode {
	case upstream.EventAuthorisation:
		applyAuthorisation(p, item, opts)
	case upstream.EventCapture:
		applyCapture(p, item)
	case upstream.EventCaptureFailed:
		return applyCaptureFailed(p, item, opts)
	case upstream.EventCancellation:
		return applyReversal(p, item, false, item.Succeeded(), opts)
	case upstream.EventRefund:
		return applyReversal(p, item, true, true, opts)
	case upstream.EventRefundFailed:
		return applyReversal(p, item, true, false, opts)
	case upstream.EventCancelOrRefund:
		refund := p.CapturedValue > 0
		switch item.AdditionalData[upstream.KeyModificationAction] {
		case "refund":
			refund = true
		case "cancel":
			refund = false
		}
		return applyReversal(p, item, refund, item.Succeeded(), opts)
	case upstream.EventAuthorisationAdjustment:
		return applyAdjustment(p, item, opts)
	case upstream.EventOfferClosed:
		if item.Succeeded() && unfinished(p.State) {
			p.State = StateExpired
		}
	}
	return nil
}

// unfinished reports states of a payment still waiting for its outcome.
func unfinished(s State) bool {
	switch s {
	case "", StatePending, StateReceived, StateRedirectShopper, StateChallengeShopper, StateIdentifyShopper:
		return true
	}
	return false
}

// applyAuthorisation records the outcome of the authorisation itself and
// the stored-card token of a tokenising payment.
func applyAuthorisation(p *Payment, item upstream.NotificationRequestItem, opts NotificationOptions) {
	ad := item.AdditionalData
	if p.Reference == "" {
		p.Reference = item.MerchantReference
	}
	if p.Amount.Currency == "" {
		p.Amount = item.Amount
	}
	if p.PaymentMethod == "" {
		p.PaymentMethod = item.PaymentMethod
	}
	if p.SessionID == "" {
		p.SessionID = ad[upstream.KeyCheckoutSessionID]
	}
	if token := firstOf(ad, upstream.KeyStoredPaymentMethodID, upstream.KeyRecurringDetailReference); token != "" {
		p.StoredMethodID = token
	}
	if p.ShopperReference == "" {
		p.ShopperReference = firstOf(ad, "tokenization.shopperReference", "recurring.shopperReference", "shopperReference")
	}
	if !item.Succeeded() {
		if p.confirmedCaptures() > 0 {
			return // contradicts captures the upstream confirmed; keep them
		}
		p.State, p.ResultCode, p.RefusalReason = StateRefused, string(StateRefused), item.Reason
		p.AuthorisedValue, p.CapturedValue = 0, 0
		return
	}
	if unfinished(p.State) || p.State == StateRefused || p.State == StateError {
		p.State, p.RefusalReason = StateAuthorised, ""
		if p.ResultCode == "" || p.ResultCode == string(StateRefused) || unfinished(State(p.ResultCode)) {
			p.ResultCode = string(StateAuthorised)
		}
	}
	if p.AuthorisedValue == 0 {
		p.AuthorisedValue = item.Amount.Value
	}
	if opts.CaptureMode == tenant.CaptureAuto && p.State == StateAuthorised && p.CapturedValue == 0 && p.AuthorisedValue > 0 {
		p.CapturedValue = p.AuthorisedValue
	}
	p.recomputeState() // captures may have arrived first
}

// firstOf returns the first non-empty ad[k].
func firstOf(ad map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := ad[k]; v != "" {
			return v
		}
	}
	return ""
}

// confirmedCaptures sums the captures the upstream confirmed and did not
// later report failed.
func (p *Payment) confirmedCaptures() int64 {
	var n int64
	for _, e := range p.History {
		if e.Origin == OriginNotification && e.Kind == upstream.EventCapture && e.Success != nil && *e.Success &&
			e.Amount != nil && !p.notifiedAny(upstream.EventCaptureFailed, e.PSPReference) {
			n += e.Amount.Value
		}
	}
	return n
}

// applyCapture counts a confirmed capture unless the service already
// counted it (its own call, settled or still reserved) or it was reported
// failed before (out of order).
func applyCapture(p *Payment, item upstream.NotificationRequestItem) {
	op := item.PSPReference
	if _, ok := p.apiEvent(kindAPICapture, op); ok || p.notifiedAny(upstream.EventCaptureFailed, op) {
		p.recomputeState()
		return
	}
	if _, ok := p.reservationOf(item.Amount.Value); !ok {
		p.CapturedValue += item.Amount.Value
		if p.AuthorisedValue > 0 {
			// An auto-captured payment is recorded as captured in full already.
			p.CapturedValue = min(p.CapturedValue, p.AuthorisedValue)
		}
	}
	p.recomputeState()
}

// reservationOf returns an open capture reservation of value.
func (p *Payment) reservationOf(value int64) (string, bool) {
	for op, v := range p.Reservations {
		if v == value {
			return op, true
		}
	}
	return "", false
}

// applyCaptureFailed reverts a capture that was counted: by the service's
// settled call, by an earlier CAPTURE notification, or by a reservation
// whose call never settled (after the grace period).
func applyCaptureFailed(p *Payment, item upstream.NotificationRequestItem, opts NotificationOptions) error {
	op, value := item.PSPReference, item.Amount.Value
	_, byAPI := p.apiEvent(kindAPICapture, op)
	switch {
	case byAPI || p.notified(upstream.EventCapture, op, true):
		p.CapturedValue = max(p.CapturedValue-value, 0)
	default:
		res, ok := p.reservationOf(value)
		if !ok {
			break // never counted (not captured through the service)
		}
		if withinGrace(opts) {
			return ErrNotReady
		}
		p.CapturedValue = max(p.CapturedValue-value, 0)
		delete(p.Reservations, res)
	}
	p.recomputeState()
	return nil
}

// applyReversal applies a cancellation or refund (refund) that succeeded
// or failed (ok).
func applyReversal(p *Payment, item upstream.NotificationRequestItem, refund, ok bool, opts NotificationOptions) error {
	op := item.PSPReference
	apiEv, byAPI := p.apiEvent(kindAPIReversal, op)
	if ok {
		switch {
		case p.notifiedFailure(item.EventCode, op):
			// A later failure already arrived (out of order): it stands.
		case !refund:
			p.State = StateCancelled
		case byAPI && apiEv.Detail == "refund":
			p.State = StateRefunded // counted by the service's call
		case item.EventCode == upstream.EventCancelOrRefund:
			p.RefundedValue = max(p.RefundedValue, p.CapturedValue)
			p.recomputeState()
		default:
			p.RefundedValue += item.Amount.Value
			p.recomputeState()
		}
		return nil
	}
	succeeded := p.notified(successCode(item.EventCode), op, true)
	if !byAPI && !succeeded {
		if withinGrace(opts) && p.awaitingReversal() {
			return ErrNotReady
		}
		return nil // nothing was applied for this operation
	}
	if refund {
		p.RefundedValue = max(p.RefundedValue-item.Amount.Value, 0)
	}
	if p.State == StateCancelled || p.State == StateRefunded || p.State == StatePartiallyRefunded {
		p.State = StateAuthorised
	}
	p.recomputeState()
	return nil
}

// successCode returns the event code whose success a failure code reverts.
func successCode(code string) string {
	if code == upstream.EventRefundFailed {
		return upstream.EventRefund
	}
	return code
}

// notifiedFailure reports whether the failure of operation op, reported
// by a success code, was applied.
func (p *Payment) notifiedFailure(code, op string) bool {
	if code == upstream.EventRefund {
		return p.notifiedAny(upstream.EventRefundFailed, op)
	}
	return p.notified(code, op, false)
}

// awaitingReversal reports whether the record could still receive the
// optimistic state of a reversal call in flight: it is reversible.
func (p *Payment) awaitingReversal() bool { return reversible(p.State) }

// applyAdjustment applies an AUTHORISATION_ADJUSTMENT: success sets the
// authorised amount; failure restores the amount before the adjustment.
func applyAdjustment(p *Payment, item upstream.NotificationRequestItem, opts NotificationOptions) error {
	op := item.PSPReference
	if item.Succeeded() {
		if p.notified(upstream.EventAuthorisationAdjustment, op, false) {
			return nil // its failure arrived first and stands
		}
		p.AuthorisedValue, p.Amount.Value = item.Amount.Value, item.Amount.Value
		return nil
	}
	apiEv, byAPI := p.apiEvent(kindAPIAmountUpdate, op)
	if !byAPI && !p.notified(upstream.EventAuthorisationAdjustment, op, true) {
		if withinGrace(opts) && p.State == StateAuthorised {
			return ErrNotReady
		}
		return nil
	}
	prev, ok := p.amountBefore(op, apiEv, byAPI)
	if ok {
		p.AuthorisedValue, p.Amount.Value = prev, prev
	}
	return nil
}

// amountBefore returns the authorised amount before adjustment op: as the
// service's call recorded it, else the last other confirmed adjustment,
// else the authorisation's amount.
func (p *Payment) amountBefore(op string, apiEv Event, byAPI bool) (int64, bool) {
	var v int64
	if byAPI {
		if _, err := fmt.Sscanf(apiEv.Detail, "from %d", &v); err == nil {
			return v, true
		}
	}
	var found *money.Amount
	for i := range p.History {
		e := p.History[i]
		if e.Origin != OriginNotification || e.Success == nil || !*e.Success || e.Amount == nil {
			continue
		}
		if (e.Kind == upstream.EventAuthorisationAdjustment && e.PSPReference != op) ||
			(e.Kind == upstream.EventAuthorisation && found == nil) {
			found = e.Amount
		}
	}
	if found == nil {
		return 0, false
	}
	return found.Value, true
}

// recomputeState derives the state of an authorised payment from its
// captured and refunded amounts; other states are left alone.
func (p *Payment) recomputeState() {
	switch p.State {
	case StateAuthorised, StatePartiallyCaptured, StateCaptured, StatePartiallyRefunded, StateRefunded:
	default:
		return
	}
	switch {
	case p.RefundedValue > 0 && p.RefundedValue >= p.CapturedValue:
		p.State = StateRefunded
	case p.RefundedValue > 0:
		p.State = StatePartiallyRefunded
	case p.CapturedValue > 0 && p.CapturedValue >= p.AuthorisedValue:
		p.State = StateCaptured
	case p.CapturedValue > 0:
		p.State = StatePartiallyCaptured
	default:
		p.State = StateAuthorised
	}
}

// withinGrace reports whether a failure may still wait for the service's
// own call to be recorded.
func withinGrace(opts NotificationOptions) bool {
	g := opts.Grace
	if g == 0 {
		g = DefaultNotReadyGrace
	}
	if g < 0 || opts.FirstSeen.IsZero() {
		return false
	}
	return opts.Now.Sub(opts.FirstSeen) < g
}
