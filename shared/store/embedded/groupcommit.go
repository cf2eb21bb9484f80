package embedded

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
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
	db      *bolt.DB
	mu      sync.Mutex
	pending []*pendingTx
	leading bool
	// committed, if set, is told each commit's group size (tests).
	committed func(n int)
}

type pendingTx struct {
	fn   func(*bolt.Tx) error
	err  error
	done chan struct{} // closed once err is final
	lead chan struct{} // this writer leads the next commit
}

func (c *committer) update(fn func(*bolt.Tx) error) error {
	p := &pendingTx{fn: fn, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, p)
	if c.leading {
		c.mu.Unlock()
		select {
		case <-p.done:
			return p.err
		case <-p.lead:
		}
		c.mu.Lock()
	}
	c.leading = true
	n := min(len(c.pending), maxGroup)
	group := c.pending[:n:n]
	c.pending = append([]*pendingTx(nil), c.pending[n:]...)
	c.mu.Unlock()

	c.commit(group)

	c.mu.Lock()
	if len(c.pending) > 0 {
		c.pending[0].lead <- struct{}{}
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return p.err
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
		group[0].err = c.db.Update(safe(group[0].fn))
		return
	}
	fnFailed := false
	err := c.db.Update(func(tx *bolt.Tx) error {
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
		p.err = c.db.Update(safe(p.fn))
	}
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
