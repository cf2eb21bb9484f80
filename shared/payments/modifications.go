package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// ModificationResult is the result of captures, refunds, reversals and
// amount updates: the operation's pspReference and status ("received"),
// plus the payment's pspReference and the operation's reference.
type ModificationResult struct {
	PSPReference        string
	Status              string
	PaymentPSPReference string
	Reference           string
}

// answered records the platform's answer to operation e of payment psp
// (its call returned resp, err) alongside the rest of the request
// (c.Wait), and returns the endpoint's result: a definitive refusal ends
// the operation; no definitive answer leaves it in flight, to be learnt by
// repeating the call (the merchant's retry, or Recover); an in-flight
// duplicate records nothing (its first call does).
func (s *Service) answered(ctx context.Context, c *Call, psp string, e Entry, resp ModificationAnswer, err error,
	failed apperr.Kind, what string) (ModificationResult, error) {
	if u, ok := answerUpdate(psp, e, resp, err, s.clock.Now()); ok {
		s.recordAfter(ctx, c, u, known{entry: &e})
	}
	if err != nil {
		return ModificationResult{}, upstreamError(err, failed, what)
	}
	return ModificationResult{PSPReference: resp.PSPReference, Status: resp.Status, PaymentPSPReference: psp, Reference: resp.Reference}, nil
}

// answerUpdate is the record update of operation e's call returning resp,
// err: received, refused or unknown; none for an in-flight duplicate.
func answerUpdate(psp string, e Entry, resp ModificationAnswer, err error, at time.Time) (RecordUpdate, bool) {
	u := RecordUpdate{Kind: updateKind(e.Kind), PSPReference: psp, Op: e.Ref, Amount: e.Requested.Amount, At: at}
	rej := (*UpstreamRejection)(nil)
	switch {
	case err == nil:
		u.Modification, u.Status = resp.PSPReference, string(Received)
	case errors.Is(err, ErrUpstreamInFlight):
		return RecordUpdate{}, false
	case errors.As(err, &rej):
		u.Status, u.Reason = string(Refused), rej.Message
	default:
		u.Status = string(Unknown)
	}
	return u, true
}

// Reader reads payment heads (the lookups read through it too).
type Reader interface {
	GetPayment(ctx context.Context, psp string) (Head, error)
}

// Owned returns payment psp of this merchant and site, or
// apperr.PaymentNotFound for an unknown one and for one of another
// merchant or site alike (and for the service's internal records).
func Owned(ctx context.Context, st Reader, m tenant.Merchant, site tenant.Site, psp string) (Head, error) {
	notFound := apperr.New(apperr.PaymentNotFound, "payment not found for this site")
	if psp == "" || len(psp) > maxPSPReference || IsPendingKey(psp) {
		return Head{}, notFound
	}
	h, err := st.GetPayment(ctx, psp)
	if errors.Is(err, storeerr.ErrNotFound) {
		return Head{}, notFound
	}
	if err != nil {
		return Head{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read payment %s: %w", psp, err))
	}
	if h.MerchantID != m.ID || h.SiteID != site.ID || h.BoundTo != "" {
		return Head{}, notFound
	}
	return h, nil
}

// maxPSPReference bounds a pspReference in a path.
const maxPSPReference = 64

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
