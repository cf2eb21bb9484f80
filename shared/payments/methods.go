package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/apperr"
)

// PaymentMethodsResult is the payment methods offered, as the upstream
// describes them.
type PaymentMethodsResult struct {
	PaymentMethods       []json.RawMessage
	StoredPaymentMethods []json.RawMessage
}

// PaymentMethods lists the payment methods for an amount (docs/openapi.yaml). The
// always-blocked methods are never offered, here as on sessions.
func (s *Service) PaymentMethods(ctx context.Context, c *Call, in PaymentMethodsInput) (PaymentMethodsResult, error) {
	m := c.Merchant
	country := in.CountryCode
	if country == "" {
		country = m.Country
	}
	req := PaymentMethodsRequest{
		IdempotencyKey: c.callUpstream(), MerchantAccount: m.UpstreamAccount, Amount: in.Amount,
		CountryCode: country, ShopperLocale: in.ShopperLocale, Channel: in.Channel, ShopperReference: in.ShopperReference,
		AllowedPaymentMethods: in.AllowedPaymentMethods, BlockedPaymentMethods: mergeBlocked(in.BlockedPaymentMethods),
	}
	resp, err := s.up.PaymentMethods(ctx, req)
	if err != nil {
		return PaymentMethodsResult{}, upstreamError(err, apperr.PaymentMethodsFailed, "listing payment methods")
	}
	return resp, nil
}

// DeleteStoredMethod deletes a shopper's stored payment method (extension).
func (s *Service) DeleteStoredMethod(ctx context.Context, c *Call, in DeleteStoredMethodInput) error {
	c.callUpstream() // the upstream's delete takes no idempotency key
	err := s.up.DeleteStoredMethod(ctx, DeleteStoredMethodRequest{
		StoredPaymentMethodID: in.StoredPaymentMethodID, MerchantAccount: c.Merchant.UpstreamAccount, ShopperReference: in.ShopperReference,
	})
	if e := (*UpstreamRejection)(nil); errors.As(err, &e) && e.NotFound {
		return apperr.New(apperr.PaymentNotFound, "stored payment method not found for this shopper")
	}
	if err != nil {
		return upstreamError(err, apperr.PaymentFailed, "deleting the stored payment method")
	}
	return nil
}

// lineItemsMethods are the buy-now-pay-later methods whose partial
// captures and refunds need lineItems (Checkout v71
// PaymentCaptureRequest.lineItems and PaymentRefundRequest.lineItems: "required
// for partial refunds with 3x 4x Oney, Affirm, Afterpay, Atome, Clearpay,
// Klarna, Ratepay, Walley, and Zip"; payment-methods/klarna/invoice-lines).
var lineItemsMethods = map[string]bool{
	"klarna": true, "klarna_account": true, "klarna_paynow": true, "affirm": true, "afterpaytouch": true, "clearpay": true,
	"atome": true, "zip": true, "ratepay": true, "walley": true, "facilypay_3x": true, "facilypay_4x": true, "riverty": true,
}

// NeedsLineItems reports a payment whose method needs lineItems on a
// partial capture or refund (lineItemsMethods).
func (h Head) NeedsLineItems() bool { return lineItemsMethods[h.PaymentMethod] }

// lineItemsRefusal is the refusal of a partial operation what (capture,
// refund) of h without lineItems, where its method needs them.
func lineItemsRefusal(h Head, what string) error {
	return apperr.InvalidField("lineItems", fmt.Sprintf("required for a partial %s of a %s payment (the platform's rule "+
		"for buy-now-pay-later methods); send the items this %s covers, or the whole amount", what, h.PaymentMethod, what))
}

// alwaysBlocked are the payment methods never offered on sessions (docs/payments.md).
var alwaysBlocked = []string{"sepadirectdebit", "bacs", "directdebit_GB"}

// mergeBlocked returns alwaysBlocked ∪ extra, without duplicates, in order.
func mergeBlocked(extra []string) []string {
	out := make([]string, 0, len(alwaysBlocked)+len(extra))
	seen := make(map[string]bool, cap(out))
	for _, list := range [][]string{alwaysBlocked, extra} {
		for _, m := range list {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}
