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
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/storeerr"
)

// How an operation's entry moves (capture.go, refund.go, reversal.go,
// amountupdate.go use these): its request is one write before the upstream
// call — the entry, its fact and its contribution to the Totals, guarded
// by conditions on them — and its answer one write after. Neither reads
// first; a write whose condition fails is explained (or retried) from a
// read. The platform's answer names the operation's own pspReference: the
// entry moves there (the service's reference stays as an alias), so that
// its notifications find it by the reference they carry.

// opPrefix starts the service's operation references.
const opPrefix = "op_"

// ModificationRequest captures, refunds, reverses or updates the amount of
// payment PSPReference.
type ModificationRequest struct {
	Kind            OpKind
	IdempotencyKey  string
	PSPReference    string
	MerchantAccount string
	Amount          money.Amount // not for reversals
	Reference       string
	Splits          []Split
	LineItems       []LineItem // captures and refunds
}

// ModificationAnswer is the platform's acceptance of a modification (its
// outcome arrives as a notification).
type ModificationAnswer struct {
	PSPReference string
	Status       string
	Reference    string
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
	// releases: the operation, once it succeeds, releases the uncaptured
	// remainder (Entry.Releases).
	releases bool
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
		UpstreamKey: key, Account: r.MerchantAccount, Splits: r.Splits, LineItems: r.LineItems, At: s.clock.Now()},
		Releases: op.releases}
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

// reserve writes operation e's request on payment psp: the entry, its
// fact and its contribution, guarded by expect (why explains a failed
// guard). It returns the entry to call with: e, written now, or the one
// an earlier attempt of the same request wrote (it may have been sent: the
// call is repeated under the same key).
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
			// This request, written by an earlier attempt: the call repeated
			// is the one first written (a reversal decided again could
			// differ), unless its answer merged it already.
			if stored[0].Requested != nil {
				return stored[0], nil
			}
			return e, nil
		}
		if !expect.Meets(h) {
			if err := why(h); err != nil {
				return Entry{}, err
			}
		}
		if attempt == maxReserveAttempts {
			return Entry{}, storeError(fmt.Errorf("reserve %s on %s: %w", e.Ref, psp, errBusy))
		}
		if err := WaitToRetry(ctx, s.sleeper, attempt); err != nil {
			return Entry{}, storeError(err)
		}
	}
}

// call is the upstream call of operation e of payment psp, as its request
// was first sent: a repeat is the same request under the same key.
func (e Entry) call(psp string) ModificationRequest {
	q := e.Requested
	return ModificationRequest{Kind: e.Kind, IdempotencyKey: q.UpstreamKey, PSPReference: psp,
		MerchantAccount: q.Account, Amount: q.Amount, Reference: q.Reference, Splits: q.Splits, LineItems: q.LineItems}
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

// answerEntry records the platform's answer to operation ref of payment
// psp: the entry moves to the operation's own pspReference mod (when the
// answer gives one), its answer added, the Totals moved by the difference.
// first is the entry as the request wrote it (nil: read it). It is
// idempotent: an answer recorded before changes nothing.
func answerEntry(ctx context.Context, st Store, psp, ref, mod string, a Answer, first *Entry) error {
	for attempt := 1; ; attempt++ {
		var op, canon Entry
		var found bool
		if attempt == 1 && first != nil {
			op = *first // fast path: as written, and no entry under mod yet
		} else {
			var err error
			if op, canon, found, err = readOperation(ctx, st, psp, ref, mod); err != nil {
				return err
			}
		}
		if op.Ref == "" {
			return fmt.Errorf("%w: no request of operation %s of payment %s is recorded", errRefused, ref, psp)
		}
		if !op.AwaitsAnswer() {
			return nil // answered before
		}
		w := Write{PSP: psp, At: a.At}
		answered := op
		answered.Answered = &a
		switch {
		case a.Outcome != Received || mod == "":
			answered.Version++
			w.Delta = answered.Contribution().Sub(op.Contribution())
			w.Entries = []Entry{answered}
		case !found: // the operation's own entry, under its pspReference
			answered.Ref, answered.Modification, answered.Version = mod, mod, 1
			alias := Entry{Ref: op.Ref, Kind: op.Kind, MergedInto: mod, Version: op.Version + 1}
			w.Delta = answered.Contribution().Sub(op.Contribution())
			w.Entries = []Entry{alias, answered}
		default: // its notification came first: one entry of both
			merged := canon
			merged.Requested, merged.Answered, merged.Kind, merged.Version = op.Requested, &a, op.Kind, canon.Version+1
			merged.Releases = op.Releases // the request's decision, from the merchant's setting then
			alias := Entry{Ref: op.Ref, Kind: op.Kind, MergedInto: mod, Version: op.Version + 1}
			w.Delta = merged.Contribution().Sub(op.Contribution()).Sub(canon.Contribution())
			w.Entries = []Entry{alias, merged}
			answered = merged
		}
		if answered.Modification == "" {
			answered.Modification = mod
		}
		w.Facts = []Fact{answeredFact(answered)}
		if done, err := retrySettle(ctx, st.Write(ctx, w), attempt, "answer "+ref+" of "+psp); done {
			return err
		}
	}
}

// readOperation reads operation ref's entry and the entry under its
// pspReference mod (found: it exists and is not ref's alias).
func readOperation(ctx context.Context, st Store, psp, ref, mod string) (op, canon Entry, found bool, err error) {
	refs := []string{ref}
	if mod != "" {
		refs = append(refs, mod)
	}
	es, err := st.GetEntries(ctx, psp, refs...)
	if err != nil {
		return Entry{}, Entry{}, false, fmt.Errorf("read %s of %s: %w", ref, psp, err)
	}
	for _, e := range es {
		switch e.Ref {
		case ref:
			op = e
		case mod:
			canon, found = e, true
		}
	}
	return op, canon, found, nil
}

// requestedFact is the timeline's line for an operation's request.
func requestedFact(e Entry) Fact {
	return Fact{ID: e.Ref + "#requested", At: e.Requested.At, Kind: string(e.Kind) + "-requested", Origin: OriginAPI,
		PSPReference: e.Ref, Amount: e.requestedAmount()}
}

// answeredFact is the timeline's line for an operation's answer.
func answeredFact(e Entry) Fact {
	f := Fact{ID: e.Ref + "#answered#" + string(e.Answered.Outcome), At: e.Answered.At, Kind: string(e.Kind), Origin: OriginAPI, PSPReference: e.Modification,
		Detail: string(e.Answered.Outcome), Amount: e.requestedAmount()}
	if e.Answered.Outcome != Received {
		f.Kind, f.PSPReference, f.Detail = string(e.Kind)+"-"+string(e.Answered.Outcome), e.Ref, e.Answered.Reason
	}
	return f
}

// requestedAmount is a copy of e's requested amount (nil: none).
func (e Entry) requestedAmount() *money.Amount {
	if e.Requested == nil || e.Requested.Amount.Currency == "" {
		return nil
	}
	a := e.Requested.Amount
	return &a
}
