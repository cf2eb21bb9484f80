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
	At           time.Time     `json:"at"`
	Kind         string        `json:"kind"`   // e.g. "payment", "details", "capture", "AUTHORISATION"
	Origin       string        `json:"origin"` // "api" or "notification"
	PSPReference string        `json:"pspReference,omitempty"`
	Amount       *money.Amount `json:"amount,omitempty"`
	Success      *bool         `json:"success,omitempty"`
	Detail       string        `json:"detail,omitempty"`
}

// Payment is the service's record of one payment, keyed by pspReference.
type Payment struct {
	PSPReference     string       `json:"pspReference"`
	MerchantID       string       `json:"merchantId"`
	SiteID           string       `json:"siteId"`
	Reference        string       `json:"reference,omitempty"`
	Source           Source       `json:"source"`
	SessionID        string       `json:"sessionId,omitempty"`
	Amount           money.Amount `json:"amount"`          // requested amount
	AuthorisedValue  int64        `json:"authorisedValue"` // current authorised amount (after adjustments)
	CapturedValue    int64        `json:"capturedValue"`
	RefundedValue    int64        `json:"refundedValue"`
	State            State        `json:"state"`
	ResultCode       string       `json:"resultCode,omitempty"`
	RefusalReason    string       `json:"refusalReason,omitempty"`
	PaymentMethod    string       `json:"paymentMethod,omitempty"`
	ShopperReference string       `json:"shopperReference,omitempty"`
	StoredMethodID   string       `json:"storedPaymentMethodId,omitempty"`
	// Reservations are amounts of captures sent upstream but not yet
	// answered, by operation reference, so a retried capture counts once.
	Reservations map[string]int64 `json:"reservations,omitempty"`
	// RefundReservations are refunds in flight: by operation reference
	// while the upstream call runs, then by the refund's own pspReference
	// until its REFUND or REFUND_FAILED notification (refunds.go).
	RefundReservations map[string]int64 `json:"refundReservations,omitempty"`
	History            []Event          `json:"history"`
	Version            int64            `json:"version"`
	CreatedAt          time.Time        `json:"createdAt"`
	UpdatedAt          time.Time        `json:"updatedAt"`
}

// Session is the service's record of a checkout session it created, used to
// route the session payment's notifications to the merchant.
type Session struct {
	ID                 string       `json:"id"`
	MerchantID         string       `json:"merchantId"`
	SiteID             string       `json:"siteId"`
	Reference          string       `json:"reference"`
	Amount             money.Amount `json:"amount"`
	ShopperReference   string       `json:"shopperReference,omitempty"`
	StorePaymentMethod bool         `json:"storePaymentMethod,omitempty"`
	CreatedAt          time.Time    `json:"createdAt"`
	ExpiresAt          time.Time    `json:"expiresAt"`
}

// Store is the port that keeps sessions and payment records.
type Store interface {
	// PutSession writes a session (overwrites one with the same id).
	PutSession(ctx context.Context, s Session) error
	// GetSession returns store.ErrNotFound for an unknown or expired session.
	GetSession(ctx context.Context, id string) (Session, error)
	// GetPayment returns store.ErrNotFound for an unknown pspReference.
	GetPayment(ctx context.Context, pspReference string) (Payment, error)
	// SavePayment writes p if the stored record's version is prevVersion
	// (prevVersion 0: no record may exist). p.Version must be prevVersion+1.
	// store.ErrConflict when the condition fails.
	SavePayment(ctx context.Context, p Payment, prevVersion int64) error
}
