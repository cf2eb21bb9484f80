package records

import (
	"time"

	"github.com/yp/paysvc/shared/payments"
)

// Session is a stored checkout-session record.
type Session struct {
	Format             Format    `json:"format"`
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
