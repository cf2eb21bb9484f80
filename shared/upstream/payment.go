package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

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

// paymentRequestWire is what MarshalJSON encodes: PaymentRequest's typed
// fields, its string maps encoded without reflection (the same bytes
// encoding/json writes for them, a test keeps it so).
type paymentRequestWire struct {
	MerchantAccount          string          `json:"merchantAccount"`
	Amount                   money.Amount    `json:"amount"`
	Reference                string          `json:"reference"`
	ReturnURL                string          `json:"returnUrl"`
	CountryCode              string          `json:"countryCode,omitempty"`
	ShopperInteraction       string          `json:"shopperInteraction,omitempty"`
	RecurringProcessingModel string          `json:"recurringProcessingModel,omitempty"`
	IndustryUsage            string          `json:"industryUsage,omitempty"`
	ShopperReference         string          `json:"shopperReference,omitempty"`
	Splits                   []Split         `json:"splits,omitempty"`
	Metadata                 sortedStrings   `json:"metadata,omitempty"`
	AdditionalData           sortedStrings   `json:"additionalData,omitempty"`
	CaptureDelayHours        *int            `json:"captureDelayHours,omitempty"`
	PaymentMethod            json.RawMessage `json:"paymentMethod"`
}

func (r PaymentRequest) wire() paymentRequestWire {
	return paymentRequestWire{
		MerchantAccount: r.MerchantAccount, Amount: r.Amount, Reference: r.Reference, ReturnURL: r.ReturnURL,
		CountryCode: r.CountryCode, ShopperInteraction: r.ShopperInteraction,
		RecurringProcessingModel: r.RecurringProcessingModel, IndustryUsage: r.IndustryUsage,
		ShopperReference: r.ShopperReference, Splits: r.Splits, Metadata: r.Metadata,
		AdditionalData: r.AdditionalData, CaptureDelayHours: r.CaptureDelayHours, PaymentMethod: r.PaymentMethod,
	}
}

// sortedStrings is a string map encoded as encoding/json encodes one (keys
// sorted), in one allocation.
type sortedStrings map[string]string

func (m sortedStrings) MarshalJSON() ([]byte, error) {
	var stack [16]string
	keys, size := stack[:0], 2
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v) + 6
	}
	slices.Sort(keys)
	buf := make([]byte, 0, size)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, k)
		buf = append(buf, ':')
		buf = appendJSONString(buf, m[k])
	}
	return append(buf, '}'), nil
}

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
	typed, err := json.Marshal(r.wire())
	if err != nil || len(r.Extra) == 0 {
		return typed, err
	}
	keys := make([]string, 0, len(r.Extra))
	size := len(typed)
	for k, v := range r.Extra {
		if isPaymentRequestField(k) || len(v) == 0 {
			continue
		}
		if !json.Valid(v) {
			return nil, fmt.Errorf("upstream: PaymentRequest.Extra[%q] is not valid JSON", k)
		}
		keys = append(keys, k)
		size += len(k) + len(v) + 4
	}
	if len(keys) == 0 {
		return typed, nil
	}
	slices.Sort(keys)
	buf := make([]byte, 0, size+8)
	buf = append(buf, '{')
	for _, k := range keys {
		buf = appendJSONString(buf, k)
		buf = append(buf, ':')
		buf = append(buf, r.Extra[k]...)
		buf = append(buf, ',')
	}
	// typed is a non-empty object ("amount" and "merchantAccount" are never
	// omitted): drop its '{' and append the rest.
	return append(buf, typed[1:]...), nil
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

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // cannot fail for a string
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
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
	var out PaymentResponse
	raw, err := c.do(ctx, http.MethodPost, path, nil, body, idempotencyKey)
	if err != nil {
		return out, err
	}
	out, err = decodePaymentResponse(raw)
	if err != nil {
		return PaymentResponse{}, &unavailableError{op: "POST " + path, cause: fmt.Errorf("decoding response: %w", err)}
	}
	out.Raw = raw
	return out, nil
}
