package simulator

import (
	"slices"
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
	CVC         string // "" where the platform documents none (Maestro)
	ExpiryMonth string
	ExpiryYear  string
	Behaviour   Behaviour
	Note        string
	// ChallengeOnly: a Challenge card whose native 3-D Secure 2 flow skips
	// the fingerprint (IdentifyShopper) step and answers ChallengeShopper at
	// once (Options.WebThreeDS2 with nativeThreeDS "preferred").
	ChallengeOnly bool
}

// TestCards returns the documented test cards. Any other Luhn-valid number
// is authorised too (its brand derived from the prefix). The sources of
// each row are in README.md ("Where the rows come from").
func TestCards() []TestCard {
	card := func(number, brand, cvc string, b Behaviour, note string) TestCard {
		return TestCard{Number: number, Brand: brand, CVC: cvc, ExpiryMonth: "03", ExpiryYear: "2030", Behaviour: b, Note: note}
	}
	challengeOnly := card("4212345678910006", "visa", "737", Challenge, "3DS2 Visa: challenge only (native: ChallengeShopper without a fingerprint step)")
	challengeOnly.ChallengeOnly = true
	return []TestCard{
		card("4111111111111111", "visa", "737", Authorise, "Visa, authorised"),
		card("5555555555554444", "mc", "737", Authorise, "Mastercard, authorised"),
		card("2222400070000005", "mc", "737", Authorise, "Mastercard 2-series, authorised"),
		card("370000000000002", "amex", "7373", Authorise, "American Express, authorised"),
		card("6011601160116611", "discover", "737", Authorise, "Discover, authorised"),
		card("5454545454545454", "mc", "737", Challenge, "3DS2 Mastercard: fingerprint (native) then challenge (password \"password\")"),
		card("4917610000000000", "visa", "737", Challenge, "3DS2 Visa: fingerprint (native) then challenge (password \"password\")"),
		card("371449635398431", "amex", "7373", Challenge, "3DS2 Amex: fingerprint (native) then challenge (password \"password\")"),
		card("5000550000000029", "maestro", "", Challenge, "3DS2 Maestro (no CVC): fingerprint (native) then challenge"),
		challengeOnly,
		card("5201281505129736", "mc", "737", Frictionless, "3DS2 Mastercard: frictionless (fingerprint when native, no challenge)"),
		card("4000000000002701", "visa", "737", Frictionless, "simulator alias of 5201 2815 0512 9736 (not a platform card)"),
		card("4212345678901237", "visa", "737", Redirect, "the platform's former 3-D Secure 1 card: redirect (method GET) to the simulated issuer page"),
		card("4000000000000507", "visa", "737", Fail500, "upstream answers HTTP 500 (no payment created; simulator only)"),
		card("4000000000000994", "visa", "737", Hang, "upstream hangs past the client timeout, then authorises (simulator only)"),
	}
}

// HolderNameOutcome is one row of the holder-name table: paymentMethod.holderName
// (or additionalData.RequestedTestAcquirerResponseCode) forces the outcome of
// a card payment (after any 3DS2 challenge or redirect).
type HolderNameOutcome struct {
	HolderName string
	// AcquirerResponseCode is the additionalData.RequestedTestAcquirerResponseCode
	// value that forces the same outcome ("" for rows without a code).
	AcquirerResponseCode string
	Behaviour            Behaviour
	ResultCode           string
	RefusalReason        string
	RefusalReasonCode    string
	// CaptureFails makes later captures report CAPTURE then CAPTURE_FAILED.
	CaptureFails bool
	// RefundFails makes later refunds report CANCEL_OR_REFUND then REFUND_FAILED.
	RefundFails bool
	// Checked: the whole row (holder name, code, resultCode, refusalReason)
	// was read in the platform's testing documentation. Rows with a code
	// that are not Checked have the code and refusal reason of the
	// platform's refusal-reason list but a holder name the stored copy of
	// the test table does not show; README.md says so row by row.
	Checked bool
}

// HolderNameOutcomes returns the holder-name table (matched
// case-insensitively). The rows with an AcquirerResponseCode are the
// platform's test values (holder name, response code, result code and
// refusal reason); "capture failed" and "refund failed" are the platform's
// failed-modification values; RESULT_PENDING and the SIM_ rows are
// simulator extensions.
func HolderNameOutcomes() []HolderNameOutcome {
	row := func(name, code, result, reason string, checked bool) HolderNameOutcome {
		o := HolderNameOutcome{HolderName: name, AcquirerResponseCode: code, Behaviour: Refuse, ResultCode: result, RefusalReason: reason, RefusalReasonCode: code, Checked: checked}
		if result == upstream.ResultAuthorised {
			o.Behaviour, o.RefusalReason, o.RefusalReasonCode = Authorise, "", ""
		}
		if result == upstream.ResultReceived {
			o.Behaviour, o.RefusalReason, o.RefusalReasonCode = Receive, "", ""
		}
		return o
	}
	const checked, codeOnly = true, false
	return []HolderNameOutcome{
		row("UNKNOWN", "0", "Error", "Unknown", checked),
		row("APPROVED", "1", "Authorised", "", checked),
		row("DECLINED", "2", "Refused", "Refused", checked),
		row("REFERRAL", "3", "Refused", "Referral", checked),
		row("ERROR", "4", "Error", "Acquirer Error", checked),
		row("BLOCK_CARD", "5", "Refused", "Blocked Card", checked),
		row("CARD_EXPIRED", "6", "Refused", "Expired Card", checked),
		row("INVALID_AMOUNT", "7", "Refused", "Invalid Amount", checked),
		row("INVALID_CARD_NUMBER", "8", "Refused", "Invalid Card Number", checked),
		row("ISSUER_UNAVAILABLE", "9", "Refused", "Issuer Unavailable", checked),
		row("NOT_SUPPORTED", "10", "Refused", "Not supported", checked),
		row("NOT_3D_AUTHENTICATED", "11", "Refused", "3D Not Authenticated", checked),
		row("NOT_ENOUGH_BALANCE", "12", "Refused", "Not enough balance", checked),
		row("PENDING", "13", "Received", "", checked),
		row("ACQUIRER_FRAUD", "14", "Refused", "Acquirer Fraud", checked),
		row("CANCELLED", "15", "Refused", "Cancelled", checked),
		row("SHOPPER_CANCELLED", "16", "Refused", "Shopper Cancelled", checked),
		row("INVALID_PIN", "17", "Refused", "Invalid Pin", codeOnly),
		row("PIN_TRIES_EXCEEDED", "18", "Refused", "Pin tries exceeded", codeOnly),
		row("PIN_VALIDATION_NOT_POSSIBLE", "19", "Refused", "Pin validation not possible", codeOnly),
		row("FRAUD", "20", "Refused", "FRAUD", codeOnly),
		row("NOT_SUBMITTED", "21", "Refused", "Not Submitted", codeOnly),
		row("FRAUD_CANCELLED", "22", "Cancelled", "FRAUD-CANCELLED", codeOnly),
		row("TRANSACTION_NOT_PERMITTED", "23", "Refused", "Transaction Not Permitted", codeOnly),
		row("CVC_DECLINED", "24", "Refused", "CVC Declined", codeOnly),
		row("RESTRICTED_CARD", "25", "Refused", "Restricted Card", codeOnly),
		row("REVOCATION_OF_AUTH", "26", "Refused", "Revocation Of Auth", codeOnly),
		row("DECLINED_NON_GENERIC", "27", "Refused", "Declined Non Generic", codeOnly),
		row("WITHDRAWAL_AMOUNT_EXCEEDED", "28", "Refused", "Withdrawal amount exceeded", codeOnly),
		row("WITHDRAWAL_COUNT_EXCEEDED", "29", "Refused", "Withdrawal count exceeded", codeOnly),
		row("ISSUER_SUSPECTED_FRAUD", "31", "Refused", "Issuer Suspected Fraud", codeOnly),
		row("AVS_DECLINED", "32", "Refused", "AVS Declined", codeOnly),
		row("PIN_REQUIRED", "33", "Refused", "Card requires online pin", codeOnly),
		row("NO_CHECKING_ACCOUNT_AVAILABLE_ON_CARD", "34", "Refused", "No checking account available on Card", codeOnly),
		row("AUTHENTICATION_REQUIRED", "38", "Refused", "Authentication required", codeOnly),
		{HolderName: "capture failed", Behaviour: Authorise, ResultCode: "Authorised", CaptureFails: true, Checked: true},
		{HolderName: "refund failed", Behaviour: Authorise, ResultCode: "Authorised", RefundFails: true, Checked: true},
		{HolderName: "RESULT_PENDING", Behaviour: Pend, ResultCode: "Pending"},
		{HolderName: "SIM_500", Behaviour: Fail500},
		{HolderName: "SIM_TIMEOUT", Behaviour: Hang},
	}
}

// lookupAcquirerCode returns the row of a RequestedTestAcquirerResponseCode:
// the numeric code, or (as the platform's older result-code page allows) the
// response name of a row with a code, e.g. "CARD_EXPIRED".
func lookupAcquirerCode(code string) (HolderNameOutcome, bool) {
	code = strings.TrimSpace(code)
	return find(HolderNameOutcomes(), func(o HolderNameOutcome) bool {
		return o.AcquirerResponseCode != "" && (o.AcquirerResponseCode == code || strings.EqualFold(o.HolderName, code))
	})
}

// lookupHolderName returns the holder-name row for name, if any. As the
// platform documents, a holder name may carry a scheme response and raw
// refusal reason after the response name ("DECLINED : 06 : ERROR"): the
// part before the first colon selects the row.
func lookupHolderName(name string) (HolderNameOutcome, bool) {
	match := func(n string) (HolderNameOutcome, bool) {
		return find(HolderNameOutcomes(), func(o HolderNameOutcome) bool { return strings.EqualFold(o.HolderName, n) })
	}
	name = strings.TrimSpace(name)
	if o, ok := match(name); ok {
		return o, true
	}
	if prefix, _, ok := strings.Cut(name, ":"); ok {
		return match(strings.TrimSpace(prefix))
	}
	return HolderNameOutcome{}, false
}

// lookupCard returns the test-card row for number, if any.
func lookupCard(number string) (TestCard, bool) {
	return find(TestCards(), func(c TestCard) bool { return c.Number == number })
}

// find returns the first of xs that f accepts.
func find[T any](xs []T, f func(T) bool) (T, bool) {
	if i := slices.IndexFunc(xs, f); i >= 0 {
		return xs[i], true
	}
	var zero T
	return zero, false
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
		return slices.ContainsFunc(prefixes, func(x string) bool { return strings.HasPrefix(number, x) })
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
func onlyDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
