package payments

import (
	"context"
	"encoding/json"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/tenant"
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
// upstream (docs/openapi.yaml). The payment record is created (or merged with
// one a notification created first) alongside the rest of the request
// (c.Wait).
func (s *Service) StartPayment(ctx context.Context, c *Call, in PaymentInput) (PaymentResult, error) {
	m, site := c.Merchant, c.Site
	ref := reference(c, in.Reference, "pay_")
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
		Splits:                   Splits(m, in.Amount, ref),
		Metadata:                 routingMetadata(m, site, SourceAdvanced),
		AdditionalData:           in.AdditionalData,
		PaymentMethod:            in.PaymentMethod,
		StateData:                in.StateData,
	}
	resp, err := s.up.Pay(ctx, req)
	if err != nil {
		return PaymentResult{}, upstreamError(err, apperr.PaymentFailed, "starting the payment")
	}
	facts := PaymentFacts{
		MerchantID: m.ID, SiteID: site.ID, Reference: ref, Amount: in.Amount,
		ShopperReference: in.ShopperReference, StoredMethodID: in.StoredMethodID,
		StorePaymentMethod: in.StorePaymentMethod(), AuthorisationType: in.AuthorisationType(),
	}
	switch {
	case resp.PSPReference != "":
		s.recordAfter(ctx, c, resultUpdate(UpdatePayment, resp, facts, m.CaptureMode, s.clock.Now()), nil)
	case resp.Action != nil || unfinished(State(resp.ResultCode)):
		// An action answer without pspReference (pending.go): recorded now,
		// bound when details or the notification name the pspReference.
		facts.CaptureMode = m.CaptureMode
		facts.ActionPaymentData = resp.ActionPaymentData
		s.recordAfter(ctx, c, RecordUpdate{Kind: UpdatePending, Status: resp.ResultCode, Payment: &facts, At: s.clock.Now()}, nil)
	}
	out := resultOf(resp)
	out.MerchantReference = ref // the service knows it, whether or not the upstream echoes it
	return out, nil
}

// routingMetadata identifies merchant, site and flow in upstream calls.
func routingMetadata(m tenant.Merchant, site tenant.Site, src Source) map[string]string {
	return map[string]string{MetaMerchant: m.ID, MetaSite: site.ID, MetaSource: string(src)}
}

// resultUpdate is the record update of a payment or details answer naming
// the pspReference: what the call knew (facts) and what the answer says.
func resultUpdate(kind UpdateKind, resp PaymentAnswer, facts PaymentFacts, mode tenant.CaptureMode, at time.Time) RecordUpdate {
	facts.CaptureMode = mode
	facts.RefusalReason = resp.RefusalReason
	facts.PaymentMethod = resp.PaymentMethod
	return RecordUpdate{Kind: kind, PSPReference: resp.PSPReference, Status: resp.ResultCode, Payment: &facts, At: at}
}

// applyResult moves a record to the state of an API result code. An
// outcome a notification already recorded is never downgraded to an
// intermediate state (Pending, Received, an action), and a settled payment
// (captured, cancelled, refunded) keeps its state.
func applyResult(p *Payment, resultCode string, mode tenant.CaptureMode) {
	p.ResultCode = resultCode
	next := State(resultCode)
	if settled(p.State) || (outcome(p.State) && !outcome(next)) {
		return
	}
	p.State = next
	if p.State == StateAuthorised && p.AuthorisedValue == 0 {
		p.AuthorisedValue = p.Amount.Value
		if mode == tenant.CaptureAuto {
			p.CapturedValue = p.Amount.Value
			p.State = StateCaptured
		}
	}
}

// settled reports whether a state comes after the authorisation outcome.
func settled(s State) bool {
	switch s {
	case StateCaptured, StatePartiallyCaptured, StateCancelled, StateRefunded, StatePartiallyRefunded, StateExpired:
		return true
	}
	return false
}

// outcome reports whether a state is an authorisation outcome rather than
// a step towards one.
func outcome(s State) bool {
	switch s {
	case StateAuthorised, StateRefused, StateError, StateCancelled:
		return true
	}
	return settled(s)
}

// SubmitDetails submits the component's additional details (docs/openapi.yaml). The
// payment is found from the payload; its result is recorded only when the
// payment belongs to this site (or is new to the service).
func (s *Service) SubmitDetails(ctx context.Context, c *Call, in DetailsInput) (PaymentResult, error) {
	m, site := c.Merchant, c.Site
	resp, err := s.up.Details(ctx, DetailsRequest{IdempotencyKey: c.callUpstream(), Details: in.Details, PaymentData: in.PaymentData})
	if err != nil {
		return PaymentResult{}, detailsError(upstreamError(err, apperr.DetailsFailed, "submitting details"), in.PaymentData != "")
	}
	// The payment these details complete: the reference the merchant sent,
	// else the one its action's paymentData leads to, else the one the
	// upstream echoes.
	ref := in.Reference
	if ref == "" {
		var err error
		if ref, err = s.referenceOfAction(ctx, m.ID, site.ID, in.PaymentData); err != nil {
			c.fail(err) // the reference the upstream echoes, or the notification, binds it
		}
	}
	ref = firstNonEmpty(ref, resp.MerchantReference)
	if pd := resp.ActionPaymentData; resp.PSPReference == "" && pd != "" && ref != "" {
		// Another step (3-D Secure 2: the challenge after the fingerprint).
		s.recordAfter(ctx, c, RecordUpdate{Kind: UpdateAction, At: s.clock.Now(),
			Payment: &PaymentFacts{MerchantID: m.ID, SiteID: site.ID, Reference: ref, ActionPaymentData: pd}}, nil)
	}
	if resp.PSPReference != "" {
		existing, err := s.store.GetPayment(ctx, resp.PSPReference)
		if err == nil && (existing.MerchantID != m.ID || existing.SiteID != site.ID) {
			s.log.WarnContext(ctx, "details answered for a payment of another site; not recorded, not returned",
				"pspReference", resp.PSPReference, "site", site.ID)
			return PaymentResult{}, apperr.New(apperr.PaymentNotFound, "payment not found for this site")
		}
		// Recorded from the pending record (the reference the merchant
		// sent, else the one the upstream echoed), else from the answer;
		// a payment of another site found when it is applied (the read
		// above failed) is refused then.
		facts := PaymentFacts{MerchantID: m.ID, SiteID: site.ID, Reference: resp.MerchantReference, PendingReference: ref}
		if resp.Amount != nil {
			facts.Amount = *resp.Amount
		}
		s.recordAfter(ctx, c, resultUpdate(UpdateDetails, resp, facts, m.CaptureMode, s.clock.Now()), nil)
	}
	out := resultOf(resp)
	if out.MerchantReference == "" {
		out.MerchantReference = ref
	}
	return out, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// detailsError names the field of a details call the upstream refused: the
// upstream judges only the details (and paymentData, when sent) against the
// action it is waiting for, so its refusal is about them.
func detailsError(err error, withPaymentData bool) error {
	e := apperr.As(err)
	if e.Kind != apperr.Invalid || len(e.Fields) > 0 {
		return err
	}
	fields := []apperr.FieldError{{Field: "details", Message: e.Message}}
	if withPaymentData {
		fields = append(fields, apperr.FieldError{Field: "paymentData", Message: e.Message})
	}
	named := apperr.InvalidFields(fields)
	named.Cause = e.Cause
	return named
}

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
