// Package money holds the Amount type and currency rules shared by requests,
// records and the upstream client.
package money

import (
	"golang.org/x/text/currency"
)

// MaxValue is the largest amount accepted, in minor units (docs/limits.md).
const MaxValue int64 = 1_000_000_000_000

// Amount is a value in minor units of a currency.
type Amount struct {
	Value    int64  `json:"value"`
	Currency string `json:"currency"`
}

// notCurrencies are the ISO 4217 codes that name no currency a shopper can
// pay in: precious metals, bond-market units, the SDR, the ADB and SUCRE
// units, and the testing and "no currency" codes. x/text knows them, so they
// are refused here.
var notCurrencies = map[string]bool{
	"XXX": true, "XTS": true, // no currency; reserved for testing
	"XAU": true, "XAG": true, "XPD": true, "XPT": true, // gold, silver, palladium, platinum
	"XDR": true,                                        // special drawing right
	"XBA": true, "XBB": true, "XBC": true, "XBD": true, // European bond-market units
	"XSU": true, // SUCRE
	"XUA": true, // ADB unit of account
}

// ValidCurrency reports whether code is an ISO 4217 currency code (three
// upper-case letters known to the maintained x/text table) that names a
// currency, not a metal, a unit of account or the testing code.
func ValidCurrency(code string) bool {
	if len(code) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if code[i] < 'A' || code[i] > 'Z' {
			return false
		}
	}
	if notCurrencies[code] {
		return false
	}
	_, err := currency.ParseISO(code)
	return err == nil
}
