package payments

import (
	"context"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
)

// State of a payment (docs/payments.md).
type State string

// States. Result-code states mirror the upstream's resultCode values.
const (
	StateAuthorised        State = "Authorised"
	StateRefused           State = "Refused"
	StatePending           State = "Pending"
	StateReceived          State = "Received"
	StateRedirectShopper   State = "RedirectShopper"
	StateChallengeShopper  State = "ChallengeShopper"
	StateIdentifyShopper   State = "IdentifyShopper"
	StateCancelled         State = "Cancelled"
	StateError             State = "Error"
	StatePartiallyCaptured State = "PartiallyCaptured"
	StateCaptured          State = "Captured"
	StatePartiallyRefunded State = "PartiallyRefunded"
	StateRefunded          State = "Refunded"
	StateExpired           State = "Expired"
)

// Source says how a payment was started.
type Source string

// Sources, also sent to merchants as additionalData.paymentSource.
const (
	SourceAdvanced Source = "advanced"
	SourceSessions Source = "sessions"
)

// Session is the service's record of a checkout session it created, used to
// route the session payment's notifications to the merchant.
type Session struct {
	ID                 string
	MerchantID         string
	SiteID             string
	Reference          string
	Amount             money.Amount
	ShopperReference   string
	StorePaymentMethod bool
	CreatedAt          time.Time
	ExpiresAt          time.Time
}

// Store is the port that keeps sessions and payments, each payment as a
// ledger (ledger.go): its head, its entries and its timeline.
type Store interface {
	// PutSession writes a session (overwrites one with the same id).
	PutSession(ctx context.Context, s Session) error
	// GetSession returns storeerr.ErrNotFound for an unknown or expired session.
	GetSession(ctx context.Context, id string) (Session, error)
	// GetPayment returns payment psp's head; storeerr.ErrNotFound for an
	// unknown (or expired) one.
	GetPayment(ctx context.Context, psp string) (Head, error)
	// GetEntries returns those of the entries refs of payment psp that
	// exist, in any order.
	GetEntries(ctx context.Context, psp string, refs ...string) ([]Entry, error)
	// Timeline returns at most limit facts of payment psp after cursor
	// ("": from the first), oldest first, and the cursor of the last one
	// returned when more follow ("" otherwise).
	Timeline(ctx context.Context, psp, cursor string, limit int) ([]Fact, string, error)
	// Write makes w, atomically: all of it or nothing.
	// storeerr.ErrConflict when one of its conditions fails; with
	// w.Claim, *idempotency.Taken (which matches storeerr.ErrConflict)
	// when the claim's key is held, whatever else failed.
	Write(ctx context.Context, w Write) error
}

// Write is one atomic change of a payment: its head (put whole, or its
// Totals moved by a delta), entries and timeline facts.
type Write struct {
	PSP string
	// Put, when set, is the whole head, written if the stored head's
	// version is Put.Version−1 (Put.Version 1: no head may exist). Else
	// Delta is added to the stored head's Totals if it meets Expect (its
	// Version then moves on by one, Seq by SeqStep, UpdatedAt to At).
	Put     *Head
	Delta   Totals
	SeqStep int64
	Expect  Expect
	At      time.Time
	// Entries are written each if its stored version is Version−1
	// (Version 1: none may exist).
	Entries []Entry
	// Claim, when set, is the merchant's Idempotency-Key claim
	// (idempotency.Service.Prepare), taken in the same atomic write: an
	// operation's request and its claim are one step.
	Claim *idempotency.Record
	// Result, when set, is the merchant's answer to the operation, stored
	// in the same atomic write (its lease must still be held, else the
	// write fails with storeerr.ErrConflict): an operation's record and
	// its answer are one step (Call.Commit).
	Result *idempotency.Completion
	// Facts are appended to the timeline; the same fact written again
	// (same ID and time) is stored once. (The embedded store keeps only
	// the first of an ID whatever its time; DynamoDB keys facts by time,
	// so the domain writes a fact again only at the same time.)
	Facts []Fact
}

// Expect is what a Delta write requires of the stored head, besides
// existing. Zero fields require nothing.
type Expect struct {
	// MerchantID and SiteID must be the head's.
	MerchantID string
	SiteID     string
	// Authorised: the authorisation's state (Head.AuthStatus) is
	// StateAuthorised.
	Authorised bool
	// NoReversal: no reversal accepted or in flight.
	NoReversal bool
	// NoAmountUpdate: no amount update in flight.
	NoAmountUpdate bool
	// PreAuth: the payment is a pre-authorisation; Uncaptured: nothing
	// captured or being captured.
	PreAuth    bool
	Uncaptured bool
	// Currency, Capturable and Refundable, when set, apply once the
	// payment's amount is known (Head.AmountKnown): its currency, and
	// minimums of the Totals'. Until then the platform is the guard.
	Currency   string
	Capturable *int64
	Refundable *int64
	// Seq, when set, is the head's Seq.
	Seq *int64
}

// Meets reports whether head h meets e (what a store checks).
func (e Expect) Meets(h Head) bool {
	t := h.Totals
	switch {
	case e.MerchantID != "" && h.MerchantID != e.MerchantID, e.SiteID != "" && h.SiteID != e.SiteID:
		return false
	case e.Authorised && h.AuthStatus() != StateAuthorised:
		return false
	case e.NoReversal && (t.Reversals != 0 || t.ReversalsInFlight != 0):
		return false
	case e.NoAmountUpdate && t.AmountUpdatesInFlight != 0:
		return false
	case e.PreAuth && h.AuthorisationType != AuthorisationPreAuth, e.Uncaptured && (t.Captured != 0 || t.CapturesInFlight != 0):
		return false
	case e.Seq != nil && h.Seq != *e.Seq:
		return false
	case !h.AmountKnown():
		return true
	case e.Currency != "" && h.Amount.Currency != e.Currency:
		return false
	case e.Capturable != nil && t.Capturable < *e.Capturable, e.Refundable != nil && t.Refundable < *e.Refundable:
		return false
	}
	return true
}

// Apply returns head h after Delta write w (what a store writes).
func (w Write) Apply(h Head) Head {
	h.Totals = h.Totals.Add(w.Delta)
	h.Seq += w.SeqStep
	h.Version++
	if w.At.After(h.UpdatedAt) {
		h.UpdatedAt = w.At
	}
	return h
}
