package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/money"
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

// Record update kinds. An operation's answer is its kind's update with
// the outcome as Status ("received", "refused" or "unknown"); the
// *-release kinds are the refusals an earlier version wrote.
const (
	UpdateCapture        UpdateKind = "capture"
	UpdateCaptureRelease UpdateKind = "capture-release"
	UpdateRefund         UpdateKind = "refund"
	UpdateRefundRelease  UpdateKind = "refund-release"
	UpdateReversal       UpdateKind = "reversal"
	UpdateAmount         UpdateKind = "amount-update"
	UpdateAmountRelease  UpdateKind = "amount-update-release"
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

// updateKind is the update kind of an operation's answer.
func updateKind(k OpKind) UpdateKind {
	switch k {
	case OpCapture:
		return UpdateCapture
	case OpRefund:
		return UpdateRefund
	case OpReversal:
		return UpdateReversal
	}
	return UpdateAmount
}

// answerOf is the operation kind and the answer an update records.
func (u RecordUpdate) answerOf() (OpKind, Answer) {
	a := Answer{Outcome: Outcome(u.Status), Reason: u.Reason, At: u.At}
	switch a.Outcome {
	case Received, Refused, Unknown:
	default: // an earlier version's: "received", or a release
		a.Outcome = Received
	}
	kind := map[UpdateKind]OpKind{UpdateCapture: OpCapture, UpdateCaptureRelease: OpCapture, UpdateRefund: OpRefund,
		UpdateRefundRelease: OpRefund, UpdateReversal: OpReversal, UpdateAmount: OpAmountUpdate, UpdateAmountRelease: OpAmountUpdate}[u.Kind]
	switch u.Kind {
	case UpdateCaptureRelease, UpdateRefundRelease, UpdateAmountRelease:
		a.Outcome = Refused
	}
	return kind, a
}

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
	// Status is the upstream's answer: an operation's Outcome, a
	// payment's resultCode.
	Status string
	// Reason is a refusal's message.
	Reason string
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
	case UpdateCapture, UpdateRefund, UpdateAmount, UpdateReversal:
		if u.Op == "" {
			return missing("operation reference")
		}
		if _, a := u.answerOf(); a.Outcome == Received && u.Modification == "" {
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

// ApplyRecordUpdate applies u to its payment, idempotently: an update
// applied before changes nothing. Conflicts are retried; other store
// errors are returned (retry later); ErrUpdateRefused when it can never
// apply.
func ApplyRecordUpdate(ctx context.Context, st Store, u RecordUpdate) error {
	return applyRecordUpdate(ctx, st, u, known{})
}

// known is what a request wrote or read of the records an update applies
// to: the update's first attempt starts from it instead of reading them
// (an attempt after a conflict reads). Zero: nothing known.
type known struct {
	// entry is an operation's entry as the request wrote it.
	entry *Entry
	// head is the payment's head as read after a details answer (Version
	// 0: none stored), or while an amount update's call ran; pending its
	// pending record, looked up after a details answer.
	head    *Head
	pending *pendingRead
	// createFirst: the head was not read (nor is it known): the record's
	// first write creates it, and only a failed create reads it.
	createFirst bool
}

// pendingRead is the outcome of pendingFor.
type pendingRead struct {
	head  Head
	found bool
}

// applyRecordUpdate is ApplyRecordUpdate starting from what k holds.
func applyRecordUpdate(ctx context.Context, st Store, u RecordUpdate, k known) error {
	if err := u.Validate(); err != nil {
		return err
	}
	switch u.Kind {
	case UpdatePayment, UpdateDetails:
		return recordResult(ctx, st, u, k)
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
	kind, a := u.answerOf()
	var err error
	if kind == OpAmountUpdate {
		err = answerAmountUpdate(ctx, st, u.PSPReference, u.Op, u.Modification, a, k)
	} else {
		err = answerEntry(ctx, st, u.PSPReference, u.Op, u.Modification, a, k.entry)
	}
	if err != nil {
		return fmt.Errorf("%s update of payment %s: %w", u.Kind, u.PSPReference, err)
	}
	return nil
}

// settle applies u, a record write after the upstream's answer, starting
// from first (the record as the request last saw it, or nil). The upstream
// has acted, so it is not given up: the merchant hanging up does not
// cancel it, conflicts are retried (maxSettleAttempts), store failures for
// s.recordRetry with backoff; then it is deferred to the PendingUpdates
// port, which applies it until it lands. Only when that fails too is an
// error returned: the update is lost and the upstream's notification is
// the only repair.
func (s *Service) settle(ctx context.Context, u RecordUpdate, k known) error {
	if ctx.Done() != nil { // not detached yet (Call.record's context is)
		ctx = context.WithoutCancel(ctx)
	}
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := applyRecordUpdate(ctx, s.store, u, k)
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
		k = known{} // re-read the record
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
// alongside the rest of the request (c.Wait), starting from k.
func (s *Service) recordAfter(ctx context.Context, c *Call, u RecordUpdate, k known) {
	if k.entry != nil {
		last := *k.entry
		k.entry = &last
	}
	if k.head != nil {
		h := *k.head
		k.head = &h
	}
	c.records.Add(1)
	go (&settlement{ctx: context.WithoutCancel(ctx), s: s, c: c, u: u, k: k}).run()
}
