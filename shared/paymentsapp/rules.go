package paymentsapp

import (
	"net/mail"
	"regexp"
	"strings"

	"golang.org/x/text/language"

	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
)

// Field bounds (docs/openapi.yaml, docs/limits.md).
const (
	maxReference  = 80
	maxReturnURL  = 8000
	maxLineItems  = 100
	maxBlocked    = 50
	maxAdditional = 50
	maxURL        = 2000
	maxName       = 80
	maxEmail      = 320
	maxPhone      = 32
)

// Fields set by the service on every upstream call; a caller sending them
// gets 400 "set by the service" (docs/upstream.md).
var serverControlled = []string{
	"merchantAccount", "splits", "metadata", "store", "platformChargebackLogic", "applicationInfo",
}

var localePattern = regexp.MustCompile(`^[a-z]{2,3}([-_][A-Z]{2})?$`)

// The rules of fields by their class of text (jsonin.Identifier,
// jsonin.FreeText; docs/security.md): identifiers (references,
// shopperReference, ids, payment method types) refuse controls, invisible
// format characters and noncharacters; free text (names, descriptions,
// and every other string passed on to the upstream, inside the component's
// objects included) refuses the bidirectional overrides, embeddings and
// isolates. Made once: a rule built per request would allocate.
var (
	referenceRules  = []jsonin.Str{jsonin.MaxLen(maxReference), jsonin.NotEmpty, jsonin.Identifier}
	methodTypeRules = []jsonin.Str{jsonin.LenBetween(1, 50), jsonin.Identifier}
	storedIDRules   = []jsonin.Str{jsonin.LenBetween(1, 64), jsonin.Identifier}
	nameRules       = []jsonin.Str{jsonin.MaxLen(maxName), jsonin.NotEmpty, jsonin.NoControl, jsonin.FreeText}
	returnURLRules  = []jsonin.Str{jsonin.MaxLen(maxReturnURL), jsonin.AbsoluteURL, jsonin.FreeText}
	urlRules        = []jsonin.Str{jsonin.MaxLen(maxURL), jsonin.AbsoluteURL, jsonin.FreeText}
)

// readAmount reads a required Amount. zeroOK allows value 0.
func readAmount(o *jsonin.Obj, name string, zeroOK bool) (money.Amount, bool) {
	a := o.Object(name, true)
	if a == nil {
		return money.Amount{}, false
	}
	lo := int64(1)
	if zeroOK {
		lo = 0
	}
	v, okV := a.Int("value", true, lo, money.MaxValue)
	c, okC := a.String("currency", true, currencyRule)
	a.Done()
	return money.Amount{Value: v, Currency: c}, okV && okC
}

func currencyRule(s string) string {
	if !money.ValidCurrency(s) {
		return "must be an ISO 4217 currency code, e.g. EUR"
	}
	return ""
}

// shopperReferenceRule: 3–256 characters, no '@', not an e-mail address.
func shopperReferenceRule(s string) string {
	if n := len([]rune(s)); n < 3 || n > 256 {
		return "must be 3 to 256 characters"
	}
	if strings.Contains(s, "@") {
		return "must not be an e-mail address or contain '@'"
	}
	return jsonin.Identifier(s)
}

func emailRule(s string) string {
	if len(s) > maxEmail {
		return "must be at most 320 characters"
	}
	if plainAddress(s) {
		return "" // what net/mail accepts as it is, without its allocations
	}
	if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
		return "must be an e-mail address"
	}
	return jsonin.FreeText(s) // net/mail takes any non-ASCII text
}

// plainAddress reports whether s is local@domain with both parts ASCII
// dot-atoms (RFC 5322): the common form, which net/mail accepts unchanged.
// Anything else (quoted local parts, domain literals, non-ASCII) is left
// to net/mail.
func plainAddress(s string) bool {
	at := strings.IndexByte(s, '@')
	return at > 0 && dotAtom(s[:at]) && dotAtom(s[at+1:])
}

// dotAtom reports whether s is atext characters separated by single dots.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		case strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func localeRule(s string) string {
	if !localePattern.MatchString(s) {
		return "must be a locale such as en-US"
	}
	return ""
}

func countryRule(s string) string {
	if len(s) != 2 || strings.ToUpper(s) != s {
		return "must be an ISO 3166-1 alpha-2 country code, e.g. NL"
	}
	r, err := language.ParseRegion(s)
	if err != nil || !r.IsCountry() {
		return "must be an ISO 3166-1 alpha-2 country code, e.g. NL"
	}
	return ""
}

func phoneRule(s string) string {
	if len(s) > maxPhone {
		return "must be at most 32 characters"
	}
	for _, r := range s {
		if !(r == '+' || r == ' ' || r == '-' || r == '(' || r == ')' || (r >= '0' && r <= '9')) {
			return "must be a phone number (digits, spaces, + - ( ))"
		}
	}
	return ""
}

// recurringModels are the upstream's recurringProcessingModel values.
var recurringModels = []string{"CardOnFile", "Subscription", "UnscheduledCardOnFile"}

func readName(o *jsonin.Obj, name string) *payments.Name {
	n := o.Object(name, false)
	if n == nil {
		return nil
	}
	// The platform needs both names (it refuses one alone with a 422).
	first, _ := n.String("firstName", true, nameRules...)
	last, _ := n.String("lastName", true, nameRules...)
	n.Done()
	return &payments.Name{FirstName: first, LastName: last}
}

func readLineItems(o *jsonin.Obj) []payments.LineItem {
	items := o.Objects("lineItems", false, maxLineItems)
	if items == nil {
		return nil
	}
	out := make([]payments.LineItem, 0, len(items))
	optInt := func(li *jsonin.Obj, name string, hi int64) *int64 {
		if v, ok := li.Int(name, false, 0, hi); ok {
			return &v
		}
		return nil
	}
	for _, li := range items {
		var it payments.LineItem
		it.Quantity, _ = li.Int("quantity", true, 1, 1_000_000)
		it.Description, _ = li.String("description", false, jsonin.MaxLen(127), jsonin.FreeText)
		it.ID, _ = li.String("id", false, jsonin.MaxLen(50), jsonin.Identifier)
		it.AmountExcludingTax = optInt(li, "amountExcludingTax", money.MaxValue)
		it.AmountIncludingTax = optInt(li, "amountIncludingTax", money.MaxValue)
		it.TaxAmount = optInt(li, "taxAmount", money.MaxValue)
		it.TaxPercentage = optInt(li, "taxPercentage", 1_000_000)
		it.ProductURL, _ = li.String("productUrl", false, urlRules...)
		it.ImageURL, _ = li.String("imageUrl", false, urlRules...)
		li.Done()
		out = append(out, it)
	}
	return out
}
