package payments

import (
	"cmp"
	"context"
	"errors"
	"sync"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
)

// SubmitDetails submits the component's additional details
// (docs/openapi.yaml). The payment is found from the payload; its result
// is recorded before it is returned, and only when the payment belongs to
// this site (or is new to the service): another site's is refused, with
// nothing recorded.
func (s *Service) SubmitDetails(ctx context.Context, c *Call, in DetailsInput) (PaymentResult, error) {
	m, site := c.Merchant, c.Site
	// The pending record the request names (the reference the merchant
	// sent, else the one its action's paymentData leads to) is read while
	// the platform answers: off the critical path whenever the platform
	// takes longer than two reads.
	var (
		named   namedPending
		reading sync.WaitGroup
	)
	if in.Reference != "" || in.PaymentData != "" {
		reading.Go(func() { named = s.readNamedPending(ctx, m.ID, site.ID, in.Reference, in.PaymentData) })
	}
	resp, err := s.up.Details(ctx, DetailsRequest{IdempotencyKey: c.callUpstream(), Details: in.Details, PaymentData: in.PaymentData})
	reading.Wait()
	if err != nil {
		return PaymentResult{}, detailsError(upstreamError(err, apperr.DetailsFailed, "submitting details"), in.PaymentData != "")
	}
	if named.aliasErr != nil { // the reference the upstream echoes, or the notification, binds it
		s.log.WarnContext(ctx, "details: the action's paymentData could not be looked up", "err", named.aliasErr.Error())
	}
	// The payment these details complete: the one the request names, else
	// the one the upstream echoes.
	ref := cmp.Or(named.ref, resp.MerchantReference)
	if pd := resp.ActionPaymentData; resp.PSPReference == "" && pd != "" && ref != "" {
		// Another step (3-D Secure 2: the challenge after the fingerprint).
		s.after(ctx, c, "action", PendingKey(m.ID, site.ID, ref), func(ctx context.Context) error {
			return saveActionAlias(ctx, s.store, m.ID, site.ID, ref, pd, s.clock.Now())
		})
	}
	out := resultOf(resp)
	if out.MerchantReference == "" {
		out.MerchantReference = ref
	}
	psp := resp.PSPReference
	if psp == "" {
		return out, nil
	}
	// Recorded from the pending record (the reference the request names,
	// else the one the upstream echoed), else from the answer.
	req := Head{MerchantID: m.ID, SiteID: site.ID, Reference: resp.MerchantReference, CaptureMode: m.CaptureMode}
	if resp.Amount != nil {
		req.Amount = *resp.Amount
	}
	a := answerFor("details", resp, req, s.clock.Now())
	if named.read && named.ref == ref {
		a.pending = named.of(m.ID, site.ID, psp)
	} else if pend, found, err := pendingFor(ctx, s.store, m.ID, site.ID, ref, psp); err == nil && found {
		a.pending = &pend // the reference the upstream echoed (or a read that failed: again)
	}
	// The record is written before the answer: its write decides it.
	err = s.record(ctx, "details", psp, func(ctx context.Context) error { return recordPayment(ctx, s.store, a) })
	switch {
	case errors.Is(err, errForeign):
		return PaymentResult{}, s.refuseForeignDetails(ctx, psp, site.ID)
	case err != nil:
		return PaymentResult{}, apperr.Wrap(apperr.Internal, "internal error", err)
	}
	return out, nil
}

// namedPending is the pending record a details request names, as read
// while the platform answers.
type namedPending struct {
	ref      string // the reference named ("": none)
	aliasErr error  // the action's paymentData could not be looked up
	read     bool   // the pending record of ref was read
	head     Head
	found    bool
}

// readNamedPending reads the pending record of reference, else of the
// reference the action's paymentData leads to, on the site.
func (s *Service) readNamedPending(ctx context.Context, merchantID, siteID, reference, paymentData string) namedPending {
	n := namedPending{ref: reference}
	if n.ref == "" {
		if n.ref, n.aliasErr = s.referenceOfAction(ctx, merchantID, siteID, paymentData); n.aliasErr != nil || n.ref == "" {
			return n
		}
	}
	h, err := s.store.GetPayment(ctx, PendingKey(merchantID, siteID, n.ref))
	switch {
	case errors.Is(err, storeerr.ErrNotFound):
		n.read = true
	case err == nil:
		n.read, n.head, n.found = true, h, true
	}
	return n
}

// of is the pending record read, if payment psp of the site may start
// from it (nil: none).
func (n namedPending) of(merchantID, siteID, psp string) *Head {
	if !n.found || !pendingOf(n.head, merchantID, siteID, psp) {
		return nil
	}
	h := n.head
	return &h
}

// refuseForeignDetails is the refusal of details whose answer names a
// payment of another site: logged, neither recorded nor returned.
func (s *Service) refuseForeignDetails(ctx context.Context, psp, siteID string) error {
	s.log.WarnContext(ctx, "details answered for a payment of another site; not recorded, not returned",
		"pspReference", psp, "site", siteID)
	return apperr.New(apperr.PaymentNotFound, "payment not found for this site")
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
