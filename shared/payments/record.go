package payments

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/storeerr"
)

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
// create-first: the head is read only when one exists. errForeign when it
// is another merchant's or site's: nothing is recorded.
func recordPayment(ctx context.Context, st Store, a paymentAnswer) error {
	fact := Fact{ID: "answer#" + a.kind + "#" + a.status, At: a.at, Kind: a.kind, Origin: OriginAPI,
		PSPReference: a.psp, Detail: a.status}
	if a.pending != nil { // created from the pending record, unless one exists
		return updatePayment(ctx, st, a, &Head{PSPReference: a.psp}, fact)
	}
	h := a.newHead()
	h.answered(a.status)
	h.stampAuthorised(a.at)
	h.UpdatedAt, h.Version = a.at, 1
	err := st.Write(ctx, Write{PSP: a.psp, Put: &h, Facts: []Fact{fact}})
	if errors.Is(err, storeerr.ErrConflict) {
		return updatePayment(ctx, st, a, nil, fact) // the head exists: read it
	}
	if err != nil {
		return fmt.Errorf("record payment %s: %w", a.psp, err)
	}
	return nil
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
		h.stampAuthorised(a.at)
		if stored.Version != 0 && reflect.DeepEqual(*h, stored) {
			return errSkip // the same answer again (a replay): nothing new
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

// outcome reports whether a result code is an authorisation outcome rather
// than a step towards one.
func outcome(s State) bool {
	switch s {
	case StateAuthorised, StateRefused, stateError, StateCancelled:
		return true
	}
	return false
}
