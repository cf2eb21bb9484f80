package payments

import (
	"context"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/store"
)

// maxMutateAttempts bounds optimistic-concurrency retries of one update.
const maxMutateAttempts = 16

// ErrSkip tells Mutate that fn decided to change nothing.
var ErrSkip = errors.New("payments: no change")

// Mutate applies fn to the payment pspReference and saves it conditionally
// on its version, re-reading and re-applying on a concurrent change, so no
// writer ever loses another's change. When the record does not exist and
// create is non-nil, fn is applied to create() and the record is created.
// fn returning ErrSkip saves nothing and returns the current record.
func Mutate(ctx context.Context, st Store, psp string, create func() Payment, fn func(*Payment) error) (Payment, error) {
	return mutate(ctx, st, psp, nil, create, fn)
}

// MutateFrom is Mutate starting from a record the caller has just read,
// saving the first read; a concurrent change still re-reads and re-applies.
func MutateFrom(ctx context.Context, st Store, p Payment, fn func(*Payment) error) (Payment, error) {
	return mutate(ctx, st, p.PSPReference, &p, nil, fn)
}

func mutate(ctx context.Context, st Store, psp string, first *Payment, create func() Payment, fn func(*Payment) error) (Payment, error) {
	for attempt := 0; attempt < maxMutateAttempts; attempt++ {
		var p Payment
		var err error
		if attempt == 0 && first != nil {
			p = clonePayment(*first)
		} else {
			p, err = st.GetPayment(ctx, psp)
		}
		prev := p.Version
		switch {
		case errors.Is(err, store.ErrNotFound) && create != nil:
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
		if !errors.Is(err, store.ErrConflict) {
			return Payment{}, fmt.Errorf("save payment %s: %w", psp, err)
		}
	}
	return Payment{}, fmt.Errorf("save payment %s: too many concurrent updates: %w", psp, store.ErrConflict)
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
