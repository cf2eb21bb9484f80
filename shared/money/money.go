// Package money holds the Amount type and currency rules shared by requests,
// records and the upstream client.
package money

import (
	"golang.org/x/text/currency"
)

// MaxValue is the largest amount accepted, in minor units (DESIGN 3.3).
const MaxValue int64 = 1_000_000_000_000

// Amount is a value in minor units of a currency.
type Amount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

// ValidCurrency reports whether code is an ISO 4217 currency code (three
// upper-case letters known to the maintained x/text table).
func ValidCurrency(code string) bool {
	if len(code) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if code[i] < 'A' || code[i] > 'Z' {
			return false
		}
	}
	_, err := currency.ParseISO(code)
	return err == nil
}
