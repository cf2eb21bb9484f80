// Package hang bounds a test's wait on a signal by the test binary's own
// deadline (go test -timeout) rather than by a guessed duration: a wait
// that ends only on a real hang then fails with the test's own message,
// naming what it waited for, instead of the harness's goroutine dump —
// and a slow machine can never make it fire early.
package hang

import (
	"context"
	"testing"
	"time"
)

// margin is left before the binary's deadline for the failure to be
// reported and the test's cleanups to run.
const margin = 30 * time.Second

// Deadline returns a channel closed shortly before t's binary is stopped
// by its -timeout; one that is never closed when there is no timeout.
func Deadline(t testing.TB) <-chan time.Time {
	d, ok := deadline(t)
	if !ok {
		return nil
	}
	return time.After(time.Until(d.Add(-margin)))
}

// deadline is t's binary deadline, when it has one.
func deadline(t testing.TB) (time.Time, bool) {
	if td, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		return td.Deadline()
	}
	return time.Time{}, false
}

// Context is a context cancelled shortly before t's binary is stopped by
// its -timeout (never, without one).
func Context(t testing.TB) (context.Context, context.CancelFunc) {
	if d, ok := deadline(t); ok {
		return context.WithDeadline(context.Background(), d.Add(-margin))
	}
	return context.WithCancel(context.Background())
}
