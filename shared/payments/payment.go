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
		s.recordAfter(ctx, c, resultUpdate(UpdatePayment, resp, facts, m.CaptureMode, s.clock.Now()), known{})
	case resp.Action != nil || unfinished(State(resp.ResultCode)):
		// An action answer without pspReference (pending.go): recorded now,
		// bound when details or the notification name the pspReference.
		s.recordAfter(ctx, c, pendingUpdate(resp, facts, m.CaptureMode, s.clock.Now()), known{})
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

// pendingUpdate is the record update of an action answer without
// pspReference: what the call knew (facts) and the action's paymentData.
// (facts is a parameter so that StartPayment's stays off the heap.)
func pendingUpdate(resp PaymentAnswer, facts PaymentFacts, mode tenant.CaptureMode, at time.Time) RecordUpdate {
	facts.CaptureMode = mode
	facts.ActionPaymentData = resp.ActionPaymentData
	return RecordUpdate{Kind: UpdatePending, Status: resp.ResultCode, Payment: &facts, At: at}
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

// recordResult creates or updates the head of a payment after a payment
// or details answer naming its pspReference. A details answer starts from
// the payment's pending record (found by PendingReference), which is then
// marked bound. What k holds (the request's reads after the answer) is
// not read again.
func recordResult(ctx context.Context, st Store, u RecordUpdate, k known) error {
	f, psp := u.Payment, u.PSPReference
	var pend Head
	var found bool
	switch {
	case u.Kind != UpdateDetails:
	case k.pending != nil:
		pend, found = k.pending.head, k.pending.found
	default:
		var err error
		if pend, found, err = pendingFor(ctx, st, f.MerchantID, f.SiteID, f.PendingReference, psp); err != nil {
			return fmt.Errorf("read pending payment %s: %w", f.PendingReference, err)
		}
	}
	fact := Fact{ID: "answer#" + string(u.Kind) + "#" + u.Status, At: u.At, Kind: string(u.Kind), Origin: OriginAPI,
		PSPReference: psp, Detail: u.Status}
	exists := k.head != nil && k.head.Version != 0
	if !found && !exists { // a new payment is one create-only write; the read follows only if one exists
		h := f.newHead(psp, u.At)
		h.answered(u.Status)
		h.UpdatedAt, h.Version = u.At, 1
		err := st.Write(ctx, Write{PSP: psp, Put: &h, Facts: []Fact{fact}})
		if !errors.Is(err, storeerr.ErrConflict) {
			if err != nil {
				return fmt.Errorf("record payment %s: %w", psp, err)
			}
			return nil
		}
		k.createFirst = false // the head exists: read it
	}
	return updateResult(ctx, st, u, k, fact, pend, found)
}

// errForeign: a payment or details answer names a payment of another
// merchant or site; it is not recorded.
var errForeign = fmt.Errorf("%w: the payment belongs to another merchant or site", ErrUpdateRefused)

// updateResult is recordResult's update of a head that exists, or of one
// that starts from pending record pend (when found). Apart, so that the
// path creating a new payment keeps what this one captures off the heap.
func updateResult(ctx context.Context, st Store, u RecordUpdate, k known, fact Fact, pend Head, found bool) error {
	f, psp := u.Payment, u.PSPReference
	facts := []Fact{fact}
	if found {
		facts = append(facts, boundFact(pend, u.At))
	}
	// The pending record is marked bound alongside: a later attempt finds
	// it bound to psp and starts from it again.
	var bound sync.WaitGroup
	var bindErr error
	if found {
		bound.Go(func() { bindErr = markBound(ctx, st, pend, psp) })
	}
	start := k.head
	if start == nil && k.createFirst {
		start = &Head{PSPReference: psp}
	}
	err := updateHead(ctx, st, psp, start, func(h *Head) error {
		stored := h.clone()
		if h.Version == 0 {
			*h = f.newHead(psp, u.At)
			if found {
				*h = fromPending(pend, psp)
			}
		}
		if h.MerchantID != f.MerchantID || (h.SiteID != "" && h.SiteID != f.SiteID) {
			return fmt.Errorf("%w: payment %s", errForeign, psp)
		}
		if found {
			fillRequestFacts(h, pend)
		}
		f.fill(h)
		h.answered(u.Status)
		if stored.Version != 0 && reflect.DeepEqual(*h, stored) {
			return ErrSkip // the same answer again (a replay): nothing new
		}
		h.UpdatedAt = later(h.UpdatedAt, u.At)
		return nil
	}, facts...)
	bound.Wait()
	if found && errors.Is(err, errForeign) && bindErr == nil {
		// Bound alongside a create that found another site's payment: the
		// pending record is this site's, and psp not its payment.
		bindErr = unbind(ctx, st, pend, psp)
	}
	if err != nil {
		err = fmt.Errorf("record payment %s: %w", psp, err)
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

// newHead is the head a payment or details answer creates when none
// exists (and no pending record leads to it).
func (f *PaymentFacts) newHead(psp string, at time.Time) Head {
	h := Head{PSPReference: psp, MerchantID: f.MerchantID, SiteID: f.SiteID, Source: SourceAdvanced, CreatedAt: at}
	f.fill(&h)
	return h
}

// fill fills what head h lacks from what the call knew and answered.
func (f *PaymentFacts) fill(h *Head) {
	if h.SiteID == "" {
		h.SiteID = f.SiteID
	}
	fillRequestFacts(h, Head{Reference: f.Reference, Amount: f.Amount, ShopperReference: f.ShopperReference,
		StoredMethodID: f.StoredMethodID, StorePaymentMethod: f.StorePaymentMethod, AuthorisationType: f.AuthorisationType})
	if h.CaptureMode == "" {
		h.CaptureMode = f.CaptureMode
	}
	if f.RefusalReason != "" {
		h.RefusalReason = f.RefusalReason
	}
	if f.PaymentMethod != "" {
		h.PaymentMethod = f.PaymentMethod
	}
}

// recordPending writes the pending record of a payment answered with an
// action and no pspReference, and its action's alias. Applying it again
// replaces the pending record with the same one, unless its payment was
// bound meanwhile.
func recordPending(ctx context.Context, st Store, u RecordUpdate) error {
	f := u.Payment
	h := f.newHead("", u.At)
	h.answered(u.Status)
	h.UpdatedAt = u.At
	var wg sync.WaitGroup
	var aliasErr error
	wg.Go(func() {
		aliasErr = saveActionAlias(ctx, st, f.MerchantID, f.SiteID, f.Reference, f.ActionPaymentData, u.At)
	})
	err := savePending(ctx, st, h)
	wg.Wait()
	return errors.Join(err, aliasErr)
}

// updateHead applies fn to payment psp's head (Version 0: none stored)
// and writes it conditionally on its version, with facts, re-reading and
// re-applying on a concurrent change. The first attempt starts from start
// when it is set (the head as the caller read it; Version 0: none, so
// the write creates it) instead of reading. fn returning ErrSkip writes
// nothing.
func updateHead(ctx context.Context, st Store, psp string, start *Head, fn func(*Head) error, facts ...Fact) error {
	for attempt := 1; ; attempt++ {
		var h Head
		var err error
		if attempt == 1 && start != nil {
			h = start.clone()
		} else if h, err = st.GetPayment(ctx, psp); errors.Is(err, storeerr.ErrNotFound) {
			h, err = Head{PSPReference: psp}, nil
		}
		if err != nil {
			return err
		}
		next := h.clone()
		if err := fn(&next); err != nil {
			if errors.Is(err, ErrSkip) {
				return nil
			}
			return err
		}
		next.PSPReference, next.Version = psp, h.Version+1
		err = st.Write(ctx, Write{PSP: psp, Put: &next, Facts: facts})
		if !errors.Is(err, storeerr.ErrConflict) {
			return err
		}
		if attempt == maxSettleAttempts {
			return fmt.Errorf("update payment %s: %w: %w", psp, ErrBusy, storeerr.ErrConflict)
		}
		if err := wait(ctx, attempt); err != nil {
			return err
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
