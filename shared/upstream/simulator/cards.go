package simulator

import (
	"strings"

	"github.com/yp/paysvc/shared/upstream"
)

// Behaviour is what a test card or holder name makes the simulator do.
type Behaviour string

// Behaviours of the test tables.
const (
	// Authorise: resultCode Authorised (unless the holder name forces
	// another outcome).
	Authorise Behaviour = "Authorised"
	// Challenge: 3-D Secure 2 with a challenge (password "password"). By
	// default ChallengeShopper with a threeDS2 challenge action; with
	// Options.WebThreeDS2 the platform's web flow (see README.md).
	Challenge Behaviour = "ChallengeShopper"
	// Frictionless: 3-D Secure 2 without a challenge. By default Authorised
	// at once; with Options.WebThreeDS2 a fingerprint (native) or redirect
	// step, then Authorised.
	Frictionless Behaviour = "Frictionless"
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
		{"4000000000002701", "visa", "737", "03", "2030", Frictionless, "3DS2 Visa: frictionless (no challenge; a simulator card, the platform documents none)"},
		{"4212345678901237", "visa", "737", "03", "2030", Redirect, "3DS1-style redirect (method GET) to the simulated issuer page"},
		{"4000000000000507", "visa", "737", "03", "2030", Fail500, "upstream answers HTTP 500 (no payment created)"},
		{"4000000000000994", "visa", "737", "03", "2030", Hang, "upstream hangs past the client timeout, then authorises"},
	}
}

// HolderNameOutcome is one row of the holder-name table: paymentMethod.holderName
// (or additionalData.RequestedTestAcquirerResponseCode) forces the outcome of
// a card payment (after any 3DS2 challenge or redirect).
type HolderNameOutcome struct {
	HolderName string
	// AcquirerResponseCode is the additionalData.RequestedTestAcquirerResponseCode
	// value that forces the same outcome ("" for simulator-only rows).
	AcquirerResponseCode string
	Behaviour            Behaviour
	ResultCode           string
	RefusalReason        string
	RefusalReasonCode    string
	// CaptureFails makes later captures report CAPTURE then CAPTURE_FAILED.
	CaptureFails bool
	// RefundFails makes later refunds report CANCEL_OR_REFUND then REFUND_FAILED.
	RefundFails bool
}

// HolderNameOutcomes returns the holder-name table (matched
// case-insensitively). The rows with an AcquirerResponseCode are the
// platform's documented test values (holder name, response code, result
// code and refusal reason as the platform documents them); the others are
// the platform's failed-modification values and simulator extensions.
func HolderNameOutcomes() []HolderNameOutcome {
	row := func(name, code, result, reason string) HolderNameOutcome {
		o := HolderNameOutcome{HolderName: name, AcquirerResponseCode: code, Behaviour: Refuse, ResultCode: result, RefusalReason: reason, RefusalReasonCode: code}
		if result == upstream.ResultAuthorised {
			o.Behaviour, o.RefusalReason, o.RefusalReasonCode = Authorise, "", ""
		}
		if result == upstream.ResultReceived {
			o.Behaviour, o.RefusalReason, o.RefusalReasonCode = Receive, "", ""
		}
		return o
	}
	return []HolderNameOutcome{
		row("UNKNOWN", "0", "Error", "Unknown"),
		row("APPROVED", "1", "Authorised", ""),
		row("DECLINED", "2", "Refused", "Refused"),
		row("REFERRAL", "3", "Refused", "Referral"),
		row("ERROR", "4", "Error", "Acquirer Error"),
		row("BLOCK_CARD", "5", "Refused", "Blocked Card"),
		row("CARD_EXPIRED", "6", "Refused", "Expired Card"),
		row("INVALID_AMOUNT", "7", "Refused", "Invalid Amount"),
		row("INVALID_CARD_NUMBER", "8", "Refused", "Invalid Card Number"),
		row("ISSUER_UNAVAILABLE", "9", "Refused", "Issuer Unavailable"),
		row("NOT_SUPPORTED", "10", "Refused", "Not supported"),
		row("NOT_3D_AUTHENTICATED", "11", "Refused", "3D Not Authenticated"),
		row("NOT_ENOUGH_BALANCE", "12", "Refused", "Not enough balance"),
		row("PENDING", "13", "Received", ""),
		row("ACQUIRER_FRAUD", "14", "Refused", "Acquirer Fraud"),
		row("CANCELLED", "15", "Refused", "Cancelled"),
		row("SHOPPER_CANCELLED", "16", "Refused", "Shopper Cancelled"),
		row("INVALID_PIN", "17", "Refused", "Invalid Pin"),
		row("PIN_TRIES_EXCEEDED", "18", "Refused", "Pin tries exceeded"),
		row("PIN_VALIDATION_NOT_POSSIBLE", "19", "Refused", "Pin validation not possible"),
		row("FRAUD", "20", "Refused", "FRAUD"),
		row("NOT_SUBMITTED", "21", "Refused", "Not Submitted"),
		row("FRAUD_CANCELLED", "22", "Cancelled", "FRAUD-CANCELLED"),
		row("TRANSACTION_NOT_PERMITTED", "23", "Refused", "Transaction Not Permitted"),
		row("CVC_DECLINED", "24", "Refused", "CVC Declined"),
		row("RESTRICTED_CARD", "25", "Refused", "Restricted Card"),
		row("REVOCATION_OF_AUTH", "26", "Refused", "Revocation Of Auth"),
		row("DECLINED_NON_GENERIC", "27", "Refused", "Declined Non Generic"),
		row("WITHDRAWAL_AMOUNT_EXCEEDED", "28", "Refused", "Withdrawal amount exceeded"),
		row("WITHDRAWAL_COUNT_EXCEEDED", "29", "Refused", "Withdrawal count exceeded"),
		row("ISSUER_SUSPECTED_FRAUD", "31", "Refused", "Issuer Suspected Fraud"),
		row("AVS_DECLINED", "32", "Refused", "AVS Declined"),
		row("PIN_REQUIRED", "33", "Refused", "Card requires online pin"),
		row("NO_CHECKING_ACCOUNT_AVAILABLE_ON_CARD", "34", "Refused", "No checking account available on Card"),
		{HolderName: "RESULT_PENDING", Behaviour: Pend, ResultCode: "Pending"},
		{HolderName: "capture failed", Behaviour: Authorise, ResultCode: "Authorised", CaptureFails: true},
		{HolderName: "refund failed", Behaviour: Authorise, ResultCode: "Authorised", RefundFails: true},
		{HolderName: "SIM_500", Behaviour: Fail500},
		{HolderName: "SIM_TIMEOUT", Behaviour: Hang},
	}
}

// lookupAcquirerCode returns the row of a RequestedTestAcquirerResponseCode.
func lookupAcquirerCode(code string) (HolderNameOutcome, bool) {
	code = strings.TrimSpace(code)
	for _, o := range HolderNameOutcomes() {
		if code != "" && o.AcquirerResponseCode == code {
			return o, true
		}
	}
	return HolderNameOutcome{}, false
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
