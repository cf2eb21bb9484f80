package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/yp/paysvc/shared/money"
)

// CaptureRequest is the body of POST /payments/{pspReference}/captures
// and, as RefundRequest, of POST /payments/{paymentPspReference}/refunds
// (PaymentRefundRequest: amount and merchantAccount required).
type CaptureRequest struct {
	MerchantAccount string       `json:"merchantAccount"`
	Amount          money.Amount `json:"amount"`
	Reference       string       `json:"reference,omitempty"`
	Splits          []Split      `json:"splits,omitempty"`
	LineItems       []LineItem   `json:"lineItems,omitempty"`
}

// RefundRequest is the body of a refund (see CaptureRequest).
type RefundRequest = CaptureRequest

// ReversalRequest is the body of POST /payments/{pspReference}/reversals
// (cancel when not captured, refund when captured).
type ReversalRequest struct {
	MerchantAccount string `json:"merchantAccount"`
	Reference       string `json:"reference,omitempty"`
}

// CancelRequest is the body of POST /payments/{pspReference}/cancels (v71
// PaymentCancelRequest): it cancels an uncaptured authorisation, or the
// uncaptured remainder of one; a CANCELLATION notification follows.
type CancelRequest = ReversalRequest

// AmountUpdateRequest is the body of POST /payments/{pspReference}/amountUpdates.
type AmountUpdateRequest struct {
	MerchantAccount string       `json:"merchantAccount"`
	Amount          money.Amount `json:"amount"`
	Reference       string       `json:"reference,omitempty"`
	// IndustryUsage is "delayedCharge", "noShow" or "installment".
	IndustryUsage string  `json:"industryUsage,omitempty"`
	Splits        []Split `json:"splits,omitempty"`
}

// ModificationResponse is the 201 answer of captures, reversals and amount
// updates. Status is always "received"; the outcome arrives as a notification.
type ModificationResponse struct {
	// PSPReference is the reference of the modification itself.
	PSPReference string `json:"pspReference"`
	// PaymentPSPReference is the reference of the modified payment.
	PaymentPSPReference string        `json:"paymentPspReference"`
	Status              string        `json:"status"`
	Reference           string        `json:"reference,omitempty"`
	MerchantAccount     string        `json:"merchantAccount,omitempty"`
	Amount              *money.Amount `json:"amount,omitempty"`
	// Raw is the whole upstream response body.
	Raw []byte `json:"-"`
}

// Capture captures an authorised payment
// (POST /payments/{pspReference}/captures, answered 201).
func (c *Client) Capture(ctx context.Context, pspReference string, req CaptureRequest, idempotencyKey string) (ModificationResponse, error) {
	return c.modify(ctx, pspReference, "captures", req, idempotencyKey)
}

// Reverse cancels a payment that is not captured or refunds one that is
// (POST /payments/{pspReference}/reversals, answered 201).
func (c *Client) Reverse(ctx context.Context, pspReference string, req ReversalRequest, idempotencyKey string) (ModificationResponse, error) {
	return c.modify(ctx, pspReference, "reversals", req, idempotencyKey)
}

// Cancel cancels a payment's uncaptured authorisation
// (POST /payments/{pspReference}/cancels, answered 201).
func (c *Client) Cancel(ctx context.Context, pspReference string, req CancelRequest, idempotencyKey string) (ModificationResponse, error) {
	return c.modify(ctx, pspReference, "cancels", req, idempotencyKey)
}

// UpdateAmount changes the authorised amount of a payment
// (POST /payments/{pspReference}/amountUpdates, answered 201).
func (c *Client) UpdateAmount(ctx context.Context, pspReference string, req AmountUpdateRequest, idempotencyKey string) (ModificationResponse, error) {
	return c.modify(ctx, pspReference, "amountUpdates", req, idempotencyKey)
}

func (c *Client) modify(ctx context.Context, psp, kind string, body any, idempotencyKey string) (ModificationResponse, error) {
	if psp == "" {
		return ModificationResponse{}, errors.New("upstream: pspReference is required for " + kind)
	}
	out, raw, err := post[ModificationResponse](ctx, c, "/payments/"+url.PathEscape(psp)+"/"+kind, body, idempotencyKey)
	out.Raw = raw
	return out, err
}

// Refund refunds (part of) a captured payment
// (POST /payments/{paymentPspReference}/refunds, answered 201 "received";
// the outcome arrives as a REFUND or REFUND_FAILED notification).
func (c *Client) Refund(ctx context.Context, pspReference string, req RefundRequest, idempotencyKey string) (ModificationResponse, error) {
	return c.modify(ctx, pspReference, "refunds", req, idempotencyKey)
}

// DeleteStoredPaymentMethodRequest identifies a stored payment method
// (token) to delete.
type DeleteStoredPaymentMethodRequest struct {
	StoredPaymentMethodID string
	MerchantAccount       string
	ShopperReference      string
}

// DeleteStoredPaymentMethod deletes a stored payment method
// (DELETE /storedPaymentMethods/{id}?merchantAccount=..&shopperReference=..,
// answered 204 or 200). DELETE is idempotent upstream, so it takes no
// idempotency key.
func (c *Client) DeleteStoredPaymentMethod(ctx context.Context, req DeleteStoredPaymentMethodRequest) error {
	if req.StoredPaymentMethodID == "" || req.MerchantAccount == "" || req.ShopperReference == "" {
		return errors.New("upstream: stored payment method id, merchantAccount and shopperReference are required")
	}
	q := url.Values{}
	q.Set("merchantAccount", req.MerchantAccount)
	q.Set("shopperReference", req.ShopperReference)
	_, err := c.do(ctx, http.MethodDelete, "/storedPaymentMethods/"+url.PathEscape(req.StoredPaymentMethodID), q, nil, "")
	return err
}
