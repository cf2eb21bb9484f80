package embedded

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxGroup bounds how many write transactions share one commit.
const maxGroup = 128

// committer is group commit for bbolt, which has one writer and an fsync per
// commit: writers that arrive while a commit is under way wait, and the
// next commit runs all of them in one transaction, so they share one fsync.
// A lone writer waits a moment for others (gather); each caller returns
// only after its own change is durable. A group whose every write is a
// change on a kv may instead be made durable by the journal (one write
// and one fdatasync, where a transaction takes two).
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
	fold   func(*bolt.Tx) error
	folded func()
	// journal, if set, may make a group whose every write has a change
	// durable instead of a transaction (the payment journal: one write
	// and one fdatasync). handled false: the transaction takes the group.
	// handled true: err is every write's result.
	journal func(changes []func(kv) error) (handled bool, err error)
	mu      sync.Mutex
	pending []*pendingTx
	leading bool
	// committed, if set, is told each commit's group size (tests).
	committed func(n int)
	// queued, if set, is told how many writers wait for the next commit
	// each time one joins them (tests; called holding mu).
	queued func(n int)
	// gathering, if set, replaces gather's timed wait (tests): it returns
	// when the lone leader should commit.
	gathering func()
}

type pendingTx struct {
	fn func(*bolt.Tx) error
	// change, if set, is the write on a kv (fn is change on the
	// transaction): the committer's journal may make it durable instead.
	change func(kv) error
	// solo, if set, is all the writer does, alone, never in a group
	// (exclusive).
	solo func() error
	// first: the write is its request's first, so nothing of that
	// request will join it; alone, it commits without gathering.
	first bool
	err   error
	done  chan struct{} // closed once err is final
	lead  chan struct{} // this writer leads the next commit
}

func (c *committer) update(fn func(*bolt.Tx) error) error {
	return c.enqueue(&pendingTx{fn: fn})
}

// change commits change, through the journal when the committer has one
// and it takes the write's group, else in a transaction.
func (c *committer) change(change func(kv) error) error {
	return c.enqueue(&pendingTx{change: change, fn: func(tx *bolt.Tx) error { return change(txKV{tx}) }})
}

// changeFirst is change for a request's first write (a payment write that
// takes its Idempotency-Key claim: the reservation before the upstream
// call): nothing of its request is written beside it, so a lone one
// commits at once instead of gathering.
func (c *committer) changeFirst(change func(kv) error) error {
	return c.enqueue(&pendingTx{change: change, fn: func(tx *bolt.Tx) error { return change(txKV{tx}) }, first: true})
}

// exclusive runs fn as the leader with no transaction under way and none
// started until it returns (Close: the journal's state is the leader's).
// fn must not call the committer; c.run commits from inside it.
func (c *committer) exclusive(fn func() error) error {
	return c.enqueue(&pendingTx{solo: fn})
}

func (c *committer) enqueue(p *pendingTx) error {
	p.done, p.lead = make(chan struct{}), make(chan struct{}, 1)
	c.mu.Lock()
	c.pending = append(c.pending, p)
	if c.queued != nil {
		c.queued(len(c.pending))
	}
	c.mu.Unlock()
	return c.wait(p)
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
		if len(c.pending) == 1 && p.solo == nil && !p.first {
			c.mu.Unlock()
			c.gather()
			c.mu.Lock()
		}
	}
	for {
		n := groupSize(c.pending)
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

// gatherFor is how long a writer that would commit alone waits for others
// to join its commit (a commit delay, as databases' group commit has):
// writes started together — a request's idempotency result and its
// payment record, issued at once after the upstream answered — then
// share one fsync (about 300 µs on a local disk) instead of taking two in
// turn. The wait ends as soon as another writer joins. A request's first
// write (changeFirst) does not wait: nothing of its request will join.
const gatherFor = 60 * time.Microsecond

// gatherYields bounds gather's yields (each well under a microsecond).
const gatherYields = 1000

// gather waits up to gatherFor for a second writer to join the pending
// ones (yielding the processor meanwhile: the writer to come may need it).
func (c *committer) gather() {
	if c.gathering != nil {
		c.gathering()
		return
	}
	until := time.Now().Add(gatherFor)
	// Bounded by yields too: under a fake clock that only moves while
	// every goroutine waits (testing/synctest), time alone would not end
	// a loop that never waits.
	for range gatherYields {
		if !time.Now().Before(until) {
			return
		}
		runtime.Gosched()
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n > 1 {
			return
		}
	}
}

// groupSize is how many of pending the next commit takes: up to maxGroup,
// ending before a solo writer, or the solo writer alone.
func groupSize(pending []*pendingTx) int {
	n := min(len(pending), maxGroup)
	for i, p := range pending[:n] {
		if p.solo != nil {
			return max(i, 1)
		}
	}
	return n
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
	if p := group[0]; p.solo != nil {
		p.err = safeSolo(p.solo)
		return
	}
	if c.journal != nil && len(group) <= maxJournaled && journalable(group) {
		changes := make([]func(kv) error, len(group))
		for i, p := range group {
			changes[i] = p.change
		}
		if handled, err := safeJournal(c.journal, changes); handled {
			for _, p := range group {
				p.err = err
			}
			return
		}
	}
	if len(group) == 1 {
		group[0].err = c.run(safe(group[0].fn))
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

// maxJournaled is the largest group the journal takes: a request's writes
// after its upstream call (its record and its idempotency result) at low
// load. Larger groups, under load, share a transaction's fsync already;
// journaling them too would leave the journal to fill up with hundreds of
// writes, and the commit that folds them all would stall every writer at
// once (concurrency-16 p99 measured 3× higher).
const maxJournaled = 2

// journalable reports whether every write of group has a change.
func journalable(group []*pendingTx) bool {
	for _, p := range group {
		if p.change == nil {
			return false
		}
	}
	return true
}

// safeJournal is journal(changes) with a panic turned into an error: a
// lone write's, or, in a group, left to the transaction (which runs
// each write alone when one fails).
func safeJournal(journal func([]func(kv) error) (bool, error), changes []func(kv) error) (handled bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			handled, err = len(changes) == 1, fmt.Errorf("embedded: panic in a journaled write: %v", r)
		}
	}()
	return journal(changes)
}

// safeSolo is safe for an exclusive writer's fn.
func safeSolo(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("embedded: panic in an exclusive write: %v", r)
		}
	}()
	return fn()
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
