package money

import "testing"

func TestValidCurrency(t *testing.T) {
	tests := []struct {
		code string
		want bool
	}{
		{"EUR", true}, {"USD", true}, {"JPY", true}, {"GBP", true}, {"CHF", true},
		{"", false}, {"eur", false}, {"EU", false}, {"EURO", false}, {"ZZZ", false},
		// ISO 4217 codes that are not currencies.
		{"XXX", false}, {"XTS", false}, {"XAU", false}, {"XAG", false}, {"XPD", false},
		{"XPT", false}, {"XDR", false}, {"XBA", false}, {"XBB", false}, {"XBC", false},
		{"XBD", false}, {"XSU", false}, {"XUA", false},
		// Real currencies with an X: the CFA and East Caribbean francs/dollars.
		{"XOF", true}, {"XAF", true}, {"XCD", true}, {"XPF", true},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			if got := ValidCurrency(tt.code); got != tt.want {
				t.Errorf("ValidCurrency(%q) = %v, want %v", tt.code, got, tt.want)
			}
		})
	}
}
