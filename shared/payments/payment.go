package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
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
	at := s.clock.Now()
	switch psp := resp.PSPReference; {
	case psp != "":
		a := answerFor("payment", resp, pend, at)
		s.after(ctx, c, "payment", psp, func(ctx context.Context) error { return recordPayment(ctx, s.store, a, nil) })
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

// routingMetadata identifies merchant, site and flow in upstream calls.
func routingMetadata(m tenant.Merchant, site tenant.Site, src Source) map[string]string {
	return map[string]string{MetaMerchant: m.ID, MetaSite: site.ID, MetaSource: string(src)}
}

// outcome reports whether a result code is an authorisation outcome rather
// than a step towards one.
func outcome(s State) bool {
	switch s {
	case StateAuthorised, StateRefused, StateError, StateCancelled:
		return true
	}
	return false
}

// paymentAnswer is what a /payments or /payments/details answer naming
// the payment's pspReference records.
type paymentAnswer struct {
	kind string // "payment" or "details": its line in the timeline
	psp  string
	// req is what the request knew of the payment: merchant, site and,
	// for a payment, everything (its pending record); for details, what
	// the answer echoed.
	req Head
	// pending, when set, is the pending record the payment starts from and
	// binds (details naming it).
	pending                              *Head
	status, refusalReason, paymentMethod string
	at                                   time.Time
}

// answerFor is the record of answer resp of kind, given what the request
// knew (req).
func answerFor(kind string, resp PaymentAnswer, req Head, at time.Time) paymentAnswer {
	return paymentAnswer{kind: kind, psp: resp.PSPReference, req: req, status: resp.ResultCode,
		refusalReason: resp.RefusalReason, paymentMethod: resp.PaymentMethod, at: at}
}

// recordPayment creates or updates payment a.psp's head from answer a,
// starting from start (the head as read: Version 0 none; nil: not read).
// A new payment not starting from a pending record is one create-only
// write; the head is read only when one exists. errForeign when it is
// another merchant's or site's: nothing is recorded.
func recordPayment(ctx context.Context, st Store, a paymentAnswer, start *Head) error {
	fact := Fact{ID: "answer#" + a.kind + "#" + a.status, At: a.at, Kind: a.kind, Origin: OriginAPI,
		PSPReference: a.psp, Detail: a.status}
	switch {
	case a.pending == nil && (start == nil || start.Version == 0):
		h := a.newHead()
		h.answered(a.status)
		h.UpdatedAt, h.Version = a.at, 1
		err := st.Write(ctx, Write{PSP: a.psp, Put: &h, Facts: []Fact{fact}})
		if !errors.Is(err, storeerr.ErrConflict) {
			if err != nil {
				return fmt.Errorf("record payment %s: %w", a.psp, err)
			}
			return nil
		}
		start = nil // the head exists: read it
	case start == nil:
		start = &Head{PSPReference: a.psp} // created from the pending record, unless one exists
	}
	return updatePayment(ctx, st, a, start, fact)
}

// updatePayment is recordPayment's update of a head that exists, or of
// one that starts from a.pending, which is marked bound alongside.
func updatePayment(ctx context.Context, st Store, a paymentAnswer, start *Head, fact Fact) error {
	facts := []Fact{fact}
	var bound sync.WaitGroup
	var bindErr error
	if a.pending != nil {
		facts = append(facts, boundFacts(*a.pending, a.at)...)
		// A later attempt finds the pending record bound to psp and
		// starts from it again.
		bound.Go(func() { bindErr = markBound(ctx, st, *a.pending, a.psp) })
	}
	_, err := updateHead(ctx, st, a.psp, start, func(h *Head) error {
		stored := h.clone()
		if h.Version == 0 {
			*h = a.newHead()
		}
		if h.MerchantID != a.req.MerchantID || (h.SiteID != "" && h.SiteID != a.req.SiteID) {
			return fmt.Errorf("%w: payment %s", errForeign, a.psp)
		}
		a.fill(h)
		h.answered(a.status)
		if stored.Version != 0 && reflect.DeepEqual(*h, stored) {
			return ErrSkip // the same answer again (a replay): nothing new
		}
		h.UpdatedAt = later(h.UpdatedAt, a.at)
		return nil
	}, facts...)
	bound.Wait()
	if a.pending != nil && errors.Is(err, errForeign) && bindErr == nil {
		// Bound alongside a create that found another site's payment: the
		// pending record is this site's, and psp not its payment.
		bindErr = unbind(ctx, st, *a.pending, a.psp)
	}
	if err != nil {
		err = fmt.Errorf("record payment %s: %w", a.psp, err)
	}
	return errors.Join(err, bindErr)
}

// answered moves the head to an answer's result code: an outcome is never
// downgraded to a step towards one (Pending, Received, an action), and
// the authorised amount follows an authorisation.
func (h *Head) answered(resultCode string) {
	if outcome(State(h.Auth.ResultCode)) && !outcome(State(resultCode)) {
		return
	}
	before := h.authContribution()
	h.Auth.ResultCode = resultCode
	if h.AuthStatus() == StateAuthorised && h.Authorised == 0 {
		h.Authorised = h.Amount.Value
	}
	h.Totals = h.Totals.Sub(before).Add(h.authContribution())
}

// newHead is the head answer a creates when none exists: from its pending
// record, else from what the request knew.
func (a paymentAnswer) newHead() Head {
	if a.pending != nil {
		h := fromPending(*a.pending, a.psp)
		a.fill(&h)
		return h
	}
	h := Head{PSPReference: a.psp, MerchantID: a.req.MerchantID, SiteID: a.req.SiteID, Source: SourceAdvanced, CreatedAt: a.at}
	a.fill(&h)
	return h
}

// fill fills what head h lacks from what the request knew and the answer
// said.
func (a paymentAnswer) fill(h *Head) {
	if a.pending != nil {
		fillRequestFacts(h, *a.pending)
	}
	if h.SiteID == "" {
		h.SiteID = a.req.SiteID
	}
	fillRequestFacts(h, a.req)
	if a.refusalReason != "" {
		h.RefusalReason = a.refusalReason
	}
	if a.paymentMethod != "" {
		h.PaymentMethod = a.paymentMethod
	}
}

// updateHead applies fn to payment psp's head (Version 0: none stored)
// and writes it conditionally on its version, with facts, re-reading and
// re-applying on a concurrent change, and returns it as written. The first
// attempt starts from start when it is set (the head as the caller read
// it; Version 0: none, so the write creates it) instead of reading. fn
// returning ErrSkip writes nothing.
func updateHead(ctx context.Context, st Store, psp string, start *Head, fn func(*Head) error, facts ...Fact) (Head, error) {
	for attempt := 1; ; attempt++ {
		var h Head
		var err error
		if attempt == 1 && start != nil {
			h = start.clone()
		} else if h, err = st.GetPayment(ctx, psp); errors.Is(err, storeerr.ErrNotFound) {
			h, err = Head{PSPReference: psp}, nil
		}
		if err != nil {
			return Head{}, err
		}
		next := h.clone()
		if err := fn(&next); err != nil {
			if errors.Is(err, ErrSkip) {
				return h, nil
			}
			return Head{}, err
		}
		next.PSPReference, next.Version = psp, h.Version+1
		err = st.Write(ctx, Write{PSP: psp, Put: &next, Facts: facts})
		if !errors.Is(err, storeerr.ErrConflict) {
			return next, err
		}
		if attempt == maxSettleAttempts {
			return Head{}, fmt.Errorf("update payment %s: %w: %w", psp, ErrBusy, storeerr.ErrConflict)
		}
		if err := WaitToRetry(ctx, nil, attempt); err != nil {
			return Head{}, err
		}
	}
}

// ErrSkip tells updateHead that fn decided to change nothing.
var ErrSkip = errors.New("payments: no change")

// clone copies the parts of h a change may modify in place.
func (h Head) clone() Head {
	h.AmountUpdates = append([]AmountUpdate(nil), h.AmountUpdates...)
	if h.Auth.Notified != nil {
		ok := *h.Auth.Notified
		h.Auth.Notified = &ok
	}
	return h
}
