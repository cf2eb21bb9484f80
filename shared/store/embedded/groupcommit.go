package embedded

import (
	"context"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/payments"
)

// maxGroup bounds how many write transactions share one commit.
const maxGroup = 128

// committer is group commit for bbolt, which has one writer and an fsync per
// commit: writers that arrive while a commit is under way wait, and the
// next commit runs all of them in one transaction, so they share one fsync.
// A lone writer commits at once (no added delay at low load); each caller
// returns only after its own change is durable.
//
// bbolt has no savepoints, so when one function of a group fails the group
// is rolled back and every function runs again alone (as bbolt's own Batch
// does): functions must depend only on the transaction, and may run twice.
// Leadership passes to the first waiting writer after each commit, so no
// caller serves others' commits for long.
type committer struct {
	db *bolt.DB
	// fold, if set, runs first in every transaction, and folded after
	// each one committed (the payment journal's pending records).
	fold    func(*bolt.Tx) error
	folded  func()
	mu      sync.Mutex
	pending []*pendingTx
	leading bool
	// committed, if set, is told each commit's group size (tests).
	committed func(n int)
}

type pendingTx struct {
	fn func(*bolt.Tx) error
	// alone, if set, may make the write durable instead of fn when it
	// commits alone (the payment journal); handled false: it did not, fn
	// runs.
	alone  func() (handled bool, err error)
	err    error
	queued chan struct{} // closed once the write is in pending (held writes of a write group: when released)
	done   chan struct{} // closed once err is final
	lead   chan struct{} // this writer leads the next commit
}

func newPendingTx(fn func(*bolt.Tx) error) *pendingTx {
	return &pendingTx{fn: fn, queued: make(chan struct{}), done: make(chan struct{}), lead: make(chan struct{}, 1)}
}

func (c *committer) update(fn func(*bolt.Tx) error) error {
	return c.updateOr(fn, nil)
}

// updateOr is update where alone may make the write durable instead when
// it commits alone (see pendingTx).
func (c *committer) updateOr(fn func(*bolt.Tx) error, alone func() (bool, error)) error {
	p := newPendingTx(fn)
	p.alone = alone
	c.enqueue(p)
	return c.wait(p)
}

// enqueue adds writes to pending at once: a leader takes either all of
// them or none.
func (c *committer) enqueue(ps ...*pendingTx) {
	if len(ps) == 0 {
		return
	}
	c.mu.Lock()
	c.pending = append(c.pending, ps...)
	c.mu.Unlock()
	for _, p := range ps {
		close(p.queued)
	}
}

// wait returns p's result once it is committed: it waits for the commit
// under way or, with nobody leading, leads the next ones itself until p's
// is done, then passes leadership to the first waiting writer.
func (c *committer) wait(p *pendingTx) error {
	c.mu.Lock()
	if c.leading {
		c.mu.Unlock()
		select {
		case <-p.done:
			return p.err
		case <-p.lead:
		}
		c.mu.Lock()
	} else {
		select {
		case <-p.done: // committed by the leader of its group meanwhile
			c.mu.Unlock()
			return p.err
		default:
		}
		c.leading = true
	}
	for {
		n := min(len(c.pending), maxGroup)
		group := c.pending[:n:n]
		c.pending = append([]*pendingTx(nil), c.pending[n:]...)
		c.mu.Unlock()

		c.commit(group)

		c.mu.Lock()
		select {
		case <-p.done:
		default: // p is further back than one group takes
			continue
		}
		break
	}
	if len(c.pending) > 0 {
		c.pending[0].lead <- struct{}{}
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return p.err
}

// maxLinger bounds how long a write group's write waits for the group's
// other members before it commits without them.
const maxLinger = 3 * time.Millisecond

// writeGroup makes the writes that end one request share a commit: the
// idempotency result and the payment record's write after the upstream
// answered would otherwise be two commits, one after the other (the first
// one's writer leads alone; the second arrives while its fsync runs). A
// write made with a member's context is held until every running member
// has one held (or has left), then all of them enter pending together; a
// write held for maxLinger goes on without the others, and the group's
// later writes no longer wait.
type writeGroup struct {
	c       *committer
	linger  time.Duration // 0: maxLinger (tests set their own)
	mu      sync.Mutex
	running int          // members that joined and have not left
	held    []*pendingTx // writes waiting for the other members'
	open    bool         // lingered too long: writes no longer wait
}

var _ payments.WriteGroup = (*writeGroup)(nil)

type writeGroupKey struct{}

// Join implements payments.WriteGroup.
func (g *writeGroup) Join(ctx context.Context) (context.Context, func()) {
	g.mu.Lock()
	g.running++
	g.mu.Unlock()
	var once sync.Once
	return context.WithValue(ctx, writeGroupKey{}, g), func() { once.Do(g.leave) }
}

func (g *writeGroup) leave() {
	g.mu.Lock()
	g.running--
	ready := g.readyLocked()
	g.mu.Unlock()
	g.c.enqueue(ready...)
}

// readyLocked takes the held writes once every running member has one.
func (g *writeGroup) readyLocked() []*pendingTx {
	if len(g.held) == 0 || len(g.held) < g.running {
		return nil
	}
	ready := g.held
	g.held = nil
	return ready
}

// update is committer.update for a member's write.
func (g *writeGroup) update(fn func(*bolt.Tx) error) error {
	g.mu.Lock()
	if g.open {
		g.mu.Unlock()
		return g.c.update(fn)
	}
	p := newPendingTx(fn)
	g.held = append(g.held, p)
	ready := g.readyLocked()
	g.mu.Unlock()
	g.c.enqueue(ready...)
	select {
	case <-p.queued:
	default:
		linger := g.linger
		if linger == 0 {
			linger = maxLinger
		}
		t := time.NewTimer(linger)
		select {
		case <-p.queued:
			t.Stop()
		case <-t.C:
			g.mu.Lock()
			g.open = true
			ready := g.held
			g.held = nil
			g.mu.Unlock()
			g.c.enqueue(ready...)
			<-p.queued // by this release or the one that beat it
		}
	}
	return g.c.wait(p)
}

// commit runs group in one transaction, or each alone when one fails.
func (c *committer) commit(group []*pendingTx) {
	if c.committed != nil {
		c.committed(len(group))
	}
	defer func() {
		for _, p := range group {
			close(p.done)
		}
	}()
	if len(group) == 1 {
		p := group[0]
		if p.alone != nil {
			if handled, err := safeAlone(p.alone); handled {
				p.err = err
				return
			}
		}
		p.err = c.run(safe(p.fn))
		return
	}
	fnFailed := false
	err := c.run(func(tx *bolt.Tx) error {
		for _, p := range group {
			if err := safe(p.fn)(tx); err != nil {
				fnFailed = true
				return err
			}
		}
		return nil
	})
	switch {
	case err == nil:
		return
	case !fnFailed: // the commit itself failed: nothing of the group is stored
		for _, p := range group {
			p.err = err
		}
		return
	}
	for _, p := range group {
		p.err = c.run(safe(p.fn))
	}
}

// run is one transaction: the fold, then fn.
func (c *committer) run(fn func(*bolt.Tx) error) error {
	if c.fold == nil {
		return c.db.Update(fn)
	}
	err := c.db.Update(func(tx *bolt.Tx) error {
		if err := c.fold(tx); err != nil {
			return fmt.Errorf("embedded: folding the payment journal: %w", err)
		}
		return fn(tx)
	})
	if err == nil {
		c.folded()
	}
	return err
}

// safeAlone is safe for a pendingTx's alone.
func safeAlone(alone func() (bool, error)) (handled bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			handled, err = true, fmt.Errorf("embedded: panic in a journaled write: %v", r)
		}
	}()
	return alone()
}

// safe turns a panic in fn into an error, so one bad function cannot leave
// the writers of its group waiting forever.
func safe(fn func(*bolt.Tx) error) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("embedded: panic in a write transaction: %v", r)
			}
		}()
		return fn(tx)
	}
}
