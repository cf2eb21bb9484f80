package simulator

import (
	"strings"
)

// Behaviour is what a test card or holder name makes the simulator do.
type Behaviour string

// Behaviours of the test tables.
const (
	// Authorise: resultCode Authorised (unless the holder name forces
	// another outcome).
	Authorise Behaviour = "Authorised"
	// Challenge: resultCode ChallengeShopper with a threeDS2 challenge action.
	Challenge Behaviour = "ChallengeShopper"
	// Redirect: resultCode RedirectShopper with a redirect action.
	Redirect Behaviour = "RedirectShopper"
	// Refuse: a refusal (resultCode and reason from the holder-name table).
	Refuse Behaviour = "Refused"
	// Receive: resultCode Received; finished later by ResolvePending.
	Receive Behaviour = "Received"
	// Pend: resultCode Pending; finished later by ResolvePending.
	Pend Behaviour = "Pending"
	// Fail500: HTTP 500 with an upstream error body; nothing is created.
	Fail500 Behaviour = "HTTP 500"
	// Hang: the request is held until the client gives up (or HangTimeout),
	// then processed as Authorised: a retry with the same Idempotency-Key
	// gets 409 "704" while it hangs and the stored response afterwards.
	Hang Behaviour = "Hang"
)

// TestCard is one row of the documented test-card table (README.md).
type TestCard struct {
	Number      string // digits only
	Brand       string // upstream brand code: visa, mc, amex, …
	CVC         string
	ExpiryMonth string
	ExpiryYear  string
	Behaviour   Behaviour
	Note        string
}

// TestCards returns the documented test cards. Any other Luhn-valid number
// is authorised too (its brand derived from the prefix).
func TestCards() []TestCard {
	return []TestCard{
		{"4111111111111111", "visa", "737", "03", "2030", Authorise, "Visa, authorised"},
		{"5555555555554444", "mc", "737", "03", "2030", Authorise, "Mastercard, authorised"},
		{"2222400070000005", "mc", "737", "03", "2030", Authorise, "Mastercard 2-series, authorised"},
		{"370000000000002", "amex", "7373", "03", "2030", Authorise, "American Express, authorised"},
		{"6011601160116611", "discover", "737", "03", "2030", Authorise, "Discover, authorised"},
		{"5454545454545454", "mc", "737", "03", "2030", Challenge, "3DS2 Mastercard: threeDS2 challenge (password \"password\")"},
		{"4917610000000000", "visa", "737", "03", "2030", Challenge, "3DS2 Visa: threeDS2 challenge (password \"password\")"},
		{"371449635398431", "amex", "7373", "03", "2030", Challenge, "3DS2 Amex: threeDS2 challenge (password \"password\")"},
		{"4212345678901237", "visa", "737", "03", "2030", Redirect, "3DS1-style redirect (method GET) to the simulated issuer page"},
		{"4000000000000507", "visa", "737", "03", "2030", Fail500, "upstream answers HTTP 500 (no payment created)"},
		{"4000000000000994", "visa", "737", "03", "2030", Hang, "upstream hangs past the client timeout, then authorises"},
	}
}

// HolderNameOutcome is one row of the holder-name table: paymentMethod.holderName
// forces the outcome of a card payment (after any 3DS2 challenge or redirect).
type HolderNameOutcome struct {
	HolderName        string
	Behaviour         Behaviour
	ResultCode        string
	RefusalReason     string
	RefusalReasonCode string
	// CaptureFails makes later captures report CAPTURE then CAPTURE_FAILED.
	CaptureFails bool
	// RefundFails makes later refunds report CANCEL_OR_REFUND then REFUND_FAILED.
	RefundFails bool
}

// HolderNameOutcomes returns the holder-name table (matched
// case-insensitively). These follow the upstream's test values.
func HolderNameOutcomes() []HolderNameOutcome {
	refused := func(name, reason, code string) HolderNameOutcome {
		return HolderNameOutcome{HolderName: name, Behaviour: Refuse, ResultCode: "Refused", RefusalReason: reason, RefusalReasonCode: code}
	}
	return []HolderNameOutcome{
		{HolderName: "APPROVED", Behaviour: Authorise, ResultCode: "Authorised"},
		{HolderName: "UNKNOWN", Behaviour: Refuse, ResultCode: "Error", RefusalReason: "Unknown", RefusalReasonCode: "0"},
		refused("DECLINED", "Refused", "2"),
		refused("REFERRAL", "Referral", "3"),
		{HolderName: "ERROR", Behaviour: Refuse, ResultCode: "Error", RefusalReason: "Acquirer Error", RefusalReasonCode: "4"},
		refused("BLOCK_CARD", "Blocked Card", "5"),
		refused("CARD_EXPIRED", "Expired Card", "6"),
		refused("INVALID_AMOUNT", "Invalid Amount", "7"),
		refused("INVALID_CARD", "Invalid Card Number", "8"),
		refused("ISSUER_UNAVAILABLE", "Issuer Unavailable", "9"),
		refused("NOT_SUPPORTED", "Not supported", "10"),
		refused("NOT_3D_AUTHENTICATED", "3D Not Authenticated", "11"),
		refused("NOT_ENOUGH_BALANCE", "Not enough balance", "12"),
		refused("ACQUIRER_FRAUD", "Acquirer Fraud", "14"),
		{HolderName: "CANCELLED", Behaviour: Refuse, ResultCode: "Cancelled", RefusalReason: "Cancelled", RefusalReasonCode: "15"},
		{HolderName: "SHOPPER_CANCELLED", Behaviour: Refuse, ResultCode: "Cancelled", RefusalReason: "Shopper Cancelled", RefusalReasonCode: "16"},
		refused("FRAUD", "FRAUD", "20"),
		refused("TRANSACTION_NOT_PERMITTED", "Transaction Not Permitted", "23"),
		refused("CVC_DECLINED", "CVC Declined", "24"),
		refused("RESTRICTED_CARD", "Restricted Card", "25"),
		refused("DECLINED_NON_GENERIC", "Declined Non Generic", "27"),
		refused("WITHDRAWAL_AMOUNT_EXCEEDED", "Withdrawal amount exceeded", "28"),
		refused("WITHDRAWAL_COUNT_EXCEEDED", "Withdrawal count exceeded", "29"),
		refused("ISSUER_SUSPECTED_FRAUD", "Issuer Suspected Fraud", "31"),
		refused("AVS_DECLINED", "AVS Declined", "32"),
		{HolderName: "PENDING", Behaviour: Receive, ResultCode: "Received"},
		{HolderName: "RESULT_PENDING", Behaviour: Pend, ResultCode: "Pending"},
		{HolderName: "capture failed", Behaviour: Authorise, ResultCode: "Authorised", CaptureFails: true},
		{HolderName: "refund failed", Behaviour: Authorise, ResultCode: "Authorised", RefundFails: true},
		{HolderName: "SIM_500", Behaviour: Fail500},
		{HolderName: "SIM_TIMEOUT", Behaviour: Hang},
	}
}

// lookupHolderName returns the holder-name row for name, if any.
func lookupHolderName(name string) (HolderNameOutcome, bool) {
	name = strings.TrimSpace(name)
	if name == "" {
		return HolderNameOutcome{}, false
	}
	for _, o := range HolderNameOutcomes() {
		if strings.EqualFold(o.HolderName, name) {
			return o, true
		}
	}
	return HolderNameOutcome{}, false
}

// lookupCard returns the test-card row for number, if any.
func lookupCard(number string) (TestCard, bool) {
	for _, c := range TestCards() {
		if c.Number == number {
			return c, true
		}
	}
	return TestCard{}, false
}

// luhnValid reports whether number (digits only) passes the Luhn check.
func luhnValid(number string) bool {
	sum := 0
	for i := range len(number) {
		d := int(number[len(number)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// brandOf derives the upstream brand code from a card number's prefix.
func brandOf(number string) string {
	if c, ok := lookupCard(number); ok {
		return c.Brand
	}
	p := func(prefixes ...string) bool {
		for _, x := range prefixes {
			if strings.HasPrefix(number, x) {
				return true
			}
		}
		return false
	}
	switch {
	case p("34", "37"):
		return "amex"
	case p("4"):
		return "visa"
	case p("51", "52", "53", "54", "55", "22", "23", "24", "25", "26", "27"):
		return "mc"
	case p("6011", "65", "644", "645", "646", "647", "648", "649"):
		return "discover"
	case p("35"):
		return "jcb"
	case p("36", "38", "300", "301", "302", "303", "304", "305"):
		return "diners"
	case p("62"):
		return "cup"
	case p("50", "56", "57", "58", "6"):
		return "maestro"
	}
	return "card"
}

// onlyDigits reports whether s is non-empty and all ASCII digits.
func onlyDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
