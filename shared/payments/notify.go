package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
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

// NotificationResult is what applying a notification item did.
type NotificationResult struct {
	Payment Payment
	Created bool // the record was created by this notification
	Applied bool // false for a duplicate (already in the history)
	// Changed: Payment is to be saved (Notify), at Payment.Version
	// (Version-1 is the version read; 0: a new record).
	Changed bool
	// bound is the pending record merged into Payment (pending.go),
	// marked bound once Payment is saved (Saved).
	bound *Payment
}

// NotificationPayment returns the pspReference of the payment an item is
// about: the modification's originalReference, or the item's own
// pspReference for AUTHORISATION, OFFER_CLOSED and items without one.
func NotificationPayment(item Notification) string {
	switch item.EventCode {
	case EventAuthorisation, EventOfferClosed:
		return item.PSPReference
	}
	if item.OriginalReference != "" {
		return item.OriginalReference
	}
	return item.PSPReference
}

// ApplyNotification applies one notification item to its payment's record
// and saves it with optimistic concurrency (Mutate), once: a repeated item
// (same event code, pspReference and success) changes nothing. It returns
// ErrUnknownPayment when there is no record to update and ErrNotReady (see
// there) when the item must be retried later.
func ApplyNotification(ctx context.Context, st Store, item Notification, opts NotificationOptions) (NotificationResult, error) {
	psp := NotificationPayment(item)
	if psp == "" {
		return NotificationResult{}, fmt.Errorf("notification %s without pspReference", item.EventCode)
	}
	var res NotificationResult
	p, err := Mutate(ctx, st, psp, creator(item, opts), func(p *Payment) error {
		res = NotificationResult{}
		return applyNotification(ctx, st, p, item, opts, &res)
	})
	if errors.Is(err, storeerr.ErrNotFound) {
		return NotificationResult{}, fmt.Errorf("payment %s: %w", psp, ErrUnknownPayment)
	}
	if err != nil {
		return NotificationResult{}, err
	}
	res.Payment = p
	res.Saved(ctx, st)
	return res, nil
}

// Notify is ApplyNotification on the record as read (nil: none) without
// saving it: the result says whether the record changed, for the caller
// to save it conditionally on the version read (and call Saved after).
// st is read for the pending record an AUTHORISATION may bind.
func Notify(ctx context.Context, st Store, rec *Payment, item Notification, opts NotificationOptions) (NotificationResult, error) {
	psp := NotificationPayment(item)
	if psp == "" {
		return NotificationResult{}, fmt.Errorf("notification %s without pspReference", item.EventCode)
	}
	var p Payment
	switch create := creator(item, opts); {
	case rec != nil:
		p = clonePayment(*rec)
	case create != nil:
		p = create()
		p.PSPReference = psp
	default:
		return NotificationResult{}, fmt.Errorf("payment %s: %w", psp, ErrUnknownPayment)
	}
	var res NotificationResult
	err := applyNotification(ctx, st, &p, item, opts, &res)
	switch {
	case errors.Is(err, ErrSkip):
	case err != nil:
		return NotificationResult{}, err
	default:
		p.Version++
		res.Changed = true
	}
	res.Payment = p
	return res, nil
}

// Saved marks the pending record the item bound as bound, once the
// result's record is saved (best effort: the payment's record is complete).
func (r NotificationResult) Saved(ctx context.Context, st Store) {
	if r.bound != nil {
		_ = markBound(ctx, st, *r.bound, r.Payment.PSPReference)
	}
}

// creator returns how an AUTHORISATION creates the record of a payment the
// service has not seen (nil: it cannot).
func creator(item Notification, opts NotificationOptions) func() Payment {
	if opts.Owner == nil || opts.Owner.MerchantID == "" || item.EventCode != EventAuthorisation {
		return nil
	}
	return func() Payment { return recordFromNotification(item, *opts.Owner, opts.Now) }
}

// applyNotification applies item to p (Version 0: a record just created),
// filling res; ErrSkip when p has it already.
func applyNotification(ctx context.Context, st Store, p *Payment, item Notification, opts NotificationOptions, res *NotificationResult) error {
	psp := NotificationPayment(item)
	res.Created = p.Version == 0
	if p.hasNotification(item) {
		res.Created = false
		return ErrSkip
	}
	if item.EventCode == EventAuthorisation && p.mayHavePending() {
		pend, found, err := pendingFor(ctx, st, p.MerchantID, p.SiteID, p.Reference, psp)
		if err == nil && !found && item.MerchantReference != p.Reference {
			pend, found, err = pendingFor(ctx, st, p.MerchantID, p.SiteID, item.MerchantReference, psp)
		}
		if err != nil {
			return err
		}
		if found {
			mergePending(p, pend)
			res.bound = &pend
		}
	}
	if err := applyItem(p, item, opts); err != nil {
		return err
	}
	res.Applied = true
	p.History = append(p.History, notificationEvent(item, opts.Now))
	p.UpdatedAt = opts.Now
	return nil
}

// recordFromNotification is the record of a payment first seen in its
// AUTHORISATION notification.
func recordFromNotification(item Notification, o NotificationOwner, now time.Time) Payment {
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
func notificationEvent(item Notification, now time.Time) Event {
	ok := item.Succeeded()
	amount := item.Amount
	detail := item.Reason
	if a := item.AdditionalData[KeyModificationAction]; a != "" {
		detail = a
	}
	return Event{At: now, Kind: item.EventCode, Origin: OriginNotification, PSPReference: item.PSPReference,
		Amount: &amount, Success: &ok, Detail: detail}
}

// hasNotification reports whether item was applied before.
func (p *Payment) hasNotification(item Notification) bool {
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
func applyItem(p *Payment, item Notification, opts NotificationOptions) error {
	switch item.EventCode {
	case EventAuthorisation:
		applyAuthorisation(p, item, opts)
	case EventCapture:
		applyCapture(p, item)
	case EventCaptureFailed:
		return applyCaptureFailed(p, item, opts)
	case EventCancellation:
		return applyReversal(p, item, false, item.Succeeded(), opts)
	case EventRefund, EventRefundFailed:
		return applyRefundItem(p, item, opts)
	case EventCancelOrRefund:
		refund := p.CapturedValue > 0
		switch item.AdditionalData[KeyModificationAction] {
		case "refund":
			refund = true
		case "cancel":
			refund = false
		}
		return applyReversal(p, item, refund, item.Succeeded(), opts)
	case EventAuthorisationAdjustment:
		return applyAdjustment(p, item, opts)
	case EventOfferClosed:
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
func applyAuthorisation(p *Payment, item Notification, opts NotificationOptions) {
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
		p.SessionID = ad[KeyCheckoutSessionID]
	}
	if token := firstOf(ad, KeyStoredPaymentMethodID, KeyRecurringDetailReference); token != "" {
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
		if e.Origin == OriginNotification && e.Kind == EventCapture && e.Success != nil && *e.Success &&
			e.Amount != nil && !p.notifiedAny(EventCaptureFailed, e.PSPReference) {
			n += e.Amount.Value
		}
	}
	return n
}

// applyCapture counts a confirmed capture unless the service already
// counted it (its own call, settled or still reserved) or it was reported
// failed before (out of order).
func applyCapture(p *Payment, item Notification) {
	op := item.PSPReference
	if _, ok := p.apiEvent(kindAPICapture, op); ok || p.notifiedAny(EventCaptureFailed, op) {
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
func applyCaptureFailed(p *Payment, item Notification, opts NotificationOptions) error {
	op, value := item.PSPReference, item.Amount.Value
	_, byAPI := p.apiEvent(kindAPICapture, op)
	switch {
	case byAPI || p.notified(EventCapture, op, true):
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
func applyReversal(p *Payment, item Notification, refund, ok bool, opts NotificationOptions) error {
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
		case item.EventCode == EventCancelOrRefund:
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
	if code == EventRefundFailed {
		return EventRefund
	}
	return code
}

// notifiedFailure reports whether the failure of operation op, reported
// by a success code, was applied.
func (p *Payment) notifiedFailure(code, op string) bool {
	if code == EventRefund {
		return p.notifiedAny(EventRefundFailed, op)
	}
	return p.notified(code, op, false)
}

// awaitingReversal reports whether the record could still receive the
// optimistic state of a reversal call in flight: it is reversible.
func (p *Payment) awaitingReversal() bool { return reversible(p.State) }

// applyAdjustment applies an AUTHORISATION_ADJUSTMENT: success sets the
// authorised amount; failure restores the amount before the adjustment.
func applyAdjustment(p *Payment, item Notification, opts NotificationOptions) error {
	op := item.PSPReference
	if item.Succeeded() {
		if p.notified(EventAuthorisationAdjustment, op, false) {
			return nil // its failure arrived first and stands
		}
		p.AuthorisedValue, p.Amount.Value = item.Amount.Value, item.Amount.Value
		return nil
	}
	apiEv, byAPI := p.apiEvent(kindAPIAmountUpdate, op)
	if !byAPI && !p.notified(EventAuthorisationAdjustment, op, true) {
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
		if (e.Kind == EventAuthorisationAdjustment && e.PSPReference != op) ||
			(e.Kind == EventAuthorisation && found == nil) {
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
