package payments

import (
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
// API shows is one pure function of the head and the entries (fold.go);
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
	BoundTo   string
	CreatedAt time.Time
	UpdatedAt time.Time
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
// captured − refunded − refunds in flight (reversals aside, which end both).
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
}

// Add returns t + d.
func (t Totals) Add(d Totals) Totals {
	return Totals{
		Captured: t.Captured + d.Captured, CapturesInFlight: t.CapturesInFlight + d.CapturesInFlight,
		Refunded: t.Refunded + d.Refunded, RefundsInFlight: t.RefundsInFlight + d.RefundsInFlight,
		Capturable: t.Capturable + d.Capturable, Refundable: t.Refundable + d.Refundable,
		Reversals: t.Reversals + d.Reversals, ReversalsInFlight: t.ReversalsInFlight + d.ReversalsInFlight,
		AmountUpdatesInFlight: t.AmountUpdatesInFlight + d.AmountUpdatesInFlight,
	}
}

// Sub returns t − d.
func (t Totals) Sub(d Totals) Totals {
	return t.Add(Totals{
		Captured: -d.Captured, CapturesInFlight: -d.CapturesInFlight, Refunded: -d.Refunded,
		RefundsInFlight: -d.RefundsInFlight, Capturable: -d.Capturable, Refundable: -d.Refundable,
		Reversals: -d.Reversals, ReversalsInFlight: -d.ReversalsInFlight, AmountUpdatesInFlight: -d.AmountUpdatesInFlight,
	})
}

// OpKind is what an entry's operation does.
type OpKind string

// Operation kinds.
const (
	OpCapture      OpKind = "capture"
	OpRefund       OpKind = "refund"
	OpReversal     OpKind = "reversal"
	OpAmountUpdate OpKind = "amount-update"
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
	Version int64
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
	LineItems []LineItem // refunds
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
func (e Entry) hasNotice(code string, success bool) bool {
	for _, n := range e.Notices {
		if n.Code == code && n.Success == success {
			return true
		}
	}
	return false
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
