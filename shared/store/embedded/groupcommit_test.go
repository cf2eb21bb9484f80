package embedded

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestGroupCommit(t *testing.T) {
	db := openTestDB(t)
	var commits, grouped atomic.Int64
	c := &committer{db: db, committed: func(n int) {
		commits.Add(1)
		if n > 1 {
			grouped.Add(1)
		}
	}}

	// A lone writer commits at once, alone.
	if err := c.update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte("solo"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	if commits.Load() != 1 {
		t.Fatalf("commits = %d", commits.Load())
	}

	// Many writers: every fourth fails after writing, one panics. Each
	// caller gets its own result, failed writes leave nothing, and the rest
	// land, sharing commits.
	const n = 200
	errFail := errors.New("refused")
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.update(func(tx *bolt.Tx) error {
				if err := tx.Bucket([]byte("b")).Put(fmt.Appendf(nil, "k%03d", i), []byte("v")); err != nil {
					return err
				}
				switch {
				case i == 77:
					panic("bug")
				case i%4 == 0:
					return errFail
				}
				return nil
			})
		}()
	}
	wg.Wait()
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		for i := range n {
			got := b.Get(fmt.Appendf(nil, "k%03d", i))
			wantStored := i%4 != 0 && i != 77
			switch {
			case wantStored && results[i] != nil:
				t.Errorf("writer %d: %v", i, results[i])
			case wantStored && got == nil:
				t.Errorf("writer %d succeeded but its write is missing", i)
			case !wantStored && got != nil:
				t.Errorf("writer %d failed but its write is stored", i)
			case i == 77 && (results[i] == nil || errors.Is(results[i], errFail)):
				t.Errorf("the panicking writer got %v", results[i])
			case i != 77 && i%4 == 0 && !errors.Is(results[i], errFail):
				t.Errorf("writer %d got %v, want its own error", i, results[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if grouped.Load() == 0 {
		t.Errorf("%d writers made %d commits, none grouped", n, commits.Load())
	}
	t.Logf("%d writers: %d commits, %d of them groups", n+1, commits.Load(), grouped.Load())
}

// newTestCommitter is a committer on a fresh file with bucket "b"; commits
// receives each commit's group size.
func newTestCommitter(t *testing.T) (*committer, chan int) {
	t.Helper()
	commits := make(chan int, 16)
	return &committer{db: openTestDB(t), committed: func(n int) { commits <- n }}, commits
}

// openTestDB opens a fresh file with bucket "b".
func openTestDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	return db
}

func put(key string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(key), []byte("v")) }
}

// A write group's writes wait for each other and share one commit; a
// member that leaves without writing releases the others at once.
func TestWriteGroupSharesACommit(t *testing.T) {
	c, commits := newTestCommitter(t)
	g := &writeGroup{c: c, linger: time.Minute} // no write goes on alone here
	ctxA, leaveA := g.Join(context.Background())
	_, leaveB := g.Join(context.Background())
	ctxC, leaveC := g.Join(context.Background())
	if ctxA.Value(writeGroupKey{}) != g {
		t.Fatal("a member's context does not carry its group")
	}

	errs := make(chan error, 2)
	go func() { errs <- g.update(put("a")); leaveA() }()
	// A waits for B and C: nothing is committed yet.
	select {
	case n := <-commits:
		t.Fatalf("a commit of %d before the other members wrote or left", n)
	case <-time.After(20 * time.Millisecond):
	}
	leaveB() // B makes no write
	go func() { errs <- g.update(put("c")); leaveC() }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := <-commits; n != 2 {
		t.Fatalf("the group's writes made a commit of %d, want both in one", n)
	}
	select {
	case n := <-commits:
		t.Fatalf("another commit of %d", n)
	default:
	}
	_ = ctxC
}

// A write whose group's other member neither writes nor leaves commits
// after the linger without it, and the group's later writes no longer wait.
func TestWriteGroupLingersAtMost(t *testing.T) {
	c, commits := newTestCommitter(t)
	const linger = 30 * time.Millisecond
	g := &writeGroup{c: c, linger: linger}
	_, leaveA := g.Join(context.Background())
	_, leaveSlow := g.Join(context.Background()) // never writes
	defer leaveSlow()
	start := time.Now()
	if err := g.update(put("a")); err != nil {
		t.Fatal(err)
	}
	leaveA()
	if waited := time.Since(start); waited < linger {
		t.Fatalf("committed after %s, before the linger of %s ended", waited, linger)
	}
	if n := <-commits; n != 1 {
		t.Fatalf("commit of %d, want 1", n)
	}
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if !open {
		t.Fatal("the group still holds writes after one lingered out")
	}
	// Later writes go straight to the committer: one commits although
	// another member has joined and not written (held, it would wait an hour).
	g.linger = time.Hour
	_, leaveOther := g.Join(context.Background())
	defer leaveOther()
	if err := g.update(put("late")); err != nil {
		t.Fatal(err)
	}
	if n := <-commits; n != 1 {
		t.Fatalf("commit of %d, want 1", n)
	}
}

// Writes of a group join the commit queue together with other writers',
// and each gets its own result when one of the commit's functions fails.
func TestWriteGroupWithOtherWriters(t *testing.T) {
	c, _ := newTestCommitter(t)
	errFail := errors.New("refused")
	var wg sync.WaitGroup
	results := make([]error, 64)
	for i := range 32 {
		g := &writeGroup{c: c}
		_, leave1 := g.Join(context.Background())
		_, leave2 := g.Join(context.Background())
		for j, leave := range []func(){leave1, leave2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer leave()
				k := 2*i + j
				results[k] = g.update(func(tx *bolt.Tx) error {
					if err := put(fmt.Sprint(k))(tx); err != nil {
						return err
					}
					if k%7 == 0 {
						return errFail
					}
					return nil
				})
			}()
		}
	}
	wg.Wait()
	err := c.db.View(func(tx *bolt.Tx) error {
		for k, res := range results {
			stored := tx.Bucket([]byte("b")).Get([]byte(fmt.Sprint(k))) != nil
			if fails := k%7 == 0; fails != errors.Is(res, errFail) || fails == stored {
				t.Errorf("write %d: result %v, stored %v", k, res, stored)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
