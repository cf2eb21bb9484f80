package embedded

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

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

// TestFirstWriteCommitsAtOnce: a request's first write (changeFirst: a
// payment write taking its Idempotency-Key claim, the reservation before
// the upstream call) has nothing of its request to wait for, so alone it
// commits without gathering; a later write alone still gathers.
func TestFirstWriteCommitsAtOnce(t *testing.T) {
	db := openTestDB(t)
	gathered := 0
	c := &committer{db: db, gathering: func() { gathered++ }}
	change := func(k string) func(kv) error {
		return func(db kv) error { return db.put("b", []byte(k), []byte("v")) }
	}
	if err := c.changeFirst(change("reservation")); err != nil {
		t.Fatal(err)
	}
	if gathered != 0 {
		t.Fatalf("a lone first write gathered %d times, want 0", gathered)
	}
	if err := c.change(change("record")); err != nil {
		t.Fatal(err)
	}
	if gathered != 1 {
		t.Fatalf("a lone later write gathered %d times, want 1", gathered)
	}
	err := db.View(func(tx *bolt.Tx) error {
		for _, k := range []string{"reservation", "record"} {
			if tx.Bucket([]byte("b")).Get([]byte(k)) == nil {
				return fmt.Errorf("%s not committed", k)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func put(key string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(key), []byte("v")) }
}

// TestLoneLeaderGathers: a writer that would commit alone first gives
// others a moment to join (gather): one that joins meanwhile shares its
// commit — a request's result and its record, written at once, take one
// fsync — and nobody joining, it commits alone.
func TestLoneLeaderGathers(t *testing.T) {
	db := openTestDB(t)
	var groups []int
	var mu sync.Mutex
	joined := make(chan struct{})
	c := &committer{db: db, committed: func(n int) { mu.Lock(); groups = append(groups, n); mu.Unlock() }}
	c.queued = func(n int) {
		if n == 2 {
			close(joined)
		}
	}
	gathering := make(chan struct{})
	c.gathering = func() { close(gathering); <-joined } // the leader waits until the second writer is queued
	put := func(k string) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), []byte("v")) }
	}
	first := make(chan error, 1)
	go func() { first <- c.update(put("result")) }()
	<-gathering // the first writer leads and gathers
	if err := c.update(put("record")); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	c.gathering = func() {} // nobody comes
	if err := c.update(put("alone")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(groups) != "[2 1]" {
		t.Fatalf("commit group sizes %v, want [2 1]: the joiner shares the gathering leader's commit, a lone writer commits alone", groups)
	}
}
