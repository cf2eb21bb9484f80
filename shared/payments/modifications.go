package payments

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// ModificationResult is the result of captures, reversals and amount
// updates: the operation's pspReference and status ("received"), plus the
// payment's pspReference and the operation's reference.
type ModificationResult struct {
	PSPReference        string
	Status              string
	PaymentPSPReference string
	Reference           string
}

func modificationResult(psp string, resp ModificationAnswer) ModificationResult {
	return ModificationResult{PSPReference: resp.PSPReference, Status: resp.Status, PaymentPSPReference: psp, Reference: resp.Reference}
}

// Reader reads payment records (the lookups read through it too).
type Reader interface {
	GetPayment(ctx context.Context, pspReference string) (Payment, error)
}

// Owned returns payment psp of this merchant and site, or
// apperr.PaymentNotFound for an unknown one and for one of another
// merchant or site alike (and for the service's internal records).
func Owned(ctx context.Context, st Reader, m tenant.Merchant, site tenant.Site, psp string) (Payment, error) {
	notFound := apperr.New(apperr.PaymentNotFound, "payment not found for this site")
	if psp == "" || len(psp) > maxPSPReference || IsPendingKey(psp) {
		return Payment{}, notFound
	}
	p, err := st.GetPayment(ctx, psp)
	if errors.Is(err, storeerr.ErrNotFound) {
		return Payment{}, notFound
	}
	if err != nil {
		return Payment{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read payment %s: %w", psp, err))
	}
	if p.MerchantID != m.ID || p.SiteID != site.ID || p.BoundTo != "" {
		return Payment{}, notFound
	}
	return p, nil
}

// maxPSPReference bounds a pspReference in a path.
const maxPSPReference = 64

// opReference names one modification attempt for reservations: derived
// from the Idempotency-Key when there is one, so a retry matches.
func opReference(c *Call) string {
	if k := c.UpstreamKey; k != "" {
		return opPrefix + k
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return opPrefix + hex.EncodeToString(b)
}

func capturedState(p *Payment) State {
	switch {
	case p.CapturedValue <= 0:
		return StateAuthorised // every capture failed or was released
	case p.CapturedValue >= p.AuthorisedValue:
		return StateCaptured
	}
	return StatePartiallyCaptured
}

// Capture captures (part of) an authorised payment (docs/openapi.yaml). The amount
// is reserved on the record before the upstream call, so concurrent
// captures can never exceed the authorised amount; a failed call releases
// it. The record's update after the upstream's answer runs alongside the
// rest of the request (c.Wait).
func (s *Service) Capture(ctx context.Context, c *Call, psp string, in CaptureInput) (ModificationResult, error) {
	m := c.Merchant
	amount, ref := in.Amount, in.Reference
	owned, err := Owned(ctx, s.store, m, c.Site, psp)
	if err != nil {
		return ModificationResult{}, err
	}
	op := opReference(c)
	now := s.clock.Now()
	reserved, err := MutateFrom(ctx, s.store, owned, func(p *Payment) error {
		if _, ok := p.Reservations[op]; ok {
			return ErrSkip // this retry's amount is already reserved
		}
		if p.amountUpdateInFlight("", now) {
			return errWait // capture against the amount the upstream settles on
		}
		if p.State != StateAuthorised && p.State != StatePartiallyCaptured {
			return apperr.Newf(apperr.Invalid, "payment in state %s cannot be captured", p.State)
		}
		if amount.Currency != p.Amount.Currency {
			return apperr.InvalidField("amount.currency", "must be the payment's currency, "+p.Amount.Currency)
		}
		if amount.Value > p.Remaining() {
			return apperr.InvalidField("amount.value", fmt.Sprintf("must be at most the authorised amount not yet captured (%d)", p.Remaining()))
		}
		if p.Reservations == nil {
			p.Reservations = map[string]int64{}
		}
		p.Reservations[op] = amount.Value
		p.CapturedValue += amount.Value
		p.History = append(p.History, Event{At: now, Kind: "capture-requested", Origin: "api", PSPReference: op, Amount: &amount})
		p.UpdatedAt = now
		return nil
	})
	if err != nil {
		return ModificationResult{}, recordError(err)
	}
	resp, err := s.up.Modify(ctx, ModificationRequest{Kind: ModifyCapture, IdempotencyKey: c.callUpstream(), PSPReference: psp,
		MerchantAccount: m.UpstreamAccount, Amount: amount, Reference: ref, Splits: Splits(m, amount, orRef(ref, psp)),
	})
	u := RecordUpdate{Kind: UpdateCapture, PSPReference: psp, Op: op, Amount: amount, At: s.clock.Now()}
	if err != nil {
		u.Kind = UpdateCaptureRelease
		s.recordAfter(ctx, c, u, &reserved)
		return ModificationResult{}, upstreamError(err, apperr.CaptureFailed, "capture")
	}
	u.Modification, u.Status = resp.PSPReference, resp.Status
	s.recordAfter(ctx, c, u, &reserved)
	return modificationResult(psp, resp), nil
}

func orRef(ref, psp string) string {
	if ref != "" {
		return ref
	}
	return psp
}

// recordError passes domain errors through and wraps store failures.
func recordError(err error) error {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, ErrBusy) {
		return apperr.Wrap(apperr.PaymentBusy, "too many concurrent changes to this payment; retry with the same Idempotency-Key", err)
	}
	return apperr.Wrap(apperr.Internal, "internal error", err)
}

// reversible reports whether a payment in state st can be reversed.
func reversible(st State) bool {
	switch st {
	case StateAuthorised, StatePartiallyCaptured, StateCaptured, StatePartiallyRefunded:
		return true
	}
	return false
}

// Reverse cancels a payment not yet captured or refunds a captured one
// (docs/openapi.yaml); the upstream chooses, and the record follows its choice
// optimistically until the CANCEL_OR_REFUND notification confirms it.
func (s *Service) Reverse(ctx context.Context, c *Call, psp string, in ReversalInput) (ModificationResult, error) {
	m := c.Merchant
	p, err := Owned(ctx, s.store, m, c.Site, psp)
	if err != nil {
		return ModificationResult{}, err
	}
	if !reversible(p.State) {
		return ModificationResult{}, apperr.Newf(apperr.Invalid, "payment in state %s cannot be reversed", p.State)
	}
	resp, err := s.up.Modify(ctx, ModificationRequest{Kind: ModifyReversal, IdempotencyKey: c.callUpstream(), PSPReference: psp,
		MerchantAccount: m.UpstreamAccount, Reference: in.Reference})
	if err != nil {
		return ModificationResult{}, upstreamError(err, apperr.ReversalFailed, "reversal")
	}
	s.recordAfter(ctx, c, RecordUpdate{Kind: UpdateReversal, PSPReference: psp, Modification: resp.PSPReference,
		Status: resp.Status, At: s.clock.Now()}, &p)
	return modificationResult(psp, resp), nil
}

// UpdateAmount changes the authorised amount of a payment not yet captured
// (docs/openapi.yaml).
func (s *Service) UpdateAmount(ctx context.Context, c *Call, psp string, in AmountUpdateInput) (ModificationResult, error) {
	m := c.Merchant
	amount, ref := in.Amount, in.Reference
	p, err := Owned(ctx, s.store, m, c.Site, psp)
	if err != nil {
		return ModificationResult{}, err
	}
	if p.AuthorisationType != AuthorisationPreAuth {
		return ModificationResult{}, apperr.InvalidField("pspReference",
			"the payment is not a pre-authorisation: only a payment started with additionalData.authorisationType PreAuth can have its amount updated")
	}
	// Mark the update in flight: captures and other amount updates of the
	// payment wait until it is answered, so the record ends on the amount
	// the upstream ends on (409 yp_2005 if the wait is too long).
	op := opReference(c)
	now := s.clock.Now()
	marked, err := MutateFrom(ctx, s.store, p, func(p *Payment) error {
		if p.amountUpdateInFlight(op, now) {
			return errWait
		}
		if p.State != StateAuthorised || p.CapturedValue > 0 {
			return apperr.Newf(apperr.Invalid, "the amount of a payment in state %s cannot be updated (only authorised, not yet captured)", p.State)
		}
		if amount.Currency != p.Amount.Currency {
			return apperr.InvalidField("amount.currency", "must be the payment's currency, "+p.Amount.Currency)
		}
		p.AmountUpdate = &InFlight{Op: op, Since: now}
		return nil
	})
	if err != nil {
		return ModificationResult{}, recordError(err)
	}
	resp, err := s.up.Modify(ctx, ModificationRequest{Kind: ModifyAmount, IdempotencyKey: c.callUpstream(), PSPReference: psp,
		MerchantAccount: m.UpstreamAccount, Amount: amount, Reference: ref, Splits: Splits(m, amount, orRef(ref, psp)),
	})
	u := RecordUpdate{Kind: UpdateAmount, PSPReference: psp, Op: op, Amount: amount, At: s.clock.Now()}
	if err != nil {
		u.Kind = UpdateAmountRelease
		s.recordAfter(ctx, c, u, &marked)
		return ModificationResult{}, upstreamError(err, apperr.AmountUpdateFailed, "amount update")
	}
	u.Modification, u.Status = resp.PSPReference, resp.Status
	s.recordAfter(ctx, c, u, &marked)
	return modificationResult(psp, resp), nil
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
