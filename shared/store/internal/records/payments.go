package records

import (
	"maps"
	"time"

	"github.com/yp/paysvc/shared/payments"
)

// Payment is a stored payment record.
type Payment struct {
	PSPReference     string           `json:"pspReference"`
	MerchantID       string           `json:"merchantId"`
	SiteID           string           `json:"siteId"`
	Reference        string           `json:"reference,omitempty"`
	Source           string           `json:"source"`
	SessionID        string           `json:"sessionId,omitempty"`
	Amount           Amount           `json:"amount"`
	AuthorisedValue  int64            `json:"authorisedValue"`
	CapturedValue    int64            `json:"capturedValue"`
	RefundedValue    int64            `json:"refundedValue"`
	State            string           `json:"state"`
	ResultCode       string           `json:"resultCode,omitempty"`
	RefusalReason    string           `json:"refusalReason,omitempty"`
	PaymentMethod    string           `json:"paymentMethod,omitempty"`
	ShopperReference string           `json:"shopperReference,omitempty"`
	StoredMethodID   string           `json:"storedPaymentMethodId,omitempty"`
	Reservations     map[string]int64 `json:"reservations,omitempty"`
	History          []Event          `json:"history"`
	Version          int64            `json:"version"`
	CreatedAt        time.Time        `json:"createdAt"`
	UpdatedAt        time.Time        `json:"updatedAt"`
}

// Event is a stored entry of a payment's history.
type Event struct {
	At           time.Time `json:"at"`
	Kind         string    `json:"kind"`
	Origin       string    `json:"origin"`
	PSPReference string    `json:"pspReference,omitempty"`
	Amount       *Amount   `json:"amount,omitempty"`
	Success      *bool     `json:"success,omitempty"`
	Detail       string    `json:"detail,omitempty"`
}

// FromPayment converts a payment to its stored form.
func FromPayment(p payments.Payment) Payment {
	r := Payment{
		PSPReference: p.PSPReference, MerchantID: p.MerchantID, SiteID: p.SiteID, Reference: p.Reference,
		Source: string(p.Source), SessionID: p.SessionID, Amount: fromAmount(p.Amount),
		AuthorisedValue: p.AuthorisedValue, CapturedValue: p.CapturedValue, RefundedValue: p.RefundedValue,
		State: string(p.State), ResultCode: p.ResultCode, RefusalReason: p.RefusalReason, PaymentMethod: p.PaymentMethod,
		ShopperReference: p.ShopperReference, StoredMethodID: p.StoredMethodID, Reservations: maps.Clone(p.Reservations),
		Version: p.Version, CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(),
	}
	if p.History != nil {
		r.History = make([]Event, len(p.History))
		for i, e := range p.History {
			r.History[i] = Event{
				At: e.At.UTC(), Kind: e.Kind, Origin: e.Origin, PSPReference: e.PSPReference,
				Amount: fromAmountPtr(e.Amount), Success: e.Success, Detail: e.Detail,
			}
		}
	}
	return r
}

// ToPayment converts a stored payment to the domain's.
func (r Payment) ToPayment() payments.Payment {
	p := payments.Payment{
		PSPReference: r.PSPReference, MerchantID: r.MerchantID, SiteID: r.SiteID, Reference: r.Reference,
		Source: payments.Source(r.Source), SessionID: r.SessionID, Amount: r.Amount.toAmount(),
		AuthorisedValue: r.AuthorisedValue, CapturedValue: r.CapturedValue, RefundedValue: r.RefundedValue,
		State: payments.State(r.State), ResultCode: r.ResultCode, RefusalReason: r.RefusalReason, PaymentMethod: r.PaymentMethod,
		ShopperReference: r.ShopperReference, StoredMethodID: r.StoredMethodID, Reservations: r.Reservations,
		Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.History != nil {
		p.History = make([]payments.Event, len(r.History))
		for i, e := range r.History {
			p.History[i] = payments.Event{
				At: e.At, Kind: e.Kind, Origin: e.Origin, PSPReference: e.PSPReference,
				Amount: e.Amount.toAmountPtr(), Success: e.Success, Detail: e.Detail,
			}
		}
	}
	return p
}

// Session is a stored checkout-session record.
type Session struct {
	ID                 string    `json:"id"`
	MerchantID         string    `json:"merchantId"`
	SiteID             string    `json:"siteId"`
	Reference          string    `json:"reference"`
	Amount             Amount    `json:"amount"`
	ShopperReference   string    `json:"shopperReference,omitempty"`
	StorePaymentMethod bool      `json:"storePaymentMethod,omitempty"`
	CreatedAt          time.Time `json:"createdAt"`
	ExpiresAt          time.Time `json:"expiresAt"`
}

// FromSession converts a session to its stored form.
func FromSession(s payments.Session) Session {
	return Session{
		ID: s.ID, MerchantID: s.MerchantID, SiteID: s.SiteID, Reference: s.Reference, Amount: fromAmount(s.Amount),
		ShopperReference: s.ShopperReference, StorePaymentMethod: s.StorePaymentMethod,
		CreatedAt: s.CreatedAt.UTC(), ExpiresAt: s.ExpiresAt.UTC(),
	}
}

// ToSession converts a stored session to the domain's.
func (r Session) ToSession() payments.Session {
	return payments.Session{
		ID: r.ID, MerchantID: r.MerchantID, SiteID: r.SiteID, Reference: r.Reference, Amount: r.Amount.toAmount(),
		ShopperReference: r.ShopperReference, StorePaymentMethod: r.StorePaymentMethod,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
	}
}
