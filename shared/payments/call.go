package payments

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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

	upstreamCalled bool
	records        sync.WaitGroup
	mu             sync.Mutex
	errs           []error
}

// UpstreamCalled reports whether the operation reached the upstream: from
// then on its result is the upstream's (idempotency keeps it).
func (c *Call) UpstreamCalled() bool { return c.upstreamCalled }

// Wait waits for the record writes the operation started after the
// upstream answered and returns the errors of those that were lost (each
// logged and counted when it was). The operation's result stands whatever
// they return: the upstream has acted, and what repairs each lost write
// is in docs/payments.md.
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

// after starts write, a record write of what the upstream answered, of
// kind for payment (or session) psp, alongside the rest of the request
// (c.Wait): s.record makes it.
func (s *Service) after(ctx context.Context, c *Call, kind, psp string, write func(context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	c.records.Go(func() {
		if err := s.record(ctx, kind, psp, write); err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
		}
	})
}

// record makes write, a record write of kind for psp after the upstream
// answered. The upstream has acted, so it is not given up lightly: the
// merchant hanging up does not cancel it, write retries conflicts itself,
// and store failures are retried with backoff for s.recordRetry. One that
// still fails then is lost: logged at ERROR and counted (RecordUpdateLost).
// errForeign (the payment is another site's) is returned at once.
func (s *Service) record(ctx context.Context, kind, psp string, write func(context.Context) error) error {
	ctx = context.WithoutCancel(ctx)
	start := time.Now()
	for attempt := 1; ; attempt++ {
		err := write(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errForeign):
			return err
		case errors.Is(err, errRefused) || time.Since(start) >= s.recordRetry:
			s.log.ErrorContext(ctx, "record write after the upstream answered failed", "record", kind, "pspReference", psp,
				"attempts", attempt, "err", err.Error())
			if s.metrics != nil {
				s.metrics.RecordUpdateLost(kind)
			}
			return fmt.Errorf("record %s %s after the upstream answered (%d attempts): %w", kind, psp, attempt, err)
		}
		s.log.WarnContext(ctx, "record write failed; retrying", "record", kind, "pspReference", psp, "attempt", attempt, "err", err.Error())
		time.Sleep(min(recordBackoff<<min(attempt-1, 6), time.Second))
	}
}

// recordBackoff is record's first wait after a store failure.
const recordBackoff = 20 * time.Millisecond

// errRefused: a record write that can never apply (its payment unknown,
// or no request of its operation recorded). Retrying it is useless.
var errRefused = errors.New("payments: record write refused")

// errForeign: a payment or details answer names a payment of another
// merchant or site; it is not recorded.
var errForeign = fmt.Errorf("%w: the payment belongs to another merchant or site", errRefused)
