package payments

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
// alongside the rest of the request (c.Wait). The call always carries an
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
	k := known{entry: &e}
	var read chan struct{}
	if op.readAlong {
		// The answer puts the head whole: it is read while the upstream
		// answers, after the request was written (a write landing in
		// between fails the answer's version condition, which reads again).
		read = make(chan struct{})
		go func() {
			defer close(read)
			if h, err := s.store.GetPayment(ctx, psp); err == nil {
				k.head = &h
			}
		}()
	}
	resp, err := s.up.Modify(ctx, e.call(psp))
	if read != nil {
		<-read
	}
	return s.answered(ctx, c, psp, k, resp, err, op.failed, op.what)
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

// answered records the platform's answer to operation k.entry of payment
// psp (its call returned resp, err; the answer's write starts from k) alongside the rest of the request
// (c.Wait), and returns the endpoint's result: a definitive refusal ends
// the operation; no definitive answer leaves it in flight, to be learnt by
// repeating the call (the merchant's retry, or Recover); an in-flight
// duplicate records nothing (its first call does).
func (s *Service) answered(ctx context.Context, c *Call, psp string, k known, resp ModificationAnswer, err error,
	failed apperr.Kind, what string) (ModificationResult, error) {
	if u, ok := answerUpdate(psp, *k.entry, resp, err, s.clock.Now()); ok {
		s.recordAfter(ctx, c, u, k)
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
