package upstream

import (
	"context"

	"github.com/yp/paysvc/shared/money"
)

// RefundRequest is the body of POST /payments/{paymentPspReference}/refunds
// (PaymentRefundRequest: amount and merchantAccount required).
type RefundRequest struct {
	MerchantAccount string       `json:"merchantAccount"`
	Amount          money.Amount `json:"amount"`
	Reference       string       `json:"reference,omitempty"`
	Splits          []Split      `json:"splits,omitempty"`
	LineItems       []LineItem   `json:"lineItems,omitempty"`
}

// Refund refunds (part of) a captured payment
// (POST /payments/{paymentPspReference}/refunds, answered 201 "received";
// the outcome arrives as a REFUND or REFUND_FAILED notification).
func (c *Client) Refund(ctx context.Context, pspReference string, req RefundRequest, idempotencyKey string) (ModificationResponse, error) {
	return c.modify(ctx, pspReference, "refunds", req, idempotencyKey)
}
