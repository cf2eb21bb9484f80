package paymentsapp

import (
	"math/rand/v2"
	"net/mail"
	"testing"
)

// The fast path of emailRule accepts only what net/mail accepts unchanged,
// and emailRule decides every address as net/mail alone would.
func TestPlainAddressAgreesWithNetMail(t *testing.T) {
	netMail := func(s string) bool {
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s
	}
	agree := func(s string) {
		t.Helper()
		if plainAddress(s) && !netMail(s) {
			t.Fatalf("%q: fast path accepts what net/mail refuses", s)
		}
		if (emailRule(s) == "") != netMail(s) {
			t.Fatalf("emailRule(%q) = %q, net/mail accepts: %v", s, emailRule(s), netMail(s))
		}
	}
	cases := []struct {
		s     string
		plain bool
	}{
		{"shopper@example.com", true},
		{"first.last+tag@sub.example.co.uk", true},
		{"a@b", true},
		{"o'neil!#$%&*/=?^_`{|}~-@example.com", true},
		{".a@example.com", false},
		{"a.@example.com", false},
		{"a..b@example.com", false},
		{"a@example..com", false},
		{"a@.example.com", false},
		{"a@example.com.", false},
		{"@example.com", false},
		{"a@", false},
		{"a@b@c", false},
		{"a b@example.com", false},
		{`"quoted"@example.com`, false},
		{"a@[192.0.2.1]", false},
		{"jöran@example.com", false},
		{"Name <a@example.com>", false},
		{"", false},
	}
	for _, c := range cases {
		if got := plainAddress(c.s); got != c.plain {
			t.Errorf("plainAddress(%q) = %v, want %v", c.s, got, c.plain)
		}
		agree(c.s)
	}
	// Random strings over the characters that matter.
	const alphabet = "ab.@-+\"' <>[]_é"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		agree(string(b))
	}
}
