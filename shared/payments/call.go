package payments

import (
	"context"
	"errors"
	"sync"

	"github.com/yp/paysvc/shared/tenant"
)

// Call is one request's per-call facts, passed explicitly to every payment
// operation (never through the context): who calls and the upstream
// idempotency key going in; whether the upstream was called and the record
// writes that follow its answer coming out. One Call serves one operation;
// use it by pointer.
type Call struct {
	Merchant tenant.Merchant
	Site     tenant.Site
	// UpstreamKey is the Idempotency-Key sent to the upstream, derived from
	// the merchant's (idempotency.UpstreamKey); "" when the merchant sent
	// none.
	UpstreamKey    string
	upstreamCalled bool
	records        sync.WaitGroup
	mu             sync.Mutex
	errs           []error
}

// UpstreamCalled reports whether the operation reached the upstream: from
// then on its result is the upstream's (idempotency keeps it).
func (c *Call) UpstreamCalled() bool { return c.upstreamCalled }

// Wait waits for the record writes the operation started after the
// upstream answered and returns the errors of those that were lost,
// joined: neither applied nor deferred to the PendingUpdates port (a
// deferred one is applied later and is no error here). The operation's
// result stands whatever they return: the upstream has acted, each write
// kept retrying under contention and without the caller's cancellation,
// and the upstream's notification reconciles the record.
func (c *Call) Wait() error {
	c.records.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

// callUpstream marks the call as having reached the upstream and returns
// the idempotency key to send with it. Call it just before sending.
func (c *Call) callUpstream() string {
	c.upstreamCalled = true
	return c.UpstreamKey
}

// settlement is a record write that follows the upstream's answer, run
// alongside the rest of the request (the idempotency result write); Wait
// returns its error. Its context has no cancellation: the write records
// what the upstream already did. One value per write, so that starting
// one costs few allocations on the hot path.
type settlement struct {
	ctx context.Context
	s   *Service
	c   *Call
	u   RecordUpdate
	k   known
}

func (w *settlement) run() {
	defer w.c.records.Done()
	w.c.fail(w.s.settle(w.ctx, w.u, w.k))
}

// fail records the error of a record write done in line after the
// upstream answered (nil: nothing); Wait returns it.
func (c *Call) fail(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}
