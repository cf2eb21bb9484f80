// Package records holds the stored formats of the records the store
// adapters keep (shared/store/dynamo and shared/store/embedded write the
// same JSON), and their conversions to and from the domain types: a
// storage change never changes a domain type, and back. Conversions to the
// stored form put every time in UTC and never modify the caller's values.
//
// Every record carries its format version (Format); TestStoredFormatUnchanged
// pins each record's bytes, so a change of format is made on purpose.
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
