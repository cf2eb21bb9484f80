package payments

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/jsonin"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/reqwork"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
)

// PaymentResult is the payment response of payments and payments/details:
// the upstream's resultCode, pspReference and action (unchanged), and the
// refusal reason of a refused payment.
type PaymentResult struct {
	ResultCode        string          `json:"resultCode"`
	PSPReference      string          `json:"pspReference,omitempty"`
	Action            json.RawMessage `json:"action,omitempty"`
	RefusalReason     string          `json:"refusalReason,omitempty"`
	RefusalReasonCode string          `json:"refusalReasonCode,omitempty"`
	MerchantReference string          `json:"merchantReference,omitempty"`
}

// PSP reports the pspReference for the request log.
func (r PaymentResult) PSP() string { return r.PSPReference }

func resultOf(resp upstream.PaymentResponse) PaymentResult {
	return PaymentResult{
		ResultCode: resp.ResultCode, PSPReference: resp.PSPReference, Action: resp.Action,
		RefusalReason: resp.RefusalReason, RefusalReasonCode: resp.RefusalReasonCode,
		MerchantReference: resp.MerchantReference,
	}
}

// StartPayment validates body, adds what the service controls and starts a
// payment upstream (docs/openapi.yaml). The payment record is created (or merged
// with one a notification created first).
func (s *Service) StartPayment(ctx context.Context, m tenant.Merchant, site tenant.Site, body []byte) (PaymentResult, error) {
	in, err := ParsePayment(body)
	if err != nil {
		return PaymentResult{}, err
	}
	ref := reference(ctx, in.Reference, "pay_")
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
	resp, err := s.up.Payments(ctx, req, callUpstream(ctx))
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
		reqwork.Go(ctx, func(ctx context.Context) {
			s.recordPayment(ctx, m, site, resp, "payment", record)
		})
	case resp.Action != nil || unfinished(State(resp.ResultCode)):
		// An action answer without pspReference (pending.go): recorded now,
		// bound when details or the notification name the pspReference.
		reqwork.Go(ctx, func(ctx context.Context) {
			p := record()
			applyResult(&p, resp.ResultCode, m.CaptureMode)
			p.History = []Event{{At: p.CreatedAt, Kind: "payment", Origin: OriginAPI, Detail: resp.ResultCode}}
			p.UpdatedAt = p.CreatedAt
			s.savePending(ctx, p)
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
// upstream answer. The upstream has already acted, so a store failure is
// logged rather than failing the call: the notification repairs the record.
func (s *Service) recordPayment(ctx context.Context, m tenant.Merchant, site tenant.Site, resp upstream.PaymentResponse, kind string, create func() Payment) {
	s.recordPaymentMerging(ctx, m, site, resp, kind, create, nil)
}

// recordPaymentMerging is recordPayment applying merge (when not nil) to a
// record that already exists.
func (s *Service) recordPaymentMerging(ctx context.Context, m tenant.Merchant, site tenant.Site, resp upstream.PaymentResponse, kind string, create func() Payment, merge func(*Payment)) {
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
	// there first (or on a retry) is the record read and merged.
	fresh := create()
	fresh.PSPReference = resp.PSPReference
	if err := apply(&fresh); err == nil {
		fresh.Version = 1
		if err := s.store.SavePayment(ctx, fresh, 0); err == nil {
			return
		} else if !errors.Is(err, store.ErrConflict) {
			s.log.ErrorContext(ctx, "recording payment failed", "pspReference", resp.PSPReference, "err", err.Error())
			return
		}
	}
	_, err := Mutate(ctx, s.store, resp.PSPReference, create, apply)
	if err != nil {
		s.log.ErrorContext(ctx, "recording payment failed", "pspReference", resp.PSPReference, "err", err.Error())
	}
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
func (s *Service) SubmitDetails(ctx context.Context, m tenant.Merchant, site tenant.Site, body []byte) (PaymentResult, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return PaymentResult{}, errs.Err()
	}
	details := o.RawObject("details", true)
	paymentData, _ := o.String("paymentData", false, jsonin.MaxLen(100_000))
	ref, _ := o.String("reference", false, jsonin.MaxLen(maxReference), jsonin.NotEmpty, jsonin.NoControl)
	o.Done()
	if err := errs.Err(); err != nil {
		return PaymentResult{}, err
	}
	resp, err := s.up.PaymentDetails(ctx, upstream.DetailsRequest{Details: details, PaymentData: paymentData}, callUpstream(ctx))
	if err != nil {
		return PaymentResult{}, detailsError(upstreamError(err, apperr.DetailsFailed, "submitting details"), paymentData != "")
	}
	if resp.PSPReference != "" {
		existing, err := s.store.GetPayment(ctx, resp.PSPReference)
		switch {
		case err == nil && (existing.MerchantID != m.ID || existing.SiteID != site.ID):
			s.log.WarnContext(ctx, "details answered for a payment of another site; not recorded, not returned",
				"pspReference", resp.PSPReference, "site", site.ID)
			return PaymentResult{}, apperr.New(apperr.PaymentNotFound, "payment not found for this site")
		case err != nil && !errors.Is(err, store.ErrNotFound):
			s.log.ErrorContext(ctx, "reading payment failed", "pspReference", resp.PSPReference, "err", err.Error())
		default:
			s.recordDetails(ctx, m, site, resp, firstNonEmpty(ref, resp.MerchantReference))
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
func (s *Service) recordDetails(ctx context.Context, m tenant.Merchant, site tenant.Site, resp upstream.PaymentResponse, ref string) {
	pend, found, err := pendingFor(ctx, s.store, m.ID, site.ID, ref, resp.PSPReference)
	if err != nil {
		s.log.ErrorContext(ctx, "reading pending payment failed", "pspReference", resp.PSPReference, "err", err.Error())
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
	s.recordPaymentMerging(ctx, m, site, resp, "details", create, merge)
	if found {
		s.markBound(ctx, pend, resp.PSPReference)
	}
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

// PaymentMethodsResult is the payment-methods response.
type PaymentMethodsResult struct {
	PaymentMethods       []json.RawMessage `json:"paymentMethods"`
	StoredPaymentMethods []json.RawMessage `json:"storedPaymentMethods"`
}

// PaymentMethods lists the payment methods for an amount (docs/openapi.yaml). The
// always-blocked methods are never offered, here as on sessions.
func (s *Service) PaymentMethods(ctx context.Context, m tenant.Merchant, site tenant.Site, body []byte) (PaymentMethodsResult, error) {
	var errs jsonin.Errors
	o := jsonin.Parse(body, &errs)
	if o == nil {
		return PaymentMethodsResult{}, errs.Err()
	}
	o.Forbid(serverControlled...)
	amount, _ := readAmount(o, "amount", false)
	country, _ := o.String("countryCode", false, countryRule)
	locale, _ := o.String("shopperLocale", false, localeRule)
	channel, _ := o.String("channel", false, jsonin.OneOf("Web", "iOS", "Android"))
	allowed := o.Strings("allowedPaymentMethods", false, maxBlocked, jsonin.LenBetween(1, 50), jsonin.NoControl)
	blocked := o.Strings("blockedPaymentMethods", false, maxBlocked, jsonin.LenBetween(1, 50), jsonin.NoControl)
	shopperRef, _ := o.String("shopperReference", false, shopperReferenceRule)
	o.Done()
	if err := errs.Err(); err != nil {
		return PaymentMethodsResult{}, err
	}
	if country == "" {
		country = m.Country
	}
	req := upstream.PaymentMethodsRequest{
		MerchantAccount: m.UpstreamAccount, Amount: &money.Amount{Value: amount.Value, Currency: amount.Currency},
		CountryCode: country, ShopperLocale: locale, Channel: channel, ShopperReference: shopperRef,
		AllowedPaymentMethods: allowed, BlockedPaymentMethods: mergeBlocked(blocked),
	}
	resp, err := s.up.PaymentMethods(ctx, req, callUpstream(ctx))
	if err != nil {
		return PaymentMethodsResult{}, upstreamError(err, apperr.PaymentMethodsFailed, "listing payment methods")
	}
	out := PaymentMethodsResult{PaymentMethods: resp.PaymentMethods, StoredPaymentMethods: resp.StoredPaymentMethods}
	if out.PaymentMethods == nil {
		out.PaymentMethods = []json.RawMessage{}
	}
	if out.StoredPaymentMethods == nil {
		out.StoredPaymentMethods = []json.RawMessage{}
	}
	return out, nil
}
