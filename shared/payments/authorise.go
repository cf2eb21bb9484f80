package payments

import (
	"context"
	"encoding/json"

	"github.com/yp/paysvc/shared/apperr"
)

// PaymentResult is the result of payments and payments/details: the
// upstream's resultCode, pspReference and action (unchanged), and the
// refusal reason of a refused payment.
type PaymentResult struct {
	ResultCode        string
	PSPReference      string
	Action            json.RawMessage
	RefusalReason     string
	RefusalReasonCode string
	MerchantReference string
}

func resultOf(resp PaymentAnswer) PaymentResult {
	return PaymentResult{
		ResultCode: resp.ResultCode, PSPReference: resp.PSPReference, Action: resp.Action,
		RefusalReason: resp.RefusalReason, RefusalReasonCode: resp.RefusalReasonCode,
		MerchantReference: resp.MerchantReference,
	}
}

// StartPayment adds what the service controls to in and starts a payment
// upstream (docs/openapi.yaml). The payment's pending record, with
// everything the request knows, is written before the call: whatever of
// the answer's record writes is lost, the payment's notification or its
// details find the request's facts there. After the answer, alongside the
// rest of the request (c.Wait): the payment's head is created (or merged
// with one its notification created first) and the pending record marked
// bound to it; or, for an action answered without pspReference, the
// pending record gets the answer's result code and the action its alias.
func (s *Service) StartPayment(ctx context.Context, c *Call, in PaymentInput) (PaymentResult, error) {
	m, site := c.Merchant, c.Site
	ref := reference(c, in.Reference, "pay_")
	now := s.clock.Now()
	pend, err := savePending(ctx, s.store, Head{PSPReference: PendingKey(m.ID, site.ID, ref), MerchantID: m.ID, SiteID: site.ID,
		Reference: ref, Source: SourceAdvanced, Amount: in.Amount, ShopperReference: in.ShopperReference,
		StoredMethodID: in.StoredMethodID, StorePaymentMethod: in.StorePaymentMethod(), AuthorisationType: in.AuthorisationType(),
		CaptureMode: m.CaptureMode, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return PaymentResult{}, storeError(err)
	}
	req := PaymentRequest{
		IdempotencyKey:           c.callUpstream(),
		MerchantAccount:          m.UpstreamAccount,
		Amount:                   in.Amount,
		Reference:                ref,
		ReturnURL:                in.ReturnURL,
		CountryCode:              m.Country,
		ShopperInteraction:       in.ShopperInteraction,
		RecurringProcessingModel: in.RecurringProcessingModel,
		IndustryUsage:            in.IndustryUsage,
		ShopperReference:         in.ShopperReference,
		Splits:                   splits(m, in.Amount, ref),
		Metadata:                 routingMetadata(m, site, SourceAdvanced),
		AdditionalData:           in.AdditionalData,
		CaptureMode:              m.CaptureMode,
		PaymentMethod:            in.PaymentMethod,
		StateData:                in.StateData,
	}
	resp, err := s.up.Pay(ctx, req)
	if err != nil {
		return PaymentResult{}, upstreamError(err, apperr.PaymentFailed, "starting the payment")
	}
	at := s.clock.Now()
	switch psp := resp.PSPReference; {
	case psp != "":
		a := answerFor("payment", resp, pend, at)
		s.after(ctx, c, "payment", psp, func(ctx context.Context) error { return recordPayment(ctx, s.store, a) })
		s.after(ctx, c, "payment", psp, func(ctx context.Context) error { return markBound(ctx, s.store, pend, psp) })
	case resp.Action != nil || unfinished(State(resp.ResultCode)):
		// An action answer without pspReference (pending.go): bound when
		// details or the notification name the pspReference.
		s.after(ctx, c, "pending", pend.PSPReference, func(ctx context.Context) error {
			return answerPending(ctx, s.store, pend, resp.ResultCode, at)
		})
		s.after(ctx, c, "action", pend.PSPReference, func(ctx context.Context) error {
			return saveActionAlias(ctx, s.store, m.ID, site.ID, ref, resp.ActionPaymentData, at)
		})
	}
	out := resultOf(resp)
	out.MerchantReference = ref // the service knows it, whether or not the upstream echoes it
	return out, nil
}
