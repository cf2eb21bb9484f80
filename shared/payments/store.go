package payments

import (
	"context"
	"time"

	"github.com/yp/paysvc/shared/money"
)

// State of a payment record (docs/payments.md).
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

// Event is one entry of a payment's append-only history.
type Event struct {
	At           time.Time
	Kind         string // e.g. "payment", "details", "capture", "AUTHORISATION"
	Origin       string // "api" or "notification"
	PSPReference string
	Amount       *money.Amount
	Success      *bool
	Detail       string
}

// Payment is the service's record of one payment, keyed by pspReference.
type Payment struct {
	PSPReference     string
	MerchantID       string
	SiteID           string
	Reference        string
	Source           Source
	SessionID        string
	Amount           money.Amount // requested amount, as an accepted amount update set it
	AuthorisedValue  int64        // current authorised amount (after adjustments)
	CapturedValue    int64
	RefundedValue    int64
	State            State
	ResultCode       string
	RefusalReason    string
	PaymentMethod    string
	ShopperReference string
	StoredMethodID   string
	// StorePaymentMethod: the request asked to store the payment method.
	StorePaymentMethod bool
	// AuthorisationType is "PreAuth" for a pre-authorisation (the only kind
	// of payment whose amount can be updated), else empty.
	AuthorisationType string
	// BoundTo is set on a pending record (PendingKey) once its payment's
	// pspReference is known: the record under that pspReference is the
	// payment's from then on.
	BoundTo string
	// Reservations are amounts of captures sent upstream but not yet
	// answered, by operation reference, so a retried capture counts once.
	Reservations map[string]int64
	// AmountUpdate is the amount update sent upstream and not yet
	// answered. While it is in flight, captures and other amount updates of
	// the payment wait for it, so the record applies amount changes in the
	// order the upstream did.
	AmountUpdate *InFlight
	// RefundReservations are refunds in flight: by operation reference
	// while the upstream call runs, then by the refund's own pspReference
	// until its REFUND or REFUND_FAILED notification (refunds.go).
	RefundReservations map[string]int64
	History            []Event
	Version            int64
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// InFlight marks an operation sent upstream and not yet answered.
type InFlight struct {
	Op    string // the operation reference (opReference)
	Since time.Time
}

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

// Store is the port that keeps sessions and payment records.
type Store interface {
	// PutSession writes a session (overwrites one with the same id).
	PutSession(ctx context.Context, s Session) error
	// GetSession returns storeerr.ErrNotFound for an unknown or expired session.
	GetSession(ctx context.Context, id string) (Session, error)
	// GetPayment returns storeerr.ErrNotFound for an unknown pspReference.
	GetPayment(ctx context.Context, pspReference string) (Payment, error)
	// SavePayment writes p if the stored record's version is prevVersion
	// (prevVersion 0: no record may exist). p.Version must be prevVersion+1.
	// storeerr.ErrConflict when the condition fails.
	SavePayment(ctx context.Context, p Payment, prevVersion int64) error
}
