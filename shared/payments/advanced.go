package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
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

func resultOf(resp upstream.PaymentResponse) PaymentResult {
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
	req := upstream.PaymentRequest{
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
		Extra:                    in.StateData,
	}
	resp, err := s.up.Payments(ctx, req, c.callUpstream())
	if err != nil {
		return PaymentResult{}, upstreamError(err, apperr.PaymentFailed, "starting the payment")
	}
	if resp.PSPReference != "" {
		c.record(ctx, func(ctx context.Context) error {
			return s.recordPayment(ctx, m, site, resp, "payment", func() Payment {
				return Payment{
					MerchantID: m.ID, SiteID: site.ID, Reference: ref, Source: SourceAdvanced,
					Amount: in.Amount, ShopperReference: in.ShopperReference, StoredMethodID: in.StoredMethodID,
					CreatedAt: s.clock.Now(),
				}
			})
		})
	}
	return resultOf(resp), nil
}

// routingMetadata identifies merchant, site and flow in upstream calls.
func routingMetadata(m tenant.Merchant, site tenant.Site, src Source) map[string]string {
	return map[string]string{MetaMerchant: m.ID, MetaSite: site.ID, MetaSource: string(src)}
}

// recordPayment creates or updates the record of a payment after an
// upstream answer. The upstream has already acted, so its caller does not
// fail the call on the error it returns: the notification repairs the
// record.
func (s *Service) recordPayment(ctx context.Context, m tenant.Merchant, site tenant.Site, resp upstream.PaymentResponse, kind string, create func() Payment) error {
	now := s.clock.Now()
	apply := func(p *Payment) error {
		if p.MerchantID != m.ID || (p.SiteID != "" && p.SiteID != site.ID) {
			return errForeign
		}
		if p.SiteID == "" {
			p.SiteID = site.ID
		}
		applyResult(p, resp.ResultCode, m.CaptureMode)
		if resp.RefusalReason != "" {
			p.RefusalReason = resp.RefusalReason
		}
		if resp.PaymentMethod != nil && resp.PaymentMethod.Type != "" {
			p.PaymentMethod = resp.PaymentMethod.Type
			if resp.PaymentMethod.Brand != "" {
				p.PaymentMethod = resp.PaymentMethod.Brand
			}
		}
		p.History = append(p.History, Event{At: now, Kind: kind, Origin: "api", PSPReference: resp.PSPReference, Detail: resp.ResultCode})
		p.UpdatedAt = now
		return nil
	}
	// A new payment is one create-only write; only when a notification got
	// there first (or on a retry) is the record read and merged.
	fresh := create()
	fresh.PSPReference = resp.PSPReference
	if err := apply(&fresh); err == nil {
		fresh.Version = 1
		if err := s.store.SavePayment(ctx, fresh, 0); err == nil {
			return nil
		} else if !errors.Is(err, storeerr.ErrConflict) {
			return fmt.Errorf("record payment %s: %w", resp.PSPReference, err)
		}
	}
	if _, err := Mutate(ctx, s.store, resp.PSPReference, create, apply); err != nil {
		return fmt.Errorf("record payment %s: %w", resp.PSPReference, err)
	}
	return nil
}

var errForeign = errors.New("payment belongs to another merchant or site")

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
	resp, err := s.up.PaymentDetails(ctx, upstream.DetailsRequest{Details: in.Details, PaymentData: in.PaymentData}, c.callUpstream())
	if err != nil {
		return PaymentResult{}, detailsError(upstreamError(err, apperr.DetailsFailed, "submitting details"), in.PaymentData != "")
	}
	if resp.PSPReference != "" {
		existing, err := s.store.GetPayment(ctx, resp.PSPReference)
		switch {
		case err == nil && (existing.MerchantID != m.ID || existing.SiteID != site.ID):
			s.log.WarnContext(ctx, "details answered for a payment of another site; not recorded, not returned",
				"pspReference", resp.PSPReference, "site", site.ID)
			return PaymentResult{}, apperr.New(apperr.PaymentNotFound, "payment not found for this site")
		case err != nil && !errors.Is(err, storeerr.ErrNotFound):
			// The upstream has answered: its result stands, and the
			// notification records the payment.
			c.fail(fmt.Errorf("read payment %s after details: %w", resp.PSPReference, err))
		default:
			err := s.recordPayment(ctx, m, site, resp, "details", func() Payment {
				p := Payment{MerchantID: m.ID, SiteID: site.ID, Reference: resp.MerchantReference, Source: SourceAdvanced, CreatedAt: s.clock.Now()}
				if resp.Amount != nil {
					p.Amount = *resp.Amount
				}
				return p
			})
			c.fail(err)
		}
	}
	return resultOf(resp), nil
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
	req := upstream.PaymentMethodsRequest{
		MerchantAccount: m.UpstreamAccount, Amount: &money.Amount{Value: in.Amount.Value, Currency: in.Amount.Currency},
		CountryCode: country, ShopperLocale: in.ShopperLocale, Channel: in.Channel, ShopperReference: in.ShopperReference,
		AllowedPaymentMethods: in.AllowedPaymentMethods, BlockedPaymentMethods: mergeBlocked(in.BlockedPaymentMethods),
	}
	resp, err := s.up.PaymentMethods(ctx, req, c.callUpstream())
	if err != nil {
		return PaymentMethodsResult{}, upstreamError(err, apperr.PaymentMethodsFailed, "listing payment methods")
	}
	return PaymentMethodsResult{PaymentMethods: resp.PaymentMethods, StoredPaymentMethods: resp.StoredPaymentMethods}, nil
}
