package payments

import (
	"context"
	"errors"
	"sync"

	"github.com/yp/paysvc/shared/idempotency"
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
	// Claim, when set, is the merchant's Idempotency-Key claim, not taken
	// yet: the operation's reservation takes it in the same write
	// (Store.Write). A claim that finds the key held ends the operation
	// with *idempotency.Taken, before anything is written.
	Claim *idempotency.Record
	// Gate, when set, decides whether the operation may go on (the rate
	// limit's verdict, taken alongside): Gate(true) waits for it and is
	// asked once the request is written, before the upstream call — an
	// error withdraws the request (its entry answered NotSent) and ends
	// the operation with it; Gate(false) is the verdict if it has come
	// (nil otherwise), asked before the request is written.
	Gate func(wait bool) error

	claimed        bool
	upstreamCalled bool
	records        sync.WaitGroup
	// queued are record writes that wait for the merchant's answer to
	// store it with them (Commit).
	queued       []*settlement
	mu           sync.Mutex
	errs         []error
	answerStored bool
	refusal      error
}

// AwaitsAnswer reports whether the operation's record write waits for the
// merchant's answer to the operation, to store both in one write: call
// Commit with it (or Wait, which writes the record without it).
func (c *Call) AwaitsAnswer() bool { return len(c.queued) > 0 }

// Commit starts the record writes that wait for the merchant's answer,
// handing them ans (nil: there is none to store). The first stores it with
// its record when it can (AnswerStored, after Wait); when it cannot (its
// write took another path, or failed), the caller stores it apart.
func (c *Call) Commit(ans *idempotency.Completion) {
	for i, w := range c.queued {
		if i == 0 && ans != nil {
			w.k.answer = &answerSlot{ans: ans}
		}
		go w.run()
	}
	c.queued = nil
}

// AnswerStored reports, once Wait has returned, whether Commit's answer
// was stored with the operation's record.
func (c *Call) AnswerStored() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answerStored
}

// Refusal is, once Wait has returned, the error the operation answers
// with instead of its result (nil: none): its record write found the
// payment another site's (a details answer recorded without reading its
// head first). Nothing was recorded, and the answer must not be stored.
func (c *Call) Refusal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refusal
}

// Claimed reports whether the operation's write took Claim: from then on
// the caller holds the key's lease.
func (c *Call) Claimed() bool { return c.claimed }

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
	c.Commit(nil)
	c.records.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

// pass is the Gate's verdict, waited for or as known (nil without one).
func (c *Call) pass(wait bool) error {
	if c.Gate == nil {
		return nil
	}
	return c.Gate(wait)
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
	// guarded: the payment's owner was not read before its answer was
	// returned; the write finding another site's payment refuses the
	// operation (Call.Refusal).
	guarded bool
}

func (w *settlement) run() {
	defer w.c.records.Done()
	err := w.s.settle(w.ctx, w.u, w.k)
	if a := w.k.answer; a != nil && a.stored {
		w.c.mu.Lock()
		w.c.answerStored = true
		w.c.mu.Unlock()
	}
	if errors.Is(err, errForeign) && w.guarded {
		refusal := w.s.refuseForeignDetails(w.ctx, w.u.PSPReference, w.c.Site.ID)
		w.c.mu.Lock()
		w.c.refusal = refusal
		w.c.mu.Unlock()
		return
	}
	w.c.fail(err)
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
