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

// Record updates after the upstream's answer (docs/payments.md). Once the
// upstream has answered a call, what the record must learn from the answer
// is a RecordUpdate: data, applied by ApplyRecordUpdate, idempotently. The
// request applies it itself (Service.settle, retrying for a while); when
// the store keeps failing, it hands the update to the PendingUpdates port
// instead of dropping it, and the port's consumer applies the same update
// with the same function until it lands.

// UpdateKind says what a record update records.
type UpdateKind string

// Record update kinds.
const (
	// UpdateCapture: the upstream accepted a capture (Op: its reservation).
	UpdateCapture UpdateKind = "capture"
	// UpdateCaptureRelease: the capture call failed; its reservation is released.
	UpdateCaptureRelease UpdateKind = "capture-release"
	// UpdateRefund: the upstream accepted a refund (Op: its reservation,
	// moved to the refund's pspReference until its notification).
	UpdateRefund UpdateKind = "refund"
	// UpdateRefundRelease: the refund call failed; its reservation is released.
	UpdateRefundRelease UpdateKind = "refund-release"
	// UpdateReversal: the upstream accepted a reversal.
	UpdateReversal UpdateKind = "reversal"
	// UpdateAmount: the upstream accepted an amount update (Op: its marker).
	UpdateAmount UpdateKind = "amount-update"
	// UpdateAmountRelease: the amount update call failed; its marker is removed.
	UpdateAmountRelease UpdateKind = "amount-update-release"
	// UpdatePayment: /payments answered with the payment's pspReference.
	UpdatePayment UpdateKind = "payment"
	// UpdateDetails: /payments/details answered with the pspReference.
	UpdateDetails UpdateKind = "details"
	// UpdatePending: /payments answered an action without pspReference:
	// the pending record (pending.go) and its action's alias.
	UpdatePending UpdateKind = "pending"
	// UpdateAction: /payments/details answered another action: its alias.
	UpdateAction UpdateKind = "action"
	// UpdateSession: the record of a session the upstream created.
	UpdateSession UpdateKind = "session"
)

// RecordUpdate is one record write that follows an upstream answer: which
// record, which operation, and the facts of the answer. It holds no
// pointer into a request: a PendingUpdates adapter can keep it and apply
// it much later.
type RecordUpdate struct {
	Kind UpdateKind
	// PSPReference is the payment's (modifications, payment, details).
	PSPReference string
	// Op is the operation reference (op_…): the reservation or in-flight
	// marker the update ends.
	Op string
	// Modification is the upstream's pspReference of the modification:
	// the key that makes the update apply once.
	Modification string
	// Amount of a capture, refund or amount update.
	Amount money.Amount
	// Status is the upstream's answer: a modification's status
	// ("received"), a payment's resultCode.
	Status string
	// Payment: what a payment or details call knew (payment, details,
	// pending, action).
	Payment *PaymentFacts
	// Session is the session record (session).
	Session *Session
	// At is when the upstream answered: the history entry's time.
	At time.Time
}

// PaymentFacts is what a /payments or /payments/details call knew about
// its payment, and what the upstream answered beyond the result code.
type PaymentFacts struct {
	MerchantID string
	SiteID     string
	// Reference is the record's reference.
	Reference string
	// PendingReference (details) is the reference that finds the
	// payment's pending record: the merchant's, the action's, or the one
	// the upstream echoed.
	PendingReference   string
	Amount             money.Amount
	ShopperReference   string
	StoredMethodID     string
	StorePaymentMethod bool
	AuthorisationType  string
	CaptureMode        tenant.CaptureMode
	RefusalReason      string
	// PaymentMethod is the brand, else the type, the upstream answered.
	PaymentMethod string
	// ActionPaymentData is the paymentData of the action answered (pending, action).
	ActionPaymentData string
}

// PendingUpdates is the port that keeps a record update the request could
// not apply (the store kept failing): it is applied later with
// ApplyRecordUpdate until it lands. SQS and a consumer function in AWS, a
// bucket of the embedded store and a retry loop locally.
type PendingUpdates interface {
	// Defer keeps u; nil means it is durable.
	Defer(ctx context.Context, u RecordUpdate) error
}

// RecordMetrics counts record updates the request could not apply:
// deferred (handed to PendingUpdates) and lost (not even that; the
// upstream's notification is then the only repair). EMF in Lambda.
type RecordMetrics interface {
	RecordUpdateDeferred(kind string)
	RecordUpdateLost(kind string)
}

// ErrUpdateRefused: the update can never apply (malformed, its payment
// unknown, or of another merchant or site). Retrying it is useless.
var ErrUpdateRefused = errors.New("payments: record update refused")

// Validate reports an update that can never apply (ErrUpdateRefused).
func (u RecordUpdate) Validate() error {
	missing := func(what string) error {
		return fmt.Errorf("%w: %s update without %s", ErrUpdateRefused, u.Kind, what)
	}
	switch u.Kind {
	case UpdateCapture, UpdateRefund, UpdateAmount:
		if u.Op == "" {
			return missing("operation reference")
		}
		fallthrough
	case UpdateReversal:
		if u.Modification == "" {
			return missing("modification pspReference")
		}
	case UpdateCaptureRelease, UpdateRefundRelease, UpdateAmountRelease:
		if u.Op == "" {
			return missing("operation reference")
		}
	case UpdatePayment, UpdateDetails, UpdatePending, UpdateAction:
		f := u.Payment
		switch {
		case f == nil || f.MerchantID == "" || f.SiteID == "":
			return missing("merchant and site")
		case u.Kind == UpdatePending && f.Reference == "", u.Kind == UpdateAction && f.Reference == "":
			return missing("reference")
		case u.Kind == UpdateAction && f.ActionPaymentData == "":
			return missing("paymentData")
		}
		if u.Kind == UpdatePending || u.Kind == UpdateAction {
			return nil
		}
	case UpdateSession:
		if u.Session == nil || u.Session.ID == "" {
			return missing("session")
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown kind %q", ErrUpdateRefused, u.Kind)
	}
	if u.PSPReference == "" || IsPendingKey(u.PSPReference) {
		return missing("pspReference")
	}
	return nil
}

// ApplyRecordUpdate applies u to its record, idempotently: an update
// applied before (keyed by the modification's pspReference, or the
// reservation it ends) changes nothing, and so does one whose effect a
// notification already decided. Conflicts are retried; other store errors
// are returned (retry later); ErrUpdateRefused when it can never apply.
func ApplyRecordUpdate(ctx context.Context, st Store, u RecordUpdate) error {
	return applyRecordUpdate(ctx, st, u, nil)
}

// applyRecordUpdate is ApplyRecordUpdate starting from first, the record
// as the request last saw it (nil: read it).
func applyRecordUpdate(ctx context.Context, st Store, u RecordUpdate, first *Payment) error {
	if err := u.Validate(); err != nil {
		return err
	}
	switch u.Kind {
	case UpdatePayment, UpdateDetails:
		return recordResult(ctx, st, u)
	case UpdatePending:
		return recordPending(ctx, st, u)
	case UpdateAction:
		f := u.Payment
		return saveActionAlias(ctx, st, f.MerchantID, f.SiteID, f.Reference, f.ActionPaymentData, u.At)
	case UpdateSession:
		if err := st.PutSession(ctx, *u.Session); err != nil {
			return fmt.Errorf("store session record %s: %w", u.Session.ID, err)
		}
		return nil
	}
	_, err := mutate(ctx, st, u.PSPReference, first, nil, func(p *Payment) error {
		if err := u.applyTo(p); err != nil {
			return err
		}
		if u.At.After(p.UpdatedAt) {
			p.UpdatedAt = u.At
		}
		return nil
	}, maxSettleAttempts)
	if errors.Is(err, storeerr.ErrNotFound) {
		return fmt.Errorf("%w: payment %s not found: %w", ErrUpdateRefused, u.PSPReference, err)
	}
	if err != nil {
		return fmt.Errorf("%s update of payment %s: %w", u.Kind, u.PSPReference, err)
	}
	return nil
}

// applyTo applies a modification's update to p, or returns ErrSkip when p
// already has it.
func (u RecordUpdate) applyTo(p *Payment) error {
	amount := u.Amount
	switch u.Kind {
	case UpdateCapture:
		if _, done := p.apiEvent(kindAPICapture, u.Modification); done {
			return ErrSkip
		}
		_, reserved := p.Reservations[u.Op]
		delete(p.Reservations, u.Op)
		switch {
		case !reserved || p.notifiedAny(EventCaptureFailed, u.Modification):
			// Not counted any more: its failure notification took it
			// back (or, after the grace period, released a reservation of
			// the same amount, leaving this one to stand for it).
			p.recomputeState()
		case p.State == StateCancelled || p.State == StateRefunded || p.State == StatePartiallyRefunded:
			// A reversal was recorded first, but the upstream accepted
			// this capture, so it came before the reversal there: the
			// reversal refunded it.
			p.RefundedValue += amount.Value
			p.State = StateRefunded
		default:
			p.State = capturedState(p)
		}
		p.History = append(p.History, Event{At: u.At, Kind: kindAPICapture, Origin: OriginAPI, PSPReference: u.Modification, Amount: &amount, Detail: u.Status})
	case UpdateCaptureRelease:
		v, ok := p.Reservations[u.Op]
		if !ok {
			return ErrSkip
		}
		p.CapturedValue -= v
		delete(p.Reservations, u.Op)
		p.History = append(p.History, Event{At: u.At, Kind: "capture-released", Origin: OriginAPI, PSPReference: u.Op})
	case UpdateRefund:
		if _, done := p.apiEvent(kindAPIRefund, u.Modification); done {
			return ErrSkip
		}
		delete(p.RefundReservations, u.Op)
		if !p.notifiedAny(EventRefund, u.Modification) && !p.notifiedAny(EventRefundFailed, u.Modification) {
			if p.RefundReservations == nil {
				p.RefundReservations = map[string]int64{}
			}
			p.RefundReservations[u.Modification] = amount.Value
		}
		p.History = append(p.History, Event{At: u.At, Kind: kindAPIRefund, Origin: OriginAPI, PSPReference: u.Modification, Amount: &amount, Detail: u.Status})
	case UpdateRefundRelease:
		if _, ok := p.RefundReservations[u.Op]; !ok {
			return ErrSkip
		}
		delete(p.RefundReservations, u.Op)
		p.History = append(p.History, Event{At: u.At, Kind: kindAPIRefundReleased, Origin: OriginAPI, PSPReference: u.Op})
	case UpdateReversal:
		if _, done := p.apiEvent(kindAPIReversal, u.Modification); done {
			return ErrSkip
		}
		// Captures still in flight are not counted: one the upstream
		// accepted before this reversal adds itself to the refund when it
		// settles (UpdateCapture), one it refuses after is released.
		kind := "cancel"
		captured := p.settledCaptures()
		if captured > 0 {
			kind = "refund"
		}
		switch {
		case p.notified(EventCancelOrRefund, u.Modification, false):
			// Its failure was notified first and stands.
		case captured > 0:
			p.RefundedValue = captured
			p.State = StateRefunded
		default:
			p.State = StateCancelled
		}
		p.History = append(p.History, Event{At: u.At, Kind: kindAPIReversal, Origin: OriginAPI, PSPReference: u.Modification, Detail: kind})
	case UpdateAmount:
		if _, done := p.apiEvent(kindAPIAmountUpdate, u.Modification); done {
			return ErrSkip
		}
		if p.AmountUpdate != nil && p.AmountUpdate.Op == u.Op {
			p.AmountUpdate = nil
		}
		p.History = append(p.History, Event{At: u.At, Kind: kindAPIAmountUpdate, Origin: OriginAPI, PSPReference: u.Modification, Amount: &amount, Detail: fmt.Sprintf("from %d", p.AuthorisedValue)})
		if !p.notified(EventAuthorisationAdjustment, u.Modification, false) { // else its failure stands
			p.AuthorisedValue = amount.Value
			p.Amount.Value = amount.Value
		}
	case UpdateAmountRelease:
		if p.AmountUpdate == nil || p.AmountUpdate.Op != u.Op {
			return ErrSkip
		}
		p.AmountUpdate = nil
	default:
		return fmt.Errorf("%w: %s is not a modification update", ErrUpdateRefused, u.Kind)
	}
	return nil
}

// newRecord is the record a payment or details answer creates when none
// exists (and no pending record leads to it).
func (f *PaymentFacts) newRecord(at time.Time) Payment {
	return Payment{
		MerchantID: f.MerchantID, SiteID: f.SiteID, Reference: f.Reference, Source: SourceAdvanced,
		Amount: f.Amount, ShopperReference: f.ShopperReference, StoredMethodID: f.StoredMethodID,
		StorePaymentMethod: f.StorePaymentMethod, AuthorisationType: f.AuthorisationType,
		CreatedAt: at,
	}
}

// recordResult creates or updates the record of a payment after a payment
// or details answer naming its pspReference. A details answer starts from
// the payment's pending record (found by PendingReference), which is then
// marked bound.
func recordResult(ctx context.Context, st Store, u RecordUpdate) error {
	f := u.Payment
	psp := u.PSPReference
	var pend Payment
	var found bool
	if u.Kind == UpdateDetails {
		var err error
		if pend, found, err = pendingFor(ctx, st, f.MerchantID, f.SiteID, f.PendingReference, psp); err != nil {
			return fmt.Errorf("read pending payment %s: %w", f.PendingReference, err)
		}
	}
	create := func() Payment {
		if found {
			return fromPending(pend, psp)
		}
		return f.newRecord(u.At)
	}
	apply := func(p *Payment) error {
		if p.MerchantID != f.MerchantID || (p.SiteID != "" && p.SiteID != f.SiteID) {
			return fmt.Errorf("%w: payment %s belongs to another merchant or site", ErrUpdateRefused, psp)
		}
		for _, e := range p.History {
			if e.Origin == OriginAPI && e.Kind == string(u.Kind) && e.PSPReference == psp && e.Detail == u.Status {
				return ErrSkip // this answer is recorded
			}
		}
		if p.SiteID == "" {
			p.SiteID = f.SiteID
		}
		if found {
			mergePending(p, pend)
		}
		applyResult(p, u.Status, f.CaptureMode)
		if f.RefusalReason != "" {
			p.RefusalReason = f.RefusalReason
		}
		if f.PaymentMethod != "" {
			p.PaymentMethod = f.PaymentMethod
		}
		p.History = append(p.History, Event{At: u.At, Kind: string(u.Kind), Origin: OriginAPI, PSPReference: psp, Detail: u.Status})
		if u.At.After(p.UpdatedAt) {
			p.UpdatedAt = u.At
		}
		return nil
	}
	// A new payment is one create-only write; only when a notification got
	// there first (or on a retry) is the record read and merged, the
	// request's facts filling what the notification could not know (its
	// authorisation type, the shopper, card storage).
	fresh := create()
	fresh.PSPReference = psp
	if err := apply(&fresh); err != nil {
		return err // cannot happen: a new record is the merchant's and has no history of this answer
	}
	fresh.Version = 1
	err := st.SavePayment(ctx, fresh, 0)
	if errors.Is(err, storeerr.ErrConflict) {
		req := create()
		_, err = Mutate(ctx, st, psp, create, func(p *Payment) error {
			if p.Version != 0 {
				fillRequestFacts(p, req)
			}
			return apply(p)
		})
	}
	if err != nil {
		return fmt.Errorf("record payment %s: %w", psp, err)
	}
	if found {
		return markBound(ctx, st, pend, psp)
	}
	return nil
}

// recordPending writes the pending record of a payment answered with an
// action and no pspReference, and its action's alias. Applying it again
// replaces the pending record with the same one, unless its payment was
// bound meanwhile.
func recordPending(ctx context.Context, st Store, u RecordUpdate) error {
	f := u.Payment
	p := f.newRecord(u.At)
	applyResult(&p, u.Status, f.CaptureMode)
	p.History = []Event{{At: u.At, Kind: "payment", Origin: OriginAPI, Detail: u.Status}}
	p.UpdatedAt = u.At
	return errors.Join(savePending(ctx, st, p), saveActionAlias(ctx, st, f.MerchantID, f.SiteID, f.Reference, f.ActionPaymentData, u.At))
}

// settle applies u, a record write after the upstream's answer, starting
// from first (the record as the request last saw it, or nil). The upstream
// has acted, so it is not given up: the merchant hanging up does not
// cancel it, conflicts are retried (maxSettleAttempts), store failures for
// s.recordRetry with backoff; then it is deferred to the PendingUpdates
// port, which applies it until it lands. Only when that fails too is an
// error returned: the update is lost and the upstream's notification is
// the only repair.
func (s *Service) settle(ctx context.Context, u RecordUpdate, first *Payment) error {
	if ctx.Done() != nil { // not detached yet (Call.record's context is)
		ctx = context.WithoutCancel(ctx)
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := applyRecordUpdate(ctx, s.store, u, first)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrUpdateRefused) {
			return fmt.Errorf("update record after the upstream answered: %w", err)
		}
		if time.Since(start) >= s.recordRetry {
			return s.deferUpdate(ctx, u, attempt, err)
		}
		s.log.WarnContext(ctx, "updating payment record failed; retrying", "pspReference", u.PSPReference, "update", string(u.Kind), "attempt", attempt, "err", err.Error())
		time.Sleep(min(settleBackoff<<min(attempt-1, 6), time.Second))
		first = nil // re-read the record
	}
}

// settleBackoff is settle's first wait after a store failure.
const settleBackoff = 20 * time.Millisecond

// deferUpdate hands u, which failed attempts times (last with cause), to
// the PendingUpdates port.
func (s *Service) deferUpdate(ctx context.Context, u RecordUpdate, attempts int, cause error) error {
	failed := fmt.Errorf("update record %s after the upstream answered (%d attempts): %w", u.PSPReference, attempts, cause)
	if s.pending != nil {
		err := s.pending.Defer(ctx, u)
		if err == nil {
			s.log.WarnContext(ctx, "payment record update deferred: it is applied from the pending updates until it lands",
				"pspReference", u.PSPReference, "update", string(u.Kind), "attempts", attempts, "err", cause.Error())
			if s.metrics != nil {
				s.metrics.RecordUpdateDeferred(string(u.Kind))
			}
			return nil
		}
		failed = fmt.Errorf("%w; deferring it failed too: %w", failed, err)
	}
	if s.metrics != nil {
		s.metrics.RecordUpdateLost(string(u.Kind))
	}
	return failed
}

// recordAfter starts the record update u after the upstream's answer
// alongside the rest of the request (c.Wait).
func (s *Service) recordAfter(ctx context.Context, c *Call, u RecordUpdate, first *Payment) {
	if first != nil {
		last := *first
		first = &last
	}
	c.record(ctx, func(ctx context.Context) error { return s.settle(ctx, u, first) })
}
