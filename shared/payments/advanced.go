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
	record := func() Payment {
		return Payment{
			MerchantID: m.ID, SiteID: site.ID, Reference: ref, Source: SourceAdvanced,
			Amount: in.Amount, ShopperReference: in.ShopperReference, StoredMethodID: in.StoredMethodID,
			StorePaymentMethod: in.StorePaymentMethod(), AuthorisationType: in.AuthorisationType(),
			CreatedAt: s.clock.Now(),
		}
	}
	switch {
	case resp.PSPReference != "":
		c.record(ctx, func(ctx context.Context) error {
			return s.recordPayment(ctx, m, site, resp, "payment", record)
		})
	case resp.Action != nil || unfinished(State(resp.ResultCode)):
		// An action answer without pspReference (pending.go): recorded now,
		// bound when details or the notification name the pspReference.
		c.record(ctx, func(ctx context.Context) error {
			p := record()
			applyResult(&p, resp.ResultCode, m.CaptureMode)
			p.History = []Event{{At: p.CreatedAt, Kind: "payment", Origin: OriginAPI, Detail: resp.ResultCode}}
			p.UpdatedAt = p.CreatedAt
			return errors.Join(s.savePending(ctx, p), s.saveActionAlias(ctx, m.ID, site.ID, ref, resp.Action))
		})
	}
	out := resultOf(resp)
	out.MerchantReference = ref // the service knows it, whether or not the upstream echoes it
	return out, nil
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
	return s.recordPaymentMerging(ctx, m, site, resp, kind, create, nil)
}

// recordPaymentMerging is recordPayment applying merge (when not nil) to a
// record that already exists.
func (s *Service) recordPaymentMerging(ctx context.Context, m tenant.Merchant, site tenant.Site, resp upstream.PaymentResponse, kind string, create func() Payment, merge func(*Payment)) error {
	now := s.clock.Now()
	apply := func(p *Payment) error {
		if p.MerchantID != m.ID || (p.SiteID != "" && p.SiteID != site.ID) {
			return errForeign
		}
		if p.SiteID == "" {
			p.SiteID = site.ID
		}
		if merge != nil {
			merge(p)
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
	// there first (or on a retry) is the record read and merged, the
	// request's facts filling what the notification could not know (its
	// authorisation type, the shopper, card storage).
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
	req := create()
	if _, err := Mutate(ctx, s.store, resp.PSPReference, create, func(p *Payment) error {
		if p.Version != 0 {
			fillRequestFacts(p, req)
		}
		return apply(p)
	}); err != nil {
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
	if resp.PSPReference == "" && resp.Action != nil {
		// Another step (3-D Secure 2: the challenge after the fingerprint).
		c.fail(s.saveActionAlias(ctx, m.ID, site.ID, ref, resp.Action))
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
			c.fail(s.recordDetails(ctx, m, site, resp, ref))
		}
	}
	out := resultOf(resp)
	if out.MerchantReference == "" {
		out.MerchantReference = ref
	}
	return out, nil
}

// recordDetails records a details answer naming pspReference: the record
// starts from the payment's pending record (found by the reference the
// merchant sent, else the one the upstream echoed) and the pending record
// is marked bound; without one, from what the answer carries.
func (s *Service) recordDetails(ctx context.Context, m tenant.Merchant, site tenant.Site, resp upstream.PaymentResponse, ref string) error {
	pend, found, err := pendingFor(ctx, s.store, m.ID, site.ID, ref, resp.PSPReference)
	if err != nil {
		err = fmt.Errorf("read pending payment %s: %w", ref, err) // recorded from the answer; the notification binds it
	}
	create := func() Payment {
		if found {
			return fromPending(pend, resp.PSPReference)
		}
		p := Payment{MerchantID: m.ID, SiteID: site.ID, Reference: resp.MerchantReference, Source: SourceAdvanced, CreatedAt: s.clock.Now()}
		if resp.Amount != nil {
			p.Amount = *resp.Amount
		}
		return p
	}
	var merge func(*Payment)
	if found {
		merge = func(p *Payment) { mergePending(p, pend) }
	}
	errs := []error{err, s.recordPaymentMerging(ctx, m, site, resp, "details", create, merge)}
	if found {
		errs = append(errs, markBound(ctx, s.store, pend, resp.PSPReference))
	}
	return errors.Join(errs...)
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
