package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/money"
)

// PaymentRequest is the body of POST /payments.
//
// The typed fields are the ones the service sets or checks. Extra carries
// the other top-level fields of the client component's state data
// (browserInfo, riskData, origin, channel, billingAddress, shopperEmail, …)
// unchanged; MarshalJSON merges them into the top-level JSON object. A typed
// field always wins: an Extra key equal to the JSON name of any typed field is
// dropped, even when the typed field is empty, so server-controlled fields
// cannot be smuggled in through Extra.
type PaymentRequest struct {
	MerchantAccount    string       `json:"merchantAccount"`
	Amount             money.Amount `json:"amount"`
	Reference          string       `json:"reference"`
	ReturnURL          string       `json:"returnUrl"`
	CountryCode        string       `json:"countryCode,omitempty"`
	ShopperInteraction string       `json:"shopperInteraction,omitempty"`
	// RecurringProcessingModel is e.g. "UnscheduledCardOnFile".
	RecurringProcessingModel string `json:"recurringProcessingModel,omitempty"`
	// IndustryUsage ("delayedCharge", "noShow", "installment") is a top-level
	// field of the v71 PaymentRequest (not an additionalData key); see the
	// upstream's PaymentRequest.industryUsage, "the reason for the amount
	// update".
	IndustryUsage    string            `json:"industryUsage,omitempty"`
	ShopperReference string            `json:"shopperReference,omitempty"`
	Splits           []Split           `json:"splits,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`
	AdditionalData   map[string]string `json:"additionalData,omitempty"`
	// CaptureDelayHours 0 captures at authorisation (v71
	// PaymentRequest.captureDelayHours; manual capture is
	// additionalData.manualCapture "true" instead).
	CaptureDelayHours *int `json:"captureDelayHours,omitempty"`
	// PaymentMethod is the component's paymentMethod object, passed through.
	PaymentMethod json.RawMessage `json:"paymentMethod"`

	// Extra holds pass-through top-level fields (see the type comment).
	Extra map[string]json.RawMessage `json:"-"`
}

// paymentRequestJSON has PaymentRequest's fields without its methods.
type paymentRequestJSON PaymentRequest

// isPaymentRequestField reports whether name is the JSON name of a typed
// field of PaymentRequest (kept in sync by a test).
func isPaymentRequestField(name string) bool {
	switch name {
	case "merchantAccount", "amount", "reference", "returnUrl", "countryCode",
		"shopperInteraction", "recurringProcessingModel", "industryUsage",
		"shopperReference", "splits", "metadata", "additionalData", "captureDelayHours", "paymentMethod":
		return true
	}
	return false
}

// MarshalJSON encodes the typed fields and merges Extra into the same
// top-level object (Extra keys first, sorted; colliding keys dropped).
func (r PaymentRequest) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(paymentRequestJSON(r))
	if err != nil {
		return nil, err
	}
	extra := make(map[string]json.RawMessage, len(r.Extra))
	for k, v := range r.Extra {
		if !isPaymentRequestField(k) && len(v) > 0 {
			extra[k] = v
		}
	}
	if len(extra) == 0 {
		return typed, nil
	}
	head, err := json.Marshal(extra)
	if err != nil {
		return nil, fmt.Errorf("upstream: PaymentRequest.Extra is not valid JSON: %w", err)
	}
	// Both are non-empty objects ("amount" and "merchantAccount" are never
	// omitted): join them into one.
	return append(append(head[:len(head)-1], ','), typed[1:]...), nil
}

// UnmarshalJSON decodes the typed fields and keeps every other top-level
// field in Extra.
func (r *PaymentRequest) UnmarshalJSON(data []byte) error {
	var typed paymentRequestJSON
	if err := json.Unmarshal(data, &typed); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	for k := range all {
		if isPaymentRequestField(k) {
			delete(all, k)
		}
	}
	*r = PaymentRequest(typed)
	if len(all) > 0 {
		r.Extra = all
	}
	return nil
}

// PaymentMethodInfo is the paymentMethod object of a payment response.
type PaymentMethodInfo struct {
	Type  string `json:"type,omitempty"`
	Brand string `json:"brand,omitempty"`
}

// PaymentResponse is the answer of POST /payments and POST /payments/details.
type PaymentResponse struct {
	ResultCode   string `json:"resultCode"`
	PSPReference string `json:"pspReference,omitempty"`
	// Action is passed unchanged to the client component
	// (RedirectShopper, ChallengeShopper, …).
	Action            json.RawMessage    `json:"action,omitempty"`
	RefusalReason     string             `json:"refusalReason,omitempty"`
	RefusalReasonCode string             `json:"refusalReasonCode,omitempty"`
	MerchantReference string             `json:"merchantReference,omitempty"`
	Amount            *money.Amount      `json:"amount,omitempty"`
	PaymentMethod     *PaymentMethodInfo `json:"paymentMethod,omitempty"`
	AdditionalData    map[string]string  `json:"additionalData,omitempty"`
	// Raw is the whole upstream response body.
	Raw []byte `json:"-"`
}

// Payments starts a payment (POST /payments, answered 200).
func (c *Client) Payments(ctx context.Context, req PaymentRequest, idempotencyKey string) (PaymentResponse, error) {
	return c.payment(ctx, "/payments", req, idempotencyKey)
}

// DetailsRequest is the body of POST /payments/details.
type DetailsRequest struct {
	// Details is the component's details object (redirectResult,
	// threeDSResult, …), passed through unchanged.
	Details json.RawMessage `json:"details"`
	// PaymentData is the action's paymentData, when the component gave one.
	PaymentData string `json:"paymentData,omitempty"`
}

// PaymentDetails submits the details of an action
// (POST /payments/details, answered 200).
func (c *Client) PaymentDetails(ctx context.Context, req DetailsRequest, idempotencyKey string) (PaymentResponse, error) {
	if len(req.Details) == 0 {
		return PaymentResponse{}, errors.New("upstream: DetailsRequest.Details is required")
	}
	return c.payment(ctx, "/payments/details", req, idempotencyKey)
}

func (c *Client) payment(ctx context.Context, path string, body any, idempotencyKey string) (PaymentResponse, error) {
	out, raw, err := post[PaymentResponse](ctx, c, path, body, idempotencyKey)
	out.Raw = raw
	if string(out.Action) == "null" {
		out.Action = nil // no action
	}
	return out, err
}
