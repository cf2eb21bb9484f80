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
	c.fail(named.aliasErr) // the reference the upstream echoes, or the notification, binds it
	// The payment these details complete: the one the request names, else
	// the one the upstream echoes.
	ref := firstNonEmpty(named.ref, resp.MerchantReference)
	if pd := resp.ActionPaymentData; resp.PSPReference == "" && pd != "" && ref != "" {
		// Another step (3-D Secure 2: the challenge after the fingerprint).
		s.recordAfter(ctx, c, RecordUpdate{Kind: UpdateAction, At: s.clock.Now(),
			Payment: &PaymentFacts{MerchantID: m.ID, SiteID: site.ID, Reference: ref, ActionPaymentData: pd}}, known{})
	}
	out := resultOf(resp)
	if out.MerchantReference == "" {
		out.MerchantReference = ref
	}
	if resp.PSPReference == "" {
		return out, nil
	}
	// Recorded from the pending record (the reference the request names,
	// else the one the upstream echoed), else from the answer.
	facts := PaymentFacts{MerchantID: m.ID, SiteID: site.ID, Reference: resp.MerchantReference, PendingReference: ref}
	if resp.Amount != nil {
		facts.Amount = *resp.Amount
	}
	u := resultUpdate(UpdateDetails, resp, facts, m.CaptureMode, s.clock.Now())
	// The record is written before the answer: finding the payment
	// another site's refuses the call, with nothing recorded.
	k := known{pending: named.pendingOf(ref, m.ID, site.ID, resp.PSPReference), createFirst: true}
	if resp.MerchantReference != "" {
		// An answer echoing the reference (the simulator's lenient
		// answers, whose /payments named the pspReference too: the head
		// exists): the head is read beside the pending record.
		k = s.readForDetails(ctx, c, ref, resp.PSPReference, k.pending)
	}
	if err := s.settle(ctx, u, k); errors.Is(err, errForeign) {
		return PaymentResult{}, s.refuseForeignDetails(ctx, resp.PSPReference, site.ID)
	} else if err != nil {
		return PaymentResult{}, apperr.Wrap(apperr.Internal, "internal error", err)
	}
	return out, nil
}

// readForDetails reads payment psp's head and, unless read already
// (pending), the pending record of reference ref.
func (s *Service) readForDetails(ctx context.Context, c *Call, ref, psp string, pending *pendingRead) known {
	var (
		k           = known{pending: pending}
		existing    Head
		existingErr error
		reads       sync.WaitGroup
	)
	reads.Go(func() { existing, existingErr = s.store.GetPayment(ctx, psp) })
	if k.pending == nil {
		if pend, found, err := pendingFor(ctx, s.store, c.Merchant.ID, c.Site.ID, ref, psp); err == nil {
			k.pending = &pendingRead{head: pend, found: found}
		}
	}
	reads.Wait()
	switch err := existingErr; {
	case err == nil:
		k.head = &existing
	case errors.Is(err, storeerr.ErrNotFound):
		k.head = &Head{PSPReference: psp}
	}
	return k
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

// pendingOf is the pending record of payment psp with reference ref as
// read (nil: not read, or not of ref).
func (n namedPending) pendingOf(ref, merchantID, siteID, psp string) *pendingRead {
	if !n.read || n.ref != ref {
		return nil
	}
	if !n.found || !pendingOf(n.head, merchantID, siteID, psp) {
		return &pendingRead{}
	}
	return &pendingRead{head: n.head, found: true}
}

// refuseForeignDetails is the refusal of details whose answer names a
// payment of another site: logged, neither recorded nor returned.
func (s *Service) refuseForeignDetails(ctx context.Context, psp, siteID string) error {
	s.log.WarnContext(ctx, "details answered for a payment of another site; not recorded, not returned",
		"pspReference", psp, "site", siteID)
	return apperr.New(apperr.PaymentNotFound, "payment not found for this site")
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
