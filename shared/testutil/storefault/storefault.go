// Package storefault injects store failures into tests: a payments.Store
// whose writes fail while it is down, as a table that refuses writes
// would.
package storefault

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/yp/paysvc/shared/payments"
)

// ErrDown is what a write fails with while the store is down.
var ErrDown = errors.New("storefault: the store refuses writes")

// Payments wraps a payments.Store: Write and PutSession fail with ErrDown
// while Down is set (reads pass through).
type Payments struct {
	payments.Store
	Down atomic.Bool
}

var _ payments.Store = (*Payments)(nil)

// Write fails while the store is down, else writes.
func (s *Payments) Write(ctx context.Context, w payments.Write) error {
	if s.Down.Load() {
		return ErrDown
	}
	return s.Store.Write(ctx, w)
}

// PutSession fails while the store is down, else writes.
func (s *Payments) PutSession(ctx context.Context, sess payments.Session) error {
	if s.Down.Load() {
		return ErrDown
	}
	return s.Store.PutSession(ctx, sess)
}
