package recordupdates

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
)

// Stored is one kept record update: its id (ordered by when it was kept)
// and its message body.
type Stored struct {
	ID   string
	Body []byte
}

// Store is where Local keeps record updates (the embedded store). Every
// method is atomic; a kept update survives a crash.
type Store interface {
	// PutRecordUpdate keeps body under id.
	PutRecordUpdate(ctx context.Context, id string, body []byte) error
	// DeleteRecordUpdate removes update id (absent: no error).
	DeleteRecordUpdate(ctx context.Context, id string) error
	// RecordUpdates returns every kept update in id order.
	RecordUpdates(ctx context.Context) ([]Stored, error)
}

// Local backoff between attempts of one update: 1 s, doubling, at most a
// minute; it is tried until it lands.
const (
	localFirstBackoff = time.Second
	localMaxBackoff   = time.Minute
	localIdle         = 5 * time.Second // longest sleep of Run
)

// Local is the PendingUpdates adapter of local runs: updates are kept in
// the embedded store before Defer returns and applied in-process (Run),
// each retried with backoff until it lands; kept updates are found again
// after a restart. An update that can never apply (Permanent) is logged
// at ERROR and removed.
type Local struct {
	store    Store
	payments payments.Store
	clock    clock.Clock
	log      *slog.Logger
	wake     chan struct{}

	mu    sync.Mutex
	tries map[string]retry // by id: failed attempts so far (in memory: a restart tries at once)
}

type retry struct {
	attempts int
	due      time.Time
}

var _ payments.PendingUpdates = (*Local)(nil)

// NewLocal returns the adapter keeping updates in st and applying them to
// the payment records of ps.
func NewLocal(st Store, ps payments.Store, clk clock.Clock, log *slog.Logger) *Local {
	return &Local{store: st, payments: ps, clock: clk, log: log, wake: make(chan struct{}, 1), tries: map[string]retry{}}
}

// Defer keeps u in the store and wakes Run.
func (l *Local) Defer(ctx context.Context, u payments.RecordUpdate) error {
	body, err := Encode(u)
	if err != nil {
		return err
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("recordupdates: random id: %w", err)
	}
	// Ordered by when it was kept, so updates apply in the order they were deferred.
	id := fmt.Sprintf("%020d-%s", l.clock.Now().UnixNano(), hex.EncodeToString(b))
	if err := l.store.PutRecordUpdate(ctx, id, body); err != nil {
		return fmt.Errorf("recordupdates: keep %s update of %s: %w", u.Kind, u.PSPReference, err)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

// RunDue tries every kept update that is due, in order, and returns how
// many landed (or were removed as permanent failures) and how many are
// left. Tests drive Local with it and a fake clock.
func (l *Local) RunDue(ctx context.Context) (done, left int, err error) {
	kept, err := l.store.RecordUpdates(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("recordupdates: read kept updates: %w", err)
	}
	now := l.clock.Now()
	for _, k := range kept {
		l.mu.Lock()
		r := l.tries[k.ID]
		l.mu.Unlock()
		if r.due.After(now) {
			left++
			continue
		}
		if l.try(ctx, k, r, now) {
			done++
		} else {
			left++
		}
	}
	return done, left, nil
}

// try applies one kept update; true when it is finished with (applied, or
// removed as permanent).
func (l *Local) try(ctx context.Context, k Stored, r retry, now time.Time) bool {
	u, err := Decode(k.Body)
	if err == nil {
		err = payments.ApplyRecordUpdate(ctx, l.payments, u)
	}
	if err != nil && !Permanent(err) {
		r.attempts++
		r.due = now.Add(min(localFirstBackoff<<min(r.attempts-1, 10), localMaxBackoff))
		l.mu.Lock()
		l.tries[k.ID] = r
		l.mu.Unlock()
		l.log.WarnContext(ctx, "deferred payment record update failed again; retrying", "id", k.ID,
			"pspReference", u.PSPReference, "update", string(u.Kind), "attempts", r.attempts, "err", err.Error())
		return false
	}
	if err != nil {
		l.log.ErrorContext(ctx, "deferred payment record update can never apply; removed", "id", k.ID,
			"pspReference", u.PSPReference, "update", string(u.Kind), "err", err.Error())
	} else {
		l.log.InfoContext(ctx, "deferred payment record update applied", "id", k.ID,
			"pspReference", u.PSPReference, "update", string(u.Kind), "attempts", r.attempts+1)
	}
	if derr := l.store.DeleteRecordUpdate(ctx, k.ID); derr != nil {
		// Applied again on the next round: applying is idempotent.
		l.log.ErrorContext(ctx, "removing an applied record update failed; it is tried again", "id", k.ID, "err", derr.Error())
		return false
	}
	l.mu.Lock()
	delete(l.tries, k.ID)
	l.mu.Unlock()
	return true
}

// Run applies kept updates until ctx ends: at once, when Defer wakes it,
// and at least every few seconds while some wait for their next attempt.
func (l *Local) Run(ctx context.Context) {
	for {
		sleep := localIdle
		if _, left, err := l.RunDue(ctx); err != nil {
			l.log.ErrorContext(ctx, "applying deferred record updates failed", "err", err.Error())
		} else if left > 0 {
			sleep = min(l.nextDue().Sub(l.clock.Now()), localIdle)
		}
		t := time.NewTimer(max(sleep, 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-l.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// nextDue is the earliest next attempt of an update that failed.
func (l *Local) nextDue() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.clock.Now().Add(localIdle)
	for _, r := range l.tries {
		if r.due.Before(next) {
			next = r.due
		}
	}
	return next
}
