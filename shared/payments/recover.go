package payments

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Recovery of lost answers (docs/payments.md). An operation whose call got
// no definitive answer — a 5xx, a timeout, a crash between the call and
// the record — stays in flight: the platform may or may not have acted.
// Its entry holds the call as first sent, with its idempotency key, so the
// call can be repeated exactly: the platform replays its answer if it
// acted, or acts now. The merchant's retry with the same Idempotency-Key
// does that; Recover does it for the operations nobody retries, once they
// are older than RecoverAfter (longer than any live request: a request
// still running is never raced).

// RecoverAfter is how long an operation awaits its answer before Recover
// repeats its call: more than the longest request (the idempotency lease).
const RecoverAfter = 2 * time.Minute

// OpRef names one operation of a payment.
type OpRef struct {
	PSP string // the payment's pspReference
	Ref string // the operation's reference (Entry.Ref)
}

// InFlight is the port listing the operations that await their answer
// (Entry.AwaitsAnswer): the stores index such entries as they write them.
type InFlight interface {
	// InFlight returns at most limit operations requested before
	// `before`, oldest first.
	InFlight(ctx context.Context, before time.Time, limit int) ([]OpRef, error)
}

// Recovered counts what one Recover pass did.
type Recovered struct {
	Answered int // a definitive answer recorded (received or refused)
	Unknown  int // still no definitive answer: tried again next pass
	Skipped  int // answered meanwhile, still running, or not repeatable
}

// Recover repeats the calls of at most limit operations awaiting their
// answer for longer than RecoverAfter and records the answers. A failure
// of one operation does not stop the others; the errors are returned
// joined.
func (s *Service) Recover(ctx context.Context, idx InFlight, limit int) (Recovered, error) {
	return s.RecoverBefore(ctx, idx, s.clock.Now().Add(-RecoverAfter), limit)
}

// RecoverBefore is Recover for the operations requested before `before`,
// for a caller that knows no request of that time is still running: a
// single process restarted on a store only it can open (the embedded
// store's file lock) repairs its predecessor's operations at once rather
// than after RecoverAfter — an answer the platform gave and the crash
// lost, the merchant's retry replaying the stored response meanwhile.
func (s *Service) RecoverBefore(ctx context.Context, idx InFlight, before time.Time, limit int) (Recovered, error) {
	var out Recovered
	refs, err := idx.InFlight(ctx, before, limit)
	if err != nil {
		return out, fmt.Errorf("list operations in flight: %w", err)
	}
	var errs []error
	for _, r := range refs {
		if ctx.Err() != nil {
			break // the pass's time is up: the rest waits for the next
		}
		outcome, err := s.recoverOne(ctx, r)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("recover %s of %s: %w", r.Ref, r.PSP, err))
		case outcome == Received, outcome == Refused:
			out.Answered++
		case outcome == Unknown:
			out.Unknown++
		default:
			out.Skipped++
		}
	}
	return out, errors.Join(errs...)
}

// recoverOne repeats operation r's call and records its answer ("": none
// recorded).
func (s *Service) recoverOne(ctx context.Context, r OpRef) (Outcome, error) {
	es, err := s.store.GetEntries(ctx, r.PSP, r.Ref)
	if err != nil {
		return "", err
	}
	if len(es) == 0 || !es[0].AwaitsAnswer() {
		return "", nil // answered since the index was read
	}
	e := es[0]
	if !e.Recoverable() {
		// Written by a release that sent no key of its own: repeating it
		// could act twice. Its notification settles it.
		s.log.WarnContext(ctx, "operation in flight without an idempotency key: left to its notification",
			"pspReference", r.PSP, "operation", r.Ref)
		return "", nil
	}
	resp, err := s.up.Modify(ctx, e.call(r.PSP))
	a, mod, ok := answerOf(resp, err, s.clock.Now())
	if !ok {
		return "", nil // the first call is still running at the platform
	}
	if a.Outcome == Unknown && e.Answered != nil {
		return Unknown, nil // nothing new to record
	}
	if err := s.recordAnswer(ctx, r.PSP, e, mod, a, nil); err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "operation's answer recovered", "pspReference", r.PSP, "operation", r.Ref,
		"kind", string(e.Kind), "outcome", string(a.Outcome))
	return a.Outcome, nil
}
