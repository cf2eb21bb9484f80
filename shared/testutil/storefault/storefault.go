// Package storefault injects store failures into tests: a payments.Store
// whose record writes fail while it is down, as a table that refuses
// writes would.
package storefault

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/yp/paysvc/shared/payments"
)

// ErrDown is what a write fails with while the store is down.
var ErrDown = errors.New("storefault: the store refuses writes")

// Payments wraps a payments.Store: Write fails with ErrDown while Down is
// set (reads and sessions pass through). Writes counts the Write calls,
// failed or not.
type Payments struct {
	payments.Store
	Down   atomic.Bool
	Writes atomic.Int64
}

var _ payments.Store = (*Payments)(nil)

// Write fails while the store is down, else writes.
func (s *Payments) Write(ctx context.Context, w payments.Write) error {
	s.Writes.Add(1)
	if s.Down.Load() {
		return ErrDown
	}
	return s.Store.Write(ctx, w)
}
