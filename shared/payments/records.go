package payments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/yp/paysvc/shared/storeerr"
)

// Optimistic-concurrency retries of one update. Every conflict means another
// writer's change landed, so retrying always makes progress; the jittered
// backoff keeps many writers on one payment (50 parallel captures) from
// retrying in lockstep. maxMutateAttempts (about 5 s of backoff) bounds a
// change made before the upstream is called: past it the caller gets 409
// yp_2005 and may retry. A change recording what the upstream already
// accepted uses maxSettleAttempts (about 25 s) and must not be given up.
const (
	maxMutateAttempts = 200
	maxSettleAttempts = 1000
	maxConflictWait   = 25 * time.Millisecond
)

// ErrBusy is returned when an update lost to concurrent changes every time
// it was tried.
var ErrBusy = errors.New("payments: too many concurrent updates")

// conflictWait is the jittered wait before retry attempt n (1-based).
func conflictWait(n int) time.Duration {
	d := time.Duration(1<<min(n, 5)) * time.Millisecond / 2 // 1 ms … 16 ms
	d = min(d, maxConflictWait)
	return d/2 + rand.N(d/2+1)
}

// ErrSkip tells Mutate that fn decided to change nothing.
var ErrSkip = errors.New("payments: no change")

// Mutate applies fn to the payment pspReference and saves it conditionally
// on its version, re-reading and re-applying on a concurrent change, so no
// writer ever loses another's change. When the record does not exist and
// create is non-nil, fn is applied to create() and the record is created.
// fn returning ErrSkip saves nothing and returns the current record.
func Mutate(ctx context.Context, st Store, psp string, create func() Payment, fn func(*Payment) error) (Payment, error) {
	return mutate(ctx, st, psp, nil, create, fn, maxMutateAttempts)
}

// MutateFrom is Mutate starting from a record the caller has just read,
// saving the first read; a concurrent change still re-reads and re-applies.
func MutateFrom(ctx context.Context, st Store, p Payment, fn func(*Payment) error) (Payment, error) {
	return mutate(ctx, st, p.PSPReference, &p, nil, fn, maxMutateAttempts)
}

func mutate(ctx context.Context, st Store, psp string, first *Payment, create func() Payment, fn func(*Payment) error, attempts int) (Payment, error) {
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return Payment{}, fmt.Errorf("save payment %s: %w (%w)", psp, ctx.Err(), ErrBusy)
			case <-time.After(conflictWait(attempt)):
			}
		}
		var p Payment
		var err error
		if attempt == 0 && first != nil {
			p = clonePayment(*first)
		} else {
			p, err = st.GetPayment(ctx, psp)
		}
		prev := p.Version
		switch {
		case errors.Is(err, storeerr.ErrNotFound) && create != nil:
			p, prev = create(), 0
			p.PSPReference = psp
		case err != nil:
			return Payment{}, err
		}
		if err := fn(&p); err != nil {
			if errors.Is(err, ErrSkip) {
				return p, nil
			}
			return p, err
		}
		p.Version = prev + 1
		err = st.SavePayment(ctx, p, prev)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, storeerr.ErrConflict) {
			return Payment{}, fmt.Errorf("save payment %s: %w", psp, err)
		}
	}
	return Payment{}, fmt.Errorf("save payment %s: %w: %w", psp, ErrBusy, storeerr.ErrConflict)
}

// HasEvent reports whether the history holds an event of kind with the
// given operation reference (so repeated deliveries apply once).
func (p *Payment) HasEvent(kind, opRef string) bool {
	for _, e := range p.History {
		if e.Kind == kind && e.PSPReference == opRef {
			return true
		}
	}
	return false
}

// Remaining returns the authorised amount not yet captured.
func (p *Payment) Remaining() int64 { return max(p.AuthorisedValue-p.CapturedValue, 0) }

// clonePayment copies the parts of p that fn may change in place.
func clonePayment(p Payment) Payment {
	p.History = append([]Event(nil), p.History...)
	if p.Reservations != nil {
		r := make(map[string]int64, len(p.Reservations))
		for k, v := range p.Reservations {
			r[k] = v
		}
		p.Reservations = r
	}
	return p
}
