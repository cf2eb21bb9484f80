package payments

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/storeerr"
)

// operation is what a capture, refund, reversal or amount update hands to
// run: its kind, its call's parts, and the guard of its request.
type operation struct {
	kind OpKind
	// call is the upstream call, without idempotency key and payment.
	call ModificationRequest
	// expect guards the request's write; why explains a failed guard.
	expect Expect
	why    func(h Head) error
	// failed and what name the endpoint's failure.
	failed apperr.Kind
	what   string
	// readAlong: the answer starts from the head, read while the upstream
	// call runs (off the critical path: one DynamoDB read is shorter than
	// the platform's answer).
	readAlong bool
}

// run makes operation op on payment psp: its request is written (the
// entry, its fact and its contribution, guarded by op.expect), the
// upstream called with what the entry holds, and the answer recorded
// alongside the rest of the request (c.Wait): lost, the entry stays in
// flight until Recover repeats the call. The call always carries an
// idempotency key — the merchant's, derived, else the service's own — so
// that Recover can repeat it exactly when its answer is lost.
func (s *Service) run(ctx context.Context, c *Call, psp string, op operation) (ModificationResult, error) {
	key := c.UpstreamKey
	if key == "" {
		b := make([]byte, 16)
		_, _ = crand.Read(b)
		key = hex.EncodeToString(b)
	}
	r := op.call
	e := Entry{Ref: opPrefix + key, Kind: op.kind, Version: 1, Requested: &Request{Amount: r.Amount, Reference: r.Reference,
		UpstreamKey: key, Account: r.MerchantAccount, Splits: r.Splits, LineItems: r.LineItems, At: s.clock.Now()}}
	e, err := s.reserve(ctx, c, psp, e, op.expect, op.why)
	if err != nil {
		return ModificationResult{}, err
	}
	c.callUpstream()
	var head *Head // an amount update's, read while the upstream answers
	var read sync.WaitGroup
	if op.readAlong {
		// The answer puts the head whole: it is read while the upstream
		// answers, after the request was written (a write landing in
		// between fails the answer's version condition, which reads again).
		read.Go(func() {
			if h, err := s.store.GetPayment(ctx, psp); err == nil {
				head = &h
			}
		})
	}
	resp, err := s.up.Modify(ctx, e.call(psp))
	read.Wait()
	if a, mod, ok := answerOf(resp, err, s.clock.Now()); ok {
		s.after(ctx, c, string(e.Kind), psp, func(ctx context.Context) error { return s.recordAnswer(ctx, psp, e, mod, a, head) })
	}
	if err != nil {
		return ModificationResult{}, upstreamError(err, op.failed, op.what)
	}
	return ModificationResult{PSPReference: resp.PSPReference, Status: resp.Status, PaymentPSPReference: psp, Reference: resp.Reference}, nil
}

// call is the upstream call of operation e of payment psp, as its request
// was first sent: a repeat is the same request under the same key.
func (e Entry) call(psp string) ModificationRequest {
	q := e.Requested
	return ModificationRequest{Kind: modificationKind(e.Kind), IdempotencyKey: q.UpstreamKey, PSPReference: psp,
		MerchantAccount: q.Account, Amount: q.Amount, Reference: q.Reference, Splits: q.Splits, LineItems: q.LineItems}
}

// modificationKind is the upstream call of an operation kind.
func modificationKind(k OpKind) ModificationKind {
	switch k {
	case OpCapture:
		return ModifyCapture
	case OpRefund:
		return ModifyRefund
	case OpReversal:
		return ModifyReversal
	}
	return ModifyAmount
}

// ModificationResult is the result of captures, refunds, reversals and
// amount updates: the operation's pspReference and status ("received"),
// plus the payment's pspReference and the operation's reference.
type ModificationResult struct {
	PSPReference        string
	Status              string
	PaymentPSPReference string
	Reference           string
}

// answerOf is the answer a modification call that returned resp, err
// records, and the operation's pspReference mod at the platform: received,
// refused or unknown; none for an in-flight duplicate (its first call
// records it).
func answerOf(resp ModificationAnswer, err error, at time.Time) (a Answer, mod string, ok bool) {
	rej := (*UpstreamRejection)(nil)
	switch {
	case err == nil:
		return Answer{Outcome: Received, At: at}, resp.PSPReference, true
	case errors.Is(err, ErrUpstreamInFlight):
		return Answer{}, "", false
	case errors.As(err, &rej):
		return Answer{Outcome: Refused, Reason: rej.Message, At: at}, "", true
	}
	return Answer{Outcome: Unknown, At: at}, "", true
}

// recordAnswer records answer a (mod: the operation's pspReference) to
// operation e of payment psp, starting from e as the request wrote it and,
// for an amount update, from head as read while its call ran (nil: read).
func (s *Service) recordAnswer(ctx context.Context, psp string, e Entry, mod string, a Answer, head *Head) error {
	var err error
	if e.Kind == OpAmountUpdate {
		err = answerAmountUpdate(ctx, s.store, psp, e.Ref, mod, a, &e, head)
	} else {
		err = answerEntry(ctx, s.store, psp, e.Ref, mod, a, &e)
	}
	if err != nil {
		return fmt.Errorf("%s answer of payment %s: %w", e.Kind, psp, err)
	}
	return nil
}

// reserve writes operation e's request on payment psp: the entry, its
// fact and its contribution, guarded by expect (why explains a failed
// guard). It returns the entry to call with: e, written now, or as given
// when an earlier attempt of the same request wrote it (it may have been
// sent: the call is repeated under the same key).
func (s *Service) reserve(ctx context.Context, c *Call, psp string, e Entry, expect Expect,
	why func(h Head) error) (Entry, error) {
	if psp == "" || len(psp) > maxPSPReference || IsPendingKey(psp) {
		return Entry{}, apperr.New(apperr.PaymentNotFound, "payment not found for this site")
	}
	expect.MerchantID, expect.SiteID = c.Merchant.ID, c.Site.ID
	w := Write{PSP: psp, Delta: e.Contribution(), Expect: expect, At: e.Requested.At, Entries: []Entry{e},
		Facts: []Fact{requestedFact(e)}}
	for attempt := 1; ; attempt++ {
		err := s.store.Write(ctx, w)
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, storeerr.ErrConflict) {
			return Entry{}, storeError(err)
		}
		h, err := Owned(ctx, s.store, c.Merchant, c.Site, psp)
		if err != nil {
			return Entry{}, err
		}
		stored, err := s.store.GetEntries(ctx, psp, e.Ref)
		if err != nil {
			return Entry{}, storeError(err)
		}
		if len(stored) > 0 {
			return e, nil // this request, written by an earlier attempt
		}
		if !expect.Meets(h) {
			if err := why(h); err != nil {
				return Entry{}, err
			}
		}
		if attempt == maxReserveAttempts {
			return Entry{}, storeError(fmt.Errorf("reserve %s on %s: %w", e.Ref, psp, ErrBusy))
		}
		if err := WaitToRetry(ctx, s.sleeper, attempt); err != nil {
			return Entry{}, storeError(err)
		}
	}
}
