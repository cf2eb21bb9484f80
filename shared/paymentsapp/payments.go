package paymentsapp

import (
	"encoding/json"
	"net/netip"
	"strings"

	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/payments"
)

// serverPrefixes are additionalData key prefixes the service controls.
var serverPrefixes = []string{"metadata.", "tokenization.", "recurring."}

func additionalDataKey(k string) string {
	if k == "" || len(k) > 100 {
		return "keys must be 1 to 100 characters"
	}
	if msg := jsonin.Identifier(k); msg != "" {
		return "keys " + msg
	}
	lower := strings.ToLower(k) // "Metadata.merchantId" is the service's too
	if lower == "manualcapture" {
		return "key " + k + " is set by the service (the merchant's capture mode) and must not be sent"
	}
	for _, p := range serverPrefixes {
		if strings.HasPrefix(lower, p) {
			return "keys starting " + p + " are set by the service and must not be sent"
		}
	}
	return ""
}

// stateDataObjects are component state-data fields passed through as objects.
var stateDataObjects = []string{"browserInfo", "riskData", "billingAddress", "deliveryAddress", "authenticationData"}

// DecodePayment decodes and validates a POST payments body strictly, in
// one pass: every problem is reported with its field path in one apperr.Invalid error.
func DecodePayment(body []byte) (payments.PaymentInput, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return payments.PaymentInput{}, errs.Err()
	}
	var in payments.PaymentInput
	o.Forbid(serverControlled...)
	o.Forbid("countryCode", "captureDelayHours")
	in.Amount, _ = readAmount(o, "amount", false)
	in.PaymentMethod = readPaymentMethod(o, &in)
	in.ReturnURL, _ = o.String("returnUrl", true, returnURLRules...)
	in.Reference, _ = o.String("reference", false, referenceRules...)
	in.AdditionalData = o.StringMap("additionalData", false, maxAdditional, additionalDataKey, jsonin.FreeText)
	in.ShopperReference, _ = o.String("shopperReference", false, shopperReferenceRule)
	in.ShopperInteraction, _ = o.String("shopperInteraction", false, jsonin.OneOf(payments.ShopperInteractionEcommerce, payments.ShopperInteractionContAuth))
	in.RecurringProcessingModel, _ = o.String("recurringProcessingModel", false, jsonin.OneOf(recurringModels...))
	in.IndustryUsage, _ = o.String("industryUsage", false, jsonin.OneOf("noShow", "delayedCharge", "installment"))
	in.StateData = readStateData(o)
	o.Done()

	if in.ShopperInteraction == "" {
		in.ShopperInteraction = payments.ShopperInteractionEcommerce
	}
	// Merchant-initiated stored-card charge (docs/upstream.md).
	if in.ShopperInteraction == payments.ShopperInteractionContAuth {
		need := func(field string, ok bool, msg string) {
			if !ok {
				o.Fail(field, msg+" for a stored-card charge (shopperInteraction ContAuth)")
			}
		}
		need("shopperReference", o.Has("shopperReference"), "is required")
		need("recurringProcessingModel", in.RecurringProcessingModel == "UnscheduledCardOnFile", "must be UnscheduledCardOnFile")
		need("industryUsage", in.IndustryUsage == "noShow", "must be noShow")
		need("paymentMethod.storedPaymentMethodId", in.StoredMethodID != "" || in.PaymentMethod == nil, "is required")
	} else if in.StoredMethodID != "" && !o.Has("shopperReference") {
		o.Fail("shopperReference", "is required with paymentMethod.storedPaymentMethodId")
	}
	if in.StorePaymentMethod() {
		if !o.Has("shopperReference") {
			o.Fail("shopperReference", "is required when storePaymentMethod is true")
		}
		if in.RecurringProcessingModel == "" {
			o.Fail("recurringProcessingModel", "is required when storePaymentMethod is true (how the stored card will be used: "+strings.Join(recurringModels, ", ")+")")
		}
	}
	if v, ok := in.AdditionalData[payments.KeyAuthorisationType]; ok && v != payments.AuthorisationPreAuth && v != payments.AuthorisationFinalAuth {
		o.Fail("additionalData."+payments.KeyAuthorisationType, "must be "+payments.AuthorisationPreAuth+" or "+payments.AuthorisationFinalAuth)
	}
	return in, errs.Err()
}

// readPaymentMethod reads the component's paymentMethod object, unchanged,
// noting a stored payment method id.
func readPaymentMethod(o *jsonin.Obj, in *payments.PaymentInput) json.RawMessage {
	pm := o.Object("paymentMethod", true)
	if pm == nil {
		return nil
	}
	raw := o.Raw("paymentMethod", false)
	if !pm.Has("type") && !pm.Has("storedPaymentMethodId") {
		pm.Fail("type", "is required")
	}
	if id, ok := pm.String("storedPaymentMethodId", false, storedIDRules...); ok {
		in.StoredMethodID = id
	}
	if pm.Has("type") {
		pm.String("type", false, jsonin.LenBetween(1, 64), jsonin.Identifier)
	}
	// The rest of the object belongs to the client component: passed
	// through, its text free text.
	pm.PassThrough(jsonin.FreeText)
	return raw
}

// readStateData reads the allow-listed client component fields.
func readStateData(o *jsonin.Obj) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, name := range stateDataObjects {
		if raw := o.RawObject(name, false, jsonin.FreeText); raw != nil {
			out[name] = raw
		}
	}
	keepString := func(name string, rules ...jsonin.Str) {
		if _, ok := o.String(name, false, rules...); ok {
			out[name] = o.Raw(name, false)
		}
	}
	keepString("origin", urlRules...)
	keepString("channel", jsonin.OneOf("Web", "iOS", "Android"))
	keepString("shopperEmail", emailRule)
	keepString("shopperIP", func(s string) string {
		if _, err := netip.ParseAddr(s); err != nil {
			return "must be an IP address"
		}
		return ""
	})
	keepString("shopperLocale", localeRule)
	keepString("telephoneNumber", phoneRule)
	for _, name := range []string{"clientStateDataIndicator", "storePaymentMethod"} {
		if _, ok := o.Bool(name, false); ok {
			out[name] = o.Raw(name, false)
		}
	}
	if n := readName(o, "shopperName"); n != nil {
		out["shopperName"] = o.Raw("shopperName", false)
	}
	if items := readLineItems(o); items != nil {
		out["lineItems"] = o.Raw("lineItems", false)
	}
	return out
}

// DecodeDetails decodes and validates a POST payments/details body.
func DecodeDetails(body []byte) (payments.DetailsInput, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return payments.DetailsInput{}, errs.Err()
	}
	var in payments.DetailsInput
	in.Details = o.RawObject("details", true, jsonin.FreeText)
	in.PaymentData, _ = o.String("paymentData", false, jsonin.MaxLen(100_000), jsonin.FreeText)
	in.Reference, _ = o.String("reference", false, referenceRules...)
	o.Done()
	return in, errs.Err()
}

// DecodePaymentMethods decodes and validates a POST payment-methods body.
func DecodePaymentMethods(body []byte) (payments.PaymentMethodsInput, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return payments.PaymentMethodsInput{}, errs.Err()
	}
	var in payments.PaymentMethodsInput
	o.Forbid(serverControlled...)
	in.Amount, _ = readAmount(o, "amount", false)
	in.CountryCode, _ = o.String("countryCode", false, countryRule)
	in.ShopperLocale, _ = o.String("shopperLocale", false, localeRule)
	in.Channel, _ = o.String("channel", false, jsonin.OneOf("Web", "iOS", "Android"))
	in.AllowedPaymentMethods = o.Strings("allowedPaymentMethods", false, maxBlocked, methodTypeRules...)
	in.BlockedPaymentMethods = o.Strings("blockedPaymentMethods", false, maxBlocked, methodTypeRules...)
	in.ShopperReference, _ = o.String("shopperReference", false, shopperReferenceRule)
	o.Done()
	return in, errs.Err()
}

// PaymentResponse is the answer of payments and payments/details: the
// upstream's resultCode, pspReference and action (unchanged), and the
// refusal reason of a refused payment.
type PaymentResponse struct {
	ResultCode        string          `json:"resultCode"`
	PSPReference      string          `json:"pspReference,omitempty"`
	Action            json.RawMessage `json:"action,omitempty"`
	RefusalReason     string          `json:"refusalReason,omitempty"`
	RefusalReasonCode string          `json:"refusalReasonCode,omitempty"`
	MerchantReference string          `json:"merchantReference,omitempty"`
}

// PSP reports the pspReference for the request log.
func (r PaymentResponse) PSP() string { return r.PSPReference }

// Payment encodes a payment's result.
func Payment(r payments.PaymentResult) PaymentResponse {
	return PaymentResponse{
		ResultCode: r.ResultCode, PSPReference: r.PSPReference, Action: r.Action,
		RefusalReason: r.RefusalReason, RefusalReasonCode: r.RefusalReasonCode,
		MerchantReference: r.MerchantReference,
	}
}

// PaymentMethodsResponse is the payment-methods answer (both lists always
// present, possibly empty).
type PaymentMethodsResponse struct {
	PaymentMethods       []json.RawMessage `json:"paymentMethods"`
	StoredPaymentMethods []json.RawMessage `json:"storedPaymentMethods"`
}

// PaymentMethods encodes the payment methods offered.
func PaymentMethods(r payments.PaymentMethodsResult) PaymentMethodsResponse {
	out := PaymentMethodsResponse{PaymentMethods: r.PaymentMethods, StoredPaymentMethods: r.StoredPaymentMethods}
	if out.PaymentMethods == nil {
		out.PaymentMethods = []json.RawMessage{}
	}
	if out.StoredPaymentMethods == nil {
		out.StoredPaymentMethods = []json.RawMessage{}
	}
	return out
}
