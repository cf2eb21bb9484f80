package payments

import (
	"context"
	"errors"
	"sync"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
)

// SubmitDetails submits the component's additional details (docs/openapi.yaml). The
// payment is found from the payload; its result is recorded only when the
// payment belongs to this site (or is new to the service).
func (s *Service) SubmitDetails(ctx context.Context, c *Call, in DetailsInput) (PaymentResult, error) {
	m, site := c.Merchant, c.Site
	resp, err := s.up.Details(ctx, DetailsRequest{IdempotencyKey: c.callUpstream(), Details: in.Details, PaymentData: in.PaymentData})
	if err != nil {
		return PaymentResult{}, detailsError(upstreamError(err, apperr.DetailsFailed, "submitting details"), in.PaymentData != "")
	}
	if resp.PSPReference != "" && in.Reference == "" && in.PaymentData == "" && resp.MerchantReference == "" {
		// Nothing names a pending record (the platform's answer to a
		// redirect's or a challenge's bare details): the payment is
		// recorded create-first, without reading its head, with the
		// merchant's answer in the same write (Call.Commit); a head found
		// to exist is read then, and one of another site refuses the call
		// (Call.Refusal).
		facts := PaymentFacts{MerchantID: m.ID, SiteID: site.ID}
		if resp.Amount != nil {
			facts.Amount = *resp.Amount
		}
		s.recordWithAnswer(ctx, c, resultUpdate(UpdateDetails, resp, facts, m.CaptureMode, s.clock.Now()))
		return resultOf(resp), nil
	}
	// The payment's head, if stored, is read alongside its pending record.
	var (
		existing    Head
		existingErr error
		reads       sync.WaitGroup
	)
	if resp.PSPReference != "" {
		reads.Go(func() { existing, existingErr = s.store.GetPayment(ctx, resp.PSPReference) })
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
			Payment: &PaymentFacts{MerchantID: m.ID, SiteID: site.ID, Reference: ref, ActionPaymentData: pd}}, known{})
	}
	if resp.PSPReference != "" {
		var k known
		if pend, found, err := pendingFor(ctx, s.store, m.ID, site.ID, ref, resp.PSPReference); err == nil {
			k.pending = &pendingRead{head: pend, found: found}
		}
		reads.Wait()
		err := existingErr
		switch {
		case err == nil:
			k.head = &existing
		case errors.Is(err, storeerr.ErrNotFound):
			k.head = &Head{PSPReference: resp.PSPReference}
		}
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
		s.recordAfter(ctx, c, resultUpdate(UpdateDetails, resp, facts, m.CaptureMode, s.clock.Now()), k)
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
