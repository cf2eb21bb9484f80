// Package records holds the stored formats of the payment and idempotency
// records, owned by the store adapters (shared/store/dynamo and
// shared/store/embedded write the same JSON), and their conversions to and
// from the domain types: a storage change never changes a domain type, and
// back. Conversions to the stored form put every time in UTC and never
// modify the caller's values.
//
// The formats are those the adapters wrote when they stored the domain
// structs' JSON directly, byte for byte, so existing data reads unchanged
// (TestStoredFormatUnchanged).
package records

import (
	"time"

	"github.com/yp/paysvc/shared/money"
)

// Amount is a stored money amount.
type Amount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

func fromAmount(a money.Amount) Amount { return Amount{Value: a.Value, Currency: a.Currency} }

func (a Amount) toAmount() money.Amount { return money.Amount{Value: a.Value, Currency: a.Currency} }

func fromAmountPtr(a *money.Amount) *Amount {
	if a == nil {
		return nil
	}
	r := fromAmount(*a)
	return &r
}

func (a *Amount) toAmountPtr() *money.Amount {
	if a == nil {
		return nil
	}
	m := a.toAmount()
	return &m
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
