package simulator

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/upstream"
)

// Payment states kept by the simulator.
const (
	StateAuthorised        = "Authorised"
	StateRefused           = "Refused"
	StateError             = "Error"
	StateCancelled         = "Cancelled"
	StateReceived          = "Received"
	StatePending           = "Pending"
	StateRedirectShopper   = "RedirectShopper"
	StateChallengeShopper  = "ChallengeShopper"
	StateIdentifyShopper   = "IdentifyShopper"
	StatePartiallyCaptured = "PartiallyCaptured"
	StateCaptured          = "Captured"
	StateRefunded          = "Refunded"
	StateOfferClosed       = "OfferClosed"
)

// Modification kinds.
const (
	ModCapture      = "capture"
	ModCancel       = "cancel"
	ModRefund       = "refund"
	ModAmountUpdate = "amountUpdate"
)

// card is the card data of a payment or stored payment method.
type card struct {
	Number      string
	ExpiryMonth string
	ExpiryYear  string
	HolderName  string
	Brand       string
}

func (c card) last4() string { return c.Number[max(0, len(c.Number)-4):] }

// payment is the simulator's record of one payment.
type payment struct {
	PSP                string
	MerchantAccount    string
	Reference          string
	Amount             money.Amount // as requested
	Authorised         int64        // current authorised value
	Captured           int64
	Refunded           int64
	State              string
	ResultCode         string
	RefusalReason      string
	RefusalReasonCode  string
	MethodType         string // paymentMethod.type
	Card               *card
	ShopperReference   string
	ShopperInteraction string
	RecurringModel     string
	Metadata           map[string]string
	Splits             []upstream.Split
	ReturnURL          string
	SessionID          string
	StoreRequested     bool
	StoredID           string
	TokenCreated       bool // the token is new (else it already existed)
	CaptureFails       bool
	RefundFails        bool
	Forced             *HolderNameOutcome // outcome applied after an action
	Frictionless       bool               // 3DS2 without a challenge
	NativeThreeDS      bool               // the request asked for native 3DS2
	PreAuth            bool               // authorised as a pre-authorisation
	AutoCapture        bool               // captured at authorisation (capturedAtAuthorisation)
	RemainderClosed    bool               // a capture of a single-capture account released the rest
	HostedSession      bool               // started on the hosted checkout page: its action page completes it
	Request            json.RawMessage
	CreatedAt          time.Time
	Modifications      []ModificationState
	// Released: the uncaptured remainder expired or was cancelled
	// (PlatformEvent): nothing more is captured, captured money stays
	// refundable.
	Released             bool
	PendingActionID      string `json:"pendingActionId,omitempty"`
	AuthorisationEmitted bool   `json:"authorisationEmitted,omitempty"`
}

// methodLabel is the payment method name used in notifications.
func (p *payment) methodLabel() string {
	if p.Card != nil {
		return p.Card.Brand
	}
	return p.MethodType
}

// ModificationState is one modification of a payment.
type ModificationState struct {
	PSPReference string
	Kind         string // capture, cancel, refund, amountUpdate
	Reference    string
	Amount       money.Amount
	// Success is false for modifications rejected asynchronously or failed
	// later (CAPTURE_FAILED, REFUND_FAILED).
	Success   bool
	Reason    string
	CreatedAt time.Time
}

// PaymentState is a snapshot of a payment for tests and the /_sim hooks.
type PaymentState struct {
	PSPReference          string              `json:"pspReference"`
	MerchantAccount       string              `json:"merchantAccount"`
	Reference             string              `json:"reference"`
	Amount                money.Amount        `json:"amount"`
	AuthorisedValue       int64               `json:"authorisedValue"`
	CapturedValue         int64               `json:"capturedValue"`
	RefundedValue         int64               `json:"refundedValue"`
	State                 string              `json:"state"`
	ResultCode            string              `json:"resultCode"`
	RefusalReason         string              `json:"refusalReason,omitempty"`
	PaymentMethod         string              `json:"paymentMethod"`
	ShopperReference      string              `json:"shopperReference,omitempty"`
	ShopperInteraction    string              `json:"shopperInteraction,omitempty"`
	StoredPaymentMethodID string              `json:"storedPaymentMethodId,omitempty"`
	SessionID             string              `json:"sessionId,omitempty"`
	Metadata              map[string]string   `json:"metadata,omitempty"`
	Splits                []upstream.Split    `json:"splits,omitempty"`
	Modifications         []ModificationState `json:"modifications,omitempty"`
	Released              bool                `json:"released,omitempty"`
	// RemainderClosed: a capture released the rest of the authorisation
	// (the account takes no multiple partial captures): nothing more can
	// be captured.
	RemainderClosed bool `json:"remainderClosed,omitempty"`
	// Request is the body of the /payments request (nil for session payments).
	Request   json.RawMessage `json:"request,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

func (p *payment) snapshot() PaymentState {
	return PaymentState{
		PSPReference: p.PSP, MerchantAccount: p.MerchantAccount, Reference: p.Reference, Amount: p.Amount,
		AuthorisedValue: p.Authorised, CapturedValue: p.Captured, RefundedValue: p.Refunded,
		State: p.State, ResultCode: p.ResultCode, RefusalReason: p.RefusalReason, PaymentMethod: p.methodLabel(),
		ShopperReference: p.ShopperReference, ShopperInteraction: p.ShopperInteraction, StoredPaymentMethodID: p.StoredID,
		SessionID: p.SessionID, Metadata: maps.Clone(p.Metadata), Splits: slices.Clone(p.Splits),
		Modifications: slices.Clone(p.Modifications), Request: slices.Clone(p.Request), CreatedAt: p.CreatedAt,
		Released:        p.Released,
		RemainderClosed: p.RemainderClosed,
	}
}

// storedMethod is a token (stored payment method) of a shopper.
type storedMethod struct {
	ID               string
	MerchantAccount  string
	ShopperReference string
	Card             card
	RecurringModel   string
	CreatedAt        time.Time
}

// action is an outstanding redirect or threeDS2 challenge of a payment.
type action struct {
	ID          string
	PSP         string
	Kind        string // "fingerprint", "threeDS2" (challenge) or "redirect"
	Seq         int    `json:"seq"` // creation order
	PaymentData string
	CreatedAt   time.Time
	Done        bool
}

// session is a checkout session created by POST /sessions.
type session struct {
	ID        string
	Data      string
	Req       sessionIn
	ExpiresAt time.Time
	CreatedAt time.Time
	Payments  []string // pspReferences of attempts
	Completed bool     // an attempt was authorised (or received)
}

// tokenKey scopes tokens to a merchant account and shopper.
type tokenKey struct{ merchantAccount, shopperReference string }
