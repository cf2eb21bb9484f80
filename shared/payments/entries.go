package payments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/yp/paysvc/shared/apperr"
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

// requestedFact is the timeline's line for an operation's request.
func requestedFact(e Entry) Fact {
	f := Fact{ID: e.Ref + "#requested", At: e.Requested.At, Kind: string(e.Kind) + "-requested", Origin: OriginAPI,
		PSPReference: e.Ref}
	if e.Requested.Amount.Currency != "" {
		a := e.Requested.Amount
		f.Amount = &a
	}
	return f
}

// answeredFact is the timeline's line for an operation's answer.
func answeredFact(e Entry) Fact {
	f := Fact{ID: e.Ref + "#answered#" + string(e.Answered.Outcome), At: e.Answered.At, Kind: string(e.Kind), Origin: OriginAPI, PSPReference: e.Modification,
		Detail: string(e.Answered.Outcome)}
	if e.Answered.Outcome != Received {
		f.Kind, f.PSPReference, f.Detail = string(e.Kind)+"-"+string(e.Answered.Outcome), e.Ref, e.Answered.Reason
	}
	if e.Requested != nil && e.Requested.Amount.Currency != "" {
		a := e.Requested.Amount
		f.Amount = &a
	}
	return f
}

// maxReserveAttempts bounds the retries of a request's write that lost to
// concurrent changes (each retry follows a change that landed): past it
// the caller gets 409 yp_2005 and may retry.
const maxReserveAttempts = 50

// conflictWait is the jittered wait before retry attempt n (1-based).
func conflictWait(n int) time.Duration {
	d := min(time.Duration(1<<min(n, 5))*time.Millisecond/2, 25*time.Millisecond) // 1 ms … 16 ms
	return d/2 + rand.N(d/2+1)
}

// Sleeper waits out the pause before a retry of a write that lost to
// concurrent changes. The Service's is real time unless SleepWith sets
// another: a test counts the time its requests waited on its own clock.
type Sleeper interface {
	// Sleep waits d, or returns ctx's error if ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// RealTime is the Sleeper of real time.
type RealTime struct{}

// Sleep waits d on a timer, or returns ctx's error.
func (RealTime) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WaitToRetry waits on sl (nil: real time) the jittered pause before
// retry attempt n (1-based) of a write that lost to concurrent changes
// of a payment, or returns ctx's error (an ErrBusy).
func WaitToRetry(ctx context.Context, sl Sleeper, n int) error {
	if sl == nil {
		sl = RealTime{}
	}
	if err := sl.Sleep(ctx, conflictWait(n)); err != nil {
		return fmt.Errorf("%w (%w)", err, ErrBusy)
	}
	return nil
}

// ErrBusy: a change lost to concurrent changes every time it was tried.
var ErrBusy = errors.New("payments: too many concurrent updates")

// storeError passes domain errors through and wraps store failures.
func storeError(err error) error {
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, ErrBusy) {
		return apperr.Wrap(apperr.PaymentBusy, "too many concurrent changes to this payment; retry with the same Idempotency-Key", err)
	}
	return apperr.Wrap(apperr.Internal, "internal error", err)
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
			alias := Entry{Ref: op.Ref, Kind: op.Kind, MergedInto: mod, Version: op.Version + 1}
			w.Delta = merged.Contribution().Sub(op.Contribution()).Sub(canon.Contribution())
			w.Entries = []Entry{alias, merged}
			answered = merged
		}
		if answered.Modification == "" {
			answered.Modification = mod
		}
		w.Facts = []Fact{answeredFact(answered)}
		err := st.Write(ctx, w)
		if !errors.Is(err, storeerr.ErrConflict) {
			return err
		}
		if attempt == maxSettleAttempts {
			return fmt.Errorf("answer %s of %s: %w: %w", ref, psp, ErrBusy, storeerr.ErrConflict)
		}
		if err := WaitToRetry(ctx, nil, attempt); err != nil {
			return err
		}
	}
}

// maxSettleAttempts bounds the retries of a write recording what the
// platform did, which is never given up lightly (about 25 s of waits).
const maxSettleAttempts = 1000

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
