package paymentsapp

import (
	"strings"
	"time"

	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/payments"
)

// DecodeSession decodes and validates a POST sessions body strictly, in
// one pass: every problem is reported with its field path in one apperr.Invalid error.
func DecodeSession(body []byte) (payments.SessionInput, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return payments.SessionInput{}, errs.Err()
	}
	var in payments.SessionInput
	o.Forbid(serverControlled...)
	o.Forbid("shopperInteraction", "captureDelayHours")
	var amountOK bool
	in.Amount, amountOK = readAmount(o, "amount", true)
	in.ReturnURL, _ = o.String("returnUrl", true, returnURLRules...)
	in.Reference, _ = o.String("reference", false, referenceRules...)
	in.ShopperEmail, _ = o.String("shopperEmail", false, emailRule)
	in.TelephoneNumber, _ = o.String("telephoneNumber", false, phoneRule)
	in.ShopperName = readName(o, "shopperName")
	in.Mode, _ = o.String("mode", false, jsonin.OneOf("embedded", "hosted"))
	if in.Mode == "" {
		in.Mode = "embedded"
	}
	in.BlockedPaymentMethods = o.Strings("blockedPaymentMethods", false, maxBlocked, methodTypeRules...)
	in.ShopperLocale, _ = o.String("shopperLocale", false, localeRule)
	in.CountryCode, _ = o.String("countryCode", false, countryRule)
	in.LineItems = readLineItems(o)
	in.ShopperReference, _ = o.String("shopperReference", false, shopperReferenceRule)
	in.StorePaymentMethod, _ = o.Bool("storePaymentMethod", false)
	in.StorePaymentMethodMode, _ = o.String("storePaymentMethodMode", false, jsonin.OneOf("askForConsent", "enabled", "disabled"))
	in.RecurringProcessingModel, _ = o.String("recurringProcessingModel", false, jsonin.OneOf(recurringModels...))
	o.Done()

	wantsToken := in.StorePaymentMethod || in.StorePaymentMethodMode == "enabled" || in.StorePaymentMethodMode == "askForConsent"
	if wantsToken && !o.Has("shopperReference") {
		o.Fail("shopperReference", "is required when storePaymentMethod is true or storePaymentMethodMode is enabled or askForConsent")
	} else if in.RecurringProcessingModel != "" && !o.Has("shopperReference") {
		o.Fail("shopperReference", "is required with recurringProcessingModel")
	}
	if (in.StorePaymentMethod || in.StorePaymentMethodMode == "enabled") && in.RecurringProcessingModel == "" {
		o.Fail("recurringProcessingModel", "is required when storePaymentMethod is true or storePaymentMethodMode is enabled (how the stored card will be used: "+strings.Join(recurringModels, ", ")+")")
	}
	if amountOK && in.Amount.Value == 0 && !in.StorePaymentMethod {
		o.Fail("amount.value", "must be greater than 0 (0 only for a zero-amount session with storePaymentMethod true)")
	}
	return in, errs.Err()
}

// SessionResponse is the sessions answer: the spec's id and sessionData,
// plus the reference (generated when the caller gave none) and expiry.
type SessionResponse struct {
	ID          string     `json:"id"`
	SessionData string     `json:"sessionData"`
	Reference   string     `json:"reference"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	URL         string     `json:"url,omitempty"`
}

// Session encodes a created session.
func Session(r payments.SessionResult) SessionResponse {
	out := SessionResponse{ID: r.ID, SessionData: r.SessionData, Reference: r.Reference, URL: r.URL}
	if !r.ExpiresAt.IsZero() {
		t := r.ExpiresAt
		out.ExpiresAt = &t
	}
	return out
}
