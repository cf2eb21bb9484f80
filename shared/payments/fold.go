package payments

import (
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/tenant"
)

// The fold: what a payment shows is a pure function of its head's facts
// and its entries (docs/payments.md has the rules as a table). Each entry
// contributes to the Totals by its facts alone (Contribution), so a fact's
// effect on the cached Totals is the difference of its entry's
// contribution before and after; View derives the state and the amounts
// the API shows from the head.

// Contribution is what entry e adds to its payment's Totals.
func (e Entry) Contribution() Totals {
	if e.MergedInto != "" || e.Covered {
		return Totals{}
	}
	a := e.amount()
	switch e.Kind {
	case OpCapture:
		switch e.status() {
		case opSucceeded:
			return Totals{Captured: a, Capturable: -a, Refundable: a}
		case opInFlight:
			return Totals{CapturesInFlight: a, Capturable: -a}
		}
	case OpRefund:
		switch e.status() {
		case opSucceeded:
			if e.confirmed() {
				return Totals{Refunded: a, Refundable: -a}
			}
			return Totals{RefundsInFlight: a, Refundable: -a} // accepted: in flight until its REFUND
		case opInFlight:
			return Totals{RefundsInFlight: a, Refundable: -a}
		}
	case OpReversal:
		switch e.status() {
		case opSucceeded:
			return Totals{Reversals: 1}
		case opInFlight:
			return Totals{ReversalsInFlight: 1}
		}
	case OpAmountUpdate:
		if e.status() == opInFlight {
			return Totals{AmountUpdatesInFlight: 1}
		}
	}
	return Totals{}
}

// opStatus is where an operation stands.
type opStatus int

const (
	opNone      opStatus = iota // nothing that counts (a refusal, a failure)
	opInFlight                  // requested, no definitive answer yet
	opSucceeded                 // accepted by the platform and not reported failed
)

// status folds an entry's facts: a failure notified or a refusal ends it;
// an acceptance (answered received, or a success notified) counts it;
// otherwise a request is in flight.
func (e Entry) status() opStatus {
	switch {
	case e.failed():
		return opNone
	case e.Answered != nil && e.Answered.Outcome == Received, e.succeededNotice():
		return opSucceeded
	case e.Requested != nil:
		return opInFlight
	}
	return opNone
}

// failed reports a definitive refusal or a failure notified.
func (e Entry) failed() bool {
	if e.Answered != nil && e.Answered.Outcome == Refused {
		return true
	}
	for _, n := range e.Notices {
		if failureNotice(n) {
			return true
		}
	}
	return false
}

// failureNotice reports a notice of the operation's failure: a *_FAILED
// code whatever its success field, or a success code with success false.
func failureNotice(n Notice) bool {
	switch n.Code {
	case EventCaptureFailed, EventRefundFailed:
		return true
	}
	return !n.Success
}

// succeededNotice reports a success notified (and no failure).
func (e Entry) succeededNotice() bool {
	for _, n := range e.Notices {
		if !failureNotice(n) {
			return true
		}
	}
	return false
}

// confirmed reports a refund's REFUND notification (a refund accepted by
// the platform stays in flight until then).
func (e Entry) confirmed() bool {
	for _, n := range e.Notices {
		if n.Code == EventRefund && n.Success {
			return true
		}
	}
	return false
}

// amount is the operation's amount: the merchant's request's, else the
// one its notification reports.
func (e Entry) amount() int64 {
	if e.Requested != nil && e.Requested.Amount.Currency != "" {
		return e.Requested.Amount.Value
	}
	for _, n := range e.Notices {
		if n.Amount.Currency != "" {
			return n.Amount.Value
		}
	}
	return 0
}

// Fold is the Totals of a head's authorisation and of its entries: what
// the cached Totals must equal (the tests hold every store to it).
func Fold(h Head, entries []Entry) Totals {
	t := h.authContribution()
	for _, e := range entries {
		t = t.Add(e.Contribution())
	}
	return t
}

// authContribution is what the authorisation adds: the authorised amount
// is capturable (an auto-capture merchant's is captured at once).
func (h Head) authContribution() Totals {
	if h.AuthStatus() != StateAuthorised {
		return Totals{}
	}
	if h.CaptureMode == tenant.CaptureAuto {
		return Totals{Captured: h.Authorised, Refundable: h.Authorised}
	}
	return Totals{Capturable: h.Authorised}
}

// AuthStatus is the state of the authorisation alone: its notification
// when there is one, else the answer's result code (Expired once its offer
// closed unfinished).
func (h Head) AuthStatus() State {
	a := h.Auth
	switch {
	case a.Notified != nil && *a.Notified:
		return StateAuthorised
	case a.Notified != nil:
		return StateRefused
	}
	s := State(a.ResultCode)
	if a.Expired && unfinished(s) {
		return StateExpired
	}
	return s
}

// unfinished reports states of a payment still waiting for its outcome.
func unfinished(s State) bool {
	switch s {
	case "", StatePending, StateReceived, StateRedirectShopper, StateChallengeShopper, StateIdentifyShopper:
		return true
	}
	return false
}

// AmountKnown reports whether the payment's amount is known (not a
// payment known only from a bare details answer).
func (h Head) AmountKnown() bool { return h.Amount.Currency != "" }

// View is what the API shows of a payment: a pure function of its head.
type View struct {
	State State
	// Amount is the payment's amount: the requested one, or the one the
	// latest amount update the platform accepted set.
	Amount           money.Amount
	Authorised       int64
	Captured         int64
	Refunded         int64
	CapturesInFlight int64
	RefundsInFlight  int64
	Capturable       int64
	Refundable       int64
}

// View derives the payment's state and amounts from its head: a reversal
// the platform accepted refunds everything captured (or cancels an
// uncaptured payment) and ends captures and refunds alike.
func (h Head) View() View {
	t := h.Totals
	v := View{State: h.AuthStatus(), Amount: h.Amount, Authorised: h.Authorised, Captured: t.Captured, Refunded: t.Refunded,
		CapturesInFlight: t.CapturesInFlight, RefundsInFlight: t.RefundsInFlight,
		Capturable: max(t.Capturable, 0), Refundable: max(t.Refundable, 0)}
	for _, u := range h.AmountUpdates {
		if !u.Failed {
			v.Amount.Value = u.Amount
		}
	}
	if v.State != StateAuthorised {
		v.Capturable = 0
		return v
	}
	switch {
	case t.Reversals > 0 && t.Captured > 0:
		v.State, v.Refunded, v.RefundsInFlight, v.Capturable, v.Refundable = StateRefunded, t.Captured, 0, 0, 0
	case t.Reversals > 0:
		v.State, v.Capturable, v.Refundable = StateCancelled, 0, 0
	case t.Refunded > 0 && t.Refunded >= t.Captured:
		v.State = StateRefunded
	case t.Refunded > 0:
		v.State = StatePartiallyRefunded
	case t.Captured > 0 && t.Captured >= h.Authorised:
		v.State = StateCaptured
	case t.Captured > 0:
		v.State = StatePartiallyCaptured
	}
	return v
}
