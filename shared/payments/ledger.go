package payments

import (
	"slices"
	"strconv"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/tenant"
)

// A payment is a ledger (docs/payments.md): a head — who the payment
// belongs to, what its request and authorisation said, and the cached fold
// of its entries — and one entry per operation started by the merchant or
// the platform (each capture, refund, reversal, amount update), keyed by
// its own reference. An entry collects facts as they arrive, in any order
// and each at most once: requested (by the merchant, with its amount),
// answered (by the platform: received, refused, or no definitive answer)
// and notified (the platform's notification: success or failure). What the
// API shows is one pure function of the head and the entries (the fold, below);
// the head's Totals are that fold, cached and written in the same
// transaction as the entry, so the money guards are conditions on them.
// Every fact also goes to the payment's timeline, which is read a page at a
// time.

// Head is a payment's identity, its request's and authorisation's facts,
// and the cached fold of its entries. It holds no shopper personal data.
type Head struct {
	PSPReference string
	MerchantID   string
	SiteID       string
	Reference    string
	Source       Source
	SessionID    string
	// Amount is the requested amount; its Currency is empty while the
	// amount is unknown (a payment known only from a bare details answer:
	// the platform guards its operations until the AUTHORISATION brings
	// it).
	Amount             money.Amount
	ShopperReference   string
	StoredMethodID     string
	StorePaymentMethod bool
	// AuthorisationType is "PreAuth" for a pre-authorisation (the only kind
	// of payment whose amount can be updated), else empty.
	AuthorisationType string
	CaptureMode       tenant.CaptureMode
	PaymentMethod     string
	RefusalReason     string
	// Auth is what the platform said of the authorisation.
	Auth Auth
	// Authorised is the authorised amount: the authorisation's, then the
	// latest amount update the platform accepted (AmountUpdates).
	Authorised    int64
	AmountUpdates []AmountUpdate
	// Totals is the fold of the entries (and of the authorisation), cached.
	Totals Totals
	// Seq counts the notifications applied to the payment: each one's
	// sequence number, carried in its webhooks.
	Seq int64
	// BoundTo is set on a pending record (PendingKey) once its payment's
	// pspReference is known.
	BoundTo string
	// AuthorisedAt is when the authorisation became Authorised (its
	// answer's or AUTHORISATION's arrival): AuthorisationExpiry counts from
	// it. ExpiryNoticeDone: the pre-expiry notice was sent, or is not
	// needed any more (the head leaves the expiry index, ExpiryDue).
	AuthorisedAt     time.Time
	ExpiryNoticeDone bool
	CreatedAt        time.Time
	UpdatedAt        time.Time
	// Version counts the head's writes (conditional writes compare it).
	Version int64
}

// Auth is what the platform said of a payment's authorisation: its
// answer's result code, and its AUTHORISATION (and OFFER_CLOSED)
// notification.
type Auth struct {
	ResultCode string // the answer's resultCode ("" before any)
	// Notified is the AUTHORISATION notification's outcome (nil: none yet).
	Notified *bool
	// Expired: OFFER_CLOSED reported the offer closed unfinished.
	Expired bool
}

// AmountUpdate is an amount update the platform accepted (or refused
// after accepting): the amount it set and the authorised amount before.
type AmountUpdate struct {
	Ref    string
	Amount int64
	From   int64
	Failed bool
}

// Totals is the fold of a payment's entries: additive sums, so a fact's
// effect is a delta, written with it. Capturable and Refundable are what
// the money guards check: authorised − captured − captures in flight, and
// captured − refunded − refunds in flight (reversals aside, which end both;
// a released remainder ends what is capturable).
type Totals struct {
	Captured              int64
	CapturesInFlight      int64
	Refunded              int64
	RefundsInFlight       int64
	Capturable            int64
	Refundable            int64
	Reversals             int64 // accepted reversals
	ReversalsInFlight     int64
	AmountUpdatesInFlight int64
	// Released counts the accepted facts that released the uncaptured
	// remainder (a cancel, EXPIRE, a capture that takes the only partial
	// capture); Expired counts the EXPIREs among them. The remainder's
	// amount is not summed: it depends on what was captured when it went,
	// and each entry contributes by its own facts alone.
	Released        int64
	Expired         int64
	CancelsInFlight int64
}

// Add returns t + d.
func (t Totals) Add(d Totals) Totals {
	return Totals{
		Captured: t.Captured + d.Captured, CapturesInFlight: t.CapturesInFlight + d.CapturesInFlight,
		Refunded: t.Refunded + d.Refunded, RefundsInFlight: t.RefundsInFlight + d.RefundsInFlight,
		Capturable: t.Capturable + d.Capturable, Refundable: t.Refundable + d.Refundable,
		Reversals: t.Reversals + d.Reversals, ReversalsInFlight: t.ReversalsInFlight + d.ReversalsInFlight,
		AmountUpdatesInFlight: t.AmountUpdatesInFlight + d.AmountUpdatesInFlight,
		Released:              t.Released + d.Released, Expired: t.Expired + d.Expired, CancelsInFlight: t.CancelsInFlight + d.CancelsInFlight,
	}
}

// Sub returns t − d.
func (t Totals) Sub(d Totals) Totals {
	return t.Add(Totals{
		Captured: -d.Captured, CapturesInFlight: -d.CapturesInFlight, Refunded: -d.Refunded,
		RefundsInFlight: -d.RefundsInFlight, Capturable: -d.Capturable, Refundable: -d.Refundable,
		Reversals: -d.Reversals, ReversalsInFlight: -d.ReversalsInFlight, AmountUpdatesInFlight: -d.AmountUpdatesInFlight,
		Released: -d.Released, Expired: -d.Expired, CancelsInFlight: -d.CancelsInFlight,
	})
}

// State of a payment (docs/payments.md).
type State string

// States of a payment: its authorisation's outcome, then what its
// operations made of it.
const (
	StateAuthorised        State = "Authorised"
	StateRefused           State = "Refused"
	StateCancelled         State = "Cancelled"
	StatePartiallyCaptured State = "PartiallyCaptured"
	StateCaptured          State = "Captured"
	StatePartiallyRefunded State = "PartiallyRefunded"
	StateRefunded          State = "Refunded"
	StateExpired           State = "Expired"
)

// States of a payment on its way, and the failed one: the platform's
// resultCode values, shown as they are.
const (
	statePending          State = "Pending"
	stateReceived         State = "Received"
	stateRedirectShopper  State = "RedirectShopper"
	stateChallengeShopper State = "ChallengeShopper"
	stateIdentifyShopper  State = "IdentifyShopper"
	stateError            State = "Error"
)

// Source says how a payment was started.
type Source string

// Sources, also sent to merchants as additionalData.paymentSource.
const (
	SourceAdvanced Source = "advanced"
	SourceSessions Source = "sessions"
)

// Authorisation types (additionalData.authorisationType): only a
// pre-authorisation's amount can be updated.
const (
	KeyAuthorisationType   = "authorisationType"
	AuthorisationPreAuth   = "PreAuth"
	AuthorisationFinalAuth = "FinalAuth"
)

// OpKind is what an entry's operation does.
type OpKind string

// Operation kinds.
const (
	OpCapture      OpKind = "capture"
	OpRefund       OpKind = "refund"
	OpReversal     OpKind = "reversal"
	OpAmountUpdate OpKind = "amount-update"
	// OpCancel cancels the uncaptured remainder (the platform's /cancels,
	// CANCELLATION, TECHNICAL_CANCEL): what was captured stays refundable.
	OpCancel OpKind = "cancel"
	// opExpiry is the platform's EXPIRE: the remainder expired, as a
	// cancel does.
	opExpiry OpKind = "expiry"
	// opDispute holds a dispute's notifications (keyed by the dispute's
	// pspReference): facts that move no money until the disputes work
	// gives them their rule.
	opDispute OpKind = "dispute"
	// opNotice holds informational notifications: kept, no money.
	opNotice OpKind = "notice"
)

// Outcome is the platform's answer to an operation's call.
type Outcome string

// Outcomes.
const (
	Received Outcome = "received" // accepted; its notification follows
	Refused  Outcome = "refused"  // a definitive refusal: nothing happened
	// Unknown: no definitive answer (5xx, timeout, a lost answer): the
	// operation is in flight until the same call, repeated with the same
	// idempotency key, gets the platform's answer (recover.go).
	Unknown Outcome = "unknown"
)

// Entry is one operation of a payment and the facts known of it.
type Entry struct {
	// Ref is the operation's reference: the service's (op_…) for one the
	// merchant started, the platform's modification pspReference for one
	// known only from its notification.
	Ref  string
	Kind OpKind
	// Requested is the merchant's request (nil: not the service's).
	Requested *Request
	// Answered is the platform's answer to the call (nil: none yet).
	Answered *Answer
	// Notices are the platform's notifications of the operation, each
	// applied once (by code and outcome).
	Notices []Notice
	// Modification is the operation's pspReference at the platform (from
	// its answer, or Ref for one known only from its notification).
	Modification string
	// MergedInto: this entry, made from a notification before the answer
	// that names its operation was recorded, was merged into that
	// operation's entry, which now holds its notices (it counts for
	// nothing any more).
	MergedInto string
	// Covered: a capture of an auto-capture payment known only from its
	// notification, which the authorisation counted already.
	Covered bool
	// Releases: a capture that, once it succeeds, releases the uncaptured
	// remainder (the merchant account takes one partial capture only).
	Releases bool
	Version  int64
}

// Request is what the merchant asked an operation for, kept so that a
// call whose answer was lost can be repeated exactly (recover.go).
type Request struct {
	Amount money.Amount // not for reversals
	// Reference is the merchant's reference of the operation.
	Reference string
	// UpstreamKey is the Idempotency-Key the call was sent with (every
	// operation's call has one: the merchant's, derived, or the service's).
	UpstreamKey string
	// Account and Splits are the rest of the call: the merchant account
	// and the split instructions it carried.
	Account string
	Splits  []Split
	// From is the authorised amount an amount update started from.
	From      int64
	LineItems []LineItem // captures and refunds
	At        time.Time
}

// Answer is the platform's answer to an operation's call.
type Answer struct {
	Outcome Outcome
	Reason  string // a refusal's message
	At      time.Time
}

// Notice is one of the platform's notifications of an operation.
type Notice struct {
	Code    string // CAPTURE, CAPTURE_FAILED, REFUND, …
	Success bool
	Amount  money.Amount
	Reason  string
	Seq     int64 // its sequence number in the payment (Head.Seq)
	At      time.Time
}

// Fact is one line of a payment's timeline: something the service
// learned about it, in the order it did.
type Fact struct {
	// ID names the fact: the same fact written again has the same ID.
	ID     string
	At     time.Time
	Kind   string // e.g. payment, capture-requested, capture, AUTHORISATION, REFUND
	Origin string // OriginAPI or OriginNotification
	// PSPReference is the operation's pspReference at the platform (or
	// the service's operation reference until it has one).
	PSPReference string
	Amount       *money.Amount
	Success      *bool
	Detail       string
}

// Origins of facts.
const (
	OriginAPI          = "api"
	OriginNotification = "notification"
)

// AwaitsAnswer reports whether e is an operation the service started whose
// call has no definitive answer recorded: nothing, or no definitive one
// (Unknown).
func (e Entry) AwaitsAnswer() bool {
	return e.Requested != nil && e.MergedInto == "" && (e.Answered == nil || e.Answered.Outcome == Unknown)
}

// Recoverable reports whether Recover can learn e's answer by repeating
// its call: it awaits its answer and its call carried an idempotency key.
// Stores index such entries (by Requested.At): InFlight lists them.
func (e Entry) Recoverable() bool { return e.AwaitsAnswer() && e.Requested.UpstreamKey != "" }

// hasNotice reports whether e has a notice of code with the outcome.
func (e Entry) hasNotice(code string, success, recapture bool) bool {
	return slices.ContainsFunc(e.Notices, func(n Notice) bool {
		return n.Code == code && n.Success == success && n.recapture() == recapture
	})
}

// recapture reports the notice of a capture the platform made again after
// it failed (Notification.Recapture).
func (n Notice) recapture() bool {
	return Notification{EventCode: n.Code, Success: strconv.FormatBool(n.Success), Reason: n.Reason}.Recapture()
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// clone copies the parts of h a change may modify in place.
func (h Head) clone() Head {
	h.AmountUpdates = append([]AmountUpdate(nil), h.AmountUpdates...)
	if h.Auth.Notified != nil {
		ok := *h.Auth.Notified
		h.Auth.Notified = &ok
	}
	return h
}

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
			t := Totals{Captured: a, Capturable: -a, Refundable: a}
			if e.Releases {
				t.Released = 1
			}
			return t
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
	case OpCancel:
		switch e.status() {
		case opSucceeded:
			return Totals{Released: 1}
		case opInFlight:
			return Totals{CancelsInFlight: 1}
		}
	case opExpiry:
		if e.status() == opSucceeded {
			return Totals{Released: 1, Expired: 1}
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

// failed reports a definitive refusal or a failure notified — unless the
// platform captured again what failed (a recapture notice, in whichever
// order the two arrive: the platform recaptures only after the failure).
func (e Entry) failed() bool {
	if e.Answered != nil && e.Answered.Outcome == Refused {
		return true
	}
	return slices.ContainsFunc(e.Notices, failureNotice) && !slices.ContainsFunc(e.Notices, Notice.recapture)
}

// failureNotice reports a notice of the operation's failure, as its
// code's row says (codes.go): a *_FAILED code whatever its success field,
// a result code with success false, or an undo (REFUNDED_REVERSED) with
// success true.
func failureNotice(n Notice) bool {
	switch CodeOf(n.Code).role {
	case roleFailure:
		return true
	case roleResult:
		return !n.Success
	case roleUndo:
		return n.Success
	}
	return false
}

// succeededNotice reports a result code notified with success.
func (e Entry) succeededNotice() bool {
	return slices.ContainsFunc(e.Notices, func(n Notice) bool { return n.Success && CodeOf(n.Code).role == roleResult })
}

// confirmed reports a refund's confirming notification (REFUND,
// REFUND_WITH_DATA): a refund accepted by the platform stays in flight
// until then.
func (e Entry) confirmed() bool {
	return slices.ContainsFunc(e.Notices, func(n Notice) bool { return n.Success && CodeOf(n.Code).confirms })
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
	case "", statePending, stateReceived, stateRedirectShopper, stateChallengeShopper, stateIdentifyShopper:
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
// uncaptured payment) and ends captures and refunds alike; a released
// remainder (a cancel, EXPIRE, the only partial capture) ends captures,
// and what was captured stays refundable.
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
	case t.Released > 0 && t.Captured == 0 && t.CapturesInFlight == 0 && t.Expired > 0:
		v.State = StateExpired
	case t.Released > 0 && t.Captured == 0 && t.CapturesInFlight == 0:
		v.State = StateCancelled
	case t.Refunded > 0 && t.Refunded >= t.Captured:
		v.State = StateRefunded
	case t.Refunded > 0:
		v.State = StatePartiallyRefunded
	case t.Captured > 0 && (t.Captured >= h.Authorised || t.Released > 0):
		v.State = StateCaptured
	case t.Captured > 0:
		v.State = StatePartiallyCaptured
	}
	if t.Released > 0 {
		v.Capturable = 0
	}
	return v
}
