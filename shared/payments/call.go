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
	UpstreamKey string
	// Group, when set, is joined by each record write that follows the
	// upstream's answer, so that they commit with the request's other
	// final writes where the store commits in groups; nil: each on its own.
	Group WriteGroup

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

// record runs a record write that follows the upstream's answer alongside
// the rest of the request (the idempotency result write); Wait returns its
// error. It gets a context without the request's cancellation: the write
// records what the upstream already did.
func (c *Call) record(ctx context.Context, write func(ctx context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	leave := func() {}
	if c.Group != nil {
		ctx, leave = c.Group.Join(ctx)
	}
	c.records.Add(1)
	go func() {
		defer c.records.Done()
		defer leave()
		c.fail(write(ctx))
	}()
}

// WriteGroup lets concurrent writes that end one request share a store
// commit where the store commits in groups (the embedded store: one
// transaction and one fsync for the idempotency result and the record
// writes, instead of one after the other). Stores whose writes are
// independent round trips (DynamoDB) have none: the writes run
// concurrently, one round trip deep.
type WriteGroup interface {
	// Join adds a member: the store holds a write made with the returned
	// context until every member still joined has made one (or briefly,
	// at most), then commits them together. leave ends the membership; call
	// it once the member makes no more writes (more calls do nothing).
	Join(ctx context.Context) (_ context.Context, leave func())
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
