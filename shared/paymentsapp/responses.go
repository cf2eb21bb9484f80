package paymentsapp

import (
	"encoding/json"
	"time"

	"github.com/yp/paysvc/shared/payments"
)

// The answers' JSON (docs/openapi.yaml), converted from the domain's
// results. Each reports its pspReference for the request log (PSP).

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

// ModificationResponse is the answer of captures, reversals and amount
// updates: the operation's pspReference and status ("received"), plus the
// payment's pspReference and the operation's reference.
type ModificationResponse struct {
	PSPReference        string `json:"pspReference"`
	Status              string `json:"status"`
	PaymentPSPReference string `json:"paymentPspReference"`
	Reference           string `json:"reference,omitempty"`
}

// PSP reports the payment's pspReference for the request log.
func (r ModificationResponse) PSP() string { return r.PaymentPSPReference }

// Modification encodes a modification's result.
func Modification(r payments.ModificationResult) ModificationResponse {
	return ModificationResponse{PSPReference: r.PSPReference, Status: r.Status, PaymentPSPReference: r.PaymentPSPReference, Reference: r.Reference}
}

// DeletedResponse is the answer of DELETE stored-payment-methods/{id}.
type DeletedResponse struct {
	StoredPaymentMethodID string `json:"storedPaymentMethodId"`
	Status                string `json:"status"`
}

// Deleted encodes a deleted stored payment method.
func Deleted(in payments.DeleteStoredMethodInput) DeletedResponse {
	return DeletedResponse{StoredPaymentMethodID: in.StoredPaymentMethodID, Status: "deleted"}
}
