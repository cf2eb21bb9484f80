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
	for attempt := 0; attempt < maxMutateAttempts; attempt++ {
		p, err := st.GetPayment(ctx, psp)
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
