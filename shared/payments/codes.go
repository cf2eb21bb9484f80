package payments

// The platform's notification event codes and what the fold makes of each
// (docs/payments.md, "Every notification code", mirrors this table;
// Webhooks-v1.json names 50 codes). A code the table lacks is
// informational: kept, forwarded, no effect on money.

// Code is what the service makes of one notification event code.
type Code struct {
	category category
	// kind is the entry its notice is a fact of ("": the head's own, or
	// none for an account-level code).
	kind OpKind
	role role
	// confirms: a refund is final with it (REFUND, REFUND_WITH_DATA).
	confirms bool
	// unref: account-level when it names no payment of the service.
	unref  bool
	source string
	known  bool // set by CodeOf for the table's rows
}

// category is what a code is about.
type category string

// Categories of codes.
const (
	catMoney   category = "money"   // books an amount
	catState   category = "state"   // changes what may happen next, no amount
	catInfo    category = "info"    // kept and forwarded, no effect on money
	catDispute category = "dispute" // a dispute fact, no money (yet)
	catAccount category = "account" // about no payment: kept for operations
)

// role is what a notice does to its entry's status.
type role uint8

// Roles of notices.
const (
	roleNone    role = iota // neutral: kept, counts for nothing
	roleResult              // success counts the operation, a failure ends it
	roleFailure             // a failure whatever success says (*_FAILED)
	roleUndo                // success undoes the operation (REFUNDED_REVERSED)
)

// Event codes the domain reads by name.
const (
	eventAuthorisation           = "AUTHORISATION"
	eventAuthorisationAdjustment = "AUTHORISATION_ADJUSTMENT"
	eventCapture                 = "CAPTURE"
	eventCaptureFailed           = "CAPTURE_FAILED"
	eventCancelOrRefund          = "CANCEL_OR_REFUND"
	eventRefund                  = "REFUND"
	eventRefundFailed            = "REFUND_FAILED"
	eventOfferClosed             = "OFFER_CLOSED"
)

// Sources of the rows (the platform's pages, under docs.adyen.com, and
// the vendored Webhooks-v1.json).
const (
	srcDispute = "risk-management/understanding-disputes/dispute-process-and-flow"
	srcPayout  = "Webhooks-v1; payouts/payout-service"
	srcOrder   = "Webhooks-v1; online-payments/partial-payments"
	srcOther   = "Webhooks-v1 (Other webhooks: a type/data body)"
	srcRescue  = "online-payments/auto-rescue"
	srcReview  = "risk-management/case-management"
)

func moneyCode(kind OpKind, r role, source string) Code {
	return Code{category: catMoney, kind: kind, role: r, source: source}
}

func disputeCode(source string) Code {
	return Code{category: catDispute, kind: opDispute, source: source}
}

func infoCode(source string) Code { return Code{category: catInfo, kind: opNotice, source: source} }

func accountCode(source string) Code { return Code{category: catAccount, source: source} }

// codes is the table: every code of Webhooks-v1.json.
var codes = map[string]Code{
	"ACH_NOTIFICATION_OF_CHANGE": accountCode(srcOther),
	"AUTHENTICATION":             infoCode("Webhooks-v1 (eventCode enum only, no webhook)"),
	eventAuthorisation:           moneyCode("", roleResult, "Webhooks-v1 /AUTHORISATION"),
	eventAuthorisationAdjustment: moneyCode(OpAmountUpdate, roleResult, "online-payments/adjust-authorisation"),
	"AUTORESCUE":                 infoCode(srcRescue),
	"CANCELLATION":               moneyCode(OpCancel, roleResult, "online-payments/cancel"),
	"CANCEL_AUTORESCUE":          infoCode(srcRescue),
	eventCancelOrRefund:          moneyCode(OpReversal, roleResult, "online-payments/reversal; classic cancel-or-refund"),
	eventCapture:                 moneyCode(OpCapture, roleResult, "online-payments/capture; online-payments/capture/failure-reasons"),
	eventCaptureFailed:           moneyCode(OpCapture, roleFailure, "online-payments/capture#failed-capture"),
	"CHARGEBACK":                 disputeCode(srcDispute + "; Webhooks-v1 /CHARGEBACK"),
	"CHARGEBACK_REVERSED":        disputeCode(srcDispute + "; Webhooks-v1 /CHARGEBACK_REVERSED"),
	"DIRECT_DEBIT_NOTICE_OF_CHANGE_NOTIFICATION": accountCode(srcOther),
	"DISPUTE_DEFENSE_PERIOD_ENDED":               disputeCode(srcDispute),
	"EXPIRE": {category: catState, kind: opExpiry, role: roleResult,
		source: "Webhooks-v1 /EXPIRE; authorisation validity (help.adyen.com)"},
	"HANDLED_EXTERNALLY":                infoCode("Webhooks-v1 (eventCode enum only, no webhook)"),
	"INFORMATION_SUPPLIED":              disputeCode(srcDispute),
	"ISSUER_COMMENTS":                   disputeCode("risk-management/understanding-disputes/dispute-notifications/issuer-comments"),
	"ISSUER_RESPONSE_TIMEFRAME_EXPIRED": disputeCode(srcDispute),
	"MANUAL_REVIEW_ACCEPT":              {category: catState, kind: opNotice, source: srcReview},
	"MANUAL_REVIEW_REJECT":              {category: catState, kind: OpReversal, role: roleResult, source: srcReview},
	"NOTIFICATION_OF_CHARGEBACK":        disputeCode(srcDispute),
	"NOTIFICATION_OF_FRAUD":             infoCode(srcDispute),
	eventOfferClosed:                    {category: catState, role: roleResult, source: "Webhooks-v1 /OFFER_CLOSED"},
	"ORDER_CLOSED":                      accountCode(srcOrder),
	"ORDER_OPENED":                      accountCode(srcOrder),
	"PAIDOUT_REVERSED":                  accountCode(srcPayout),
	"PAYOUT_DECLINE":                    accountCode(srcPayout),
	"PAYOUT_EXPIRE":                     accountCode(srcPayout),
	"PAYOUT_THIRDPARTY":                 accountCode(srcPayout),
	"POSTPONED_REFUND":                  {category: catState, kind: OpRefund, source: "Webhooks-v1 /POSTPONED_REFUND"},
	"PREARBITRATION_ACCEPTED":           disputeCode(srcDispute),
	"PREARBITRATION_DECLINED":           disputeCode(srcDispute),
	"PREARBITRATION_ISSUER_WITHDRAWN":   disputeCode(srcDispute),
	"PREARBITRATION_LOST":               disputeCode(srcDispute),
	"PREARBITRATION_OPEN":               disputeCode(srcDispute),
	"PREARBITRATION_WON":                disputeCode(srcDispute),
	"RECURRING_CONTRACT":                infoCode("development-resources/webhooks/webhook-types; Webhooks-v1 RecurringContractNotificationRequestItem"),
	eventRefund:                         {category: catMoney, kind: OpRefund, role: roleResult, confirms: true, source: "online-payments/refund"},
	"REFUNDED_REVERSED":                 moneyCode(OpRefund, roleUndo, "online-payments/refund#refunded-reversed"),
	eventRefundFailed:                   moneyCode(OpRefund, roleFailure, "online-payments/refund#refund-failed"),
	"REFUND_WITH_DATA": {category: catMoney, kind: OpRefund, role: roleResult, confirms: true, unref: true,
		source: "classic refund#unreferenced-refund; point-of-sale unreferenced refunds"},
	"REPORT_AVAILABLE":        accountCode("Webhooks-v1 ReportAvailableNotificationRequestItem; reporting"),
	"REQUEST_FOR_INFORMATION": disputeCode(srcDispute),
	"SCHEME_ARBITRATION":      disputeCode(srcDispute),
	"SCHEME_ARBITRATION_LOST": disputeCode(srcDispute),
	"SCHEME_ARBITRATION_WON":  disputeCode(srcDispute),
	"SECOND_CHARGEBACK":       disputeCode(srcDispute + "; Webhooks-v1 /SECOND_CHARGEBACK"),
	"TECHNICAL_CANCEL":        moneyCode(OpCancel, roleResult, "online-payments/cancel#technical-cancel-webhook"),
	"VOID_PENDING_REFUND":     infoCode("point-of-sale cancel a refund request; Webhooks-v1 /VOID_PENDING_REFUND"),
}

// CodeOf returns code's row. A code the table lacks is informational:
// kept, forwarded, no effect on money.
func CodeOf(code string) Code {
	if c, ok := codes[code]; ok {
		c.known = true
		return c
	}
	return infoCode("development-resources/webhooks/webhook-types (accept codes not listed)")
}

// Known reports whether the table has a row for the code.
func (c Code) Known() bool { return c.known }

// Category is "money", "state", "info", "dispute" or "account".
func (c Code) Category() string { return string(c.category) }

// AccountLevel reports a code about no payment (kept for operations).
func (c Code) AccountLevel() bool { return c.category == catAccount }

// Unreferenced reports a code that is account-level when it names no
// payment of the service (REFUND_WITH_DATA).
func (c Code) Unreferenced() bool { return c.unref }

// Source names the platform's page (or document) the row is read from.
func (c Code) Source() string { return c.source }

// head reports a code of the head's own (AUTHORISATION, OFFER_CLOSED).
func (c Code) head() bool { return c.kind == "" && c.category != catAccount }
