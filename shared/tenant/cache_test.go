package tenant

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/storeerr"
)

// loader answers loads with the current value and counts them; a load
// waits on gate when one is set (a slow store).
type loader struct {
	mu    sync.Mutex
	v     int
	err   error
	loads int
	gate  chan struct{}
	began chan struct{} // when set, receives once per load as it begins
}

func (l *loader) load(ctx context.Context, _ string) (int, error) {
	l.mu.Lock()
	l.loads++
	gate, began := l.gate, l.began
	l.mu.Unlock()
	if began != nil {
		began <- struct{}{}
	}
	if gate != nil {
		<-gate
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v, l.err
}

func (l *loader) set(v int) { l.mu.Lock(); l.v = v; l.mu.Unlock() }

func (l *loader) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.loads }

// newLoaderCache is a cache of l's values on a fake clock.
func newLoaderCache(l *loader, ttl time.Duration, keepMissing bool) (*cache[string, int], *clock.Fake) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return newCache(clk, ttl, keepMissing, l.load), clk
}

// TestCacheRefreshesAheadOfExpiry: in the last quarter of the TTL a read
// answers from the cache and starts one refresh in the background, so a
// key read steadily never loads on a request's path again.
func TestCacheRefreshesAheadOfExpiry(t *testing.T) {
	l := &loader{v: 1}
	c, clk := newLoaderCache(l, 4*time.Second, false)
	if v, _ := c.get(t.Context(), "k"); v != 1 || l.count() != 1 {
		t.Fatalf("first read: %d after %d loads", v, l.count())
	}
	clk.Advance(2 * time.Second) // half the TTL: no refresh
	l.set(2)
	if v, _ := c.get(t.Context(), "k"); v != 1 || l.count() != 1 {
		t.Fatalf("mid-TTL read: %d after %d loads", v, l.count())
	}
	clk.Advance(time.Second) // the last quarter: answered from the cache, one refresh
	l.gate = make(chan struct{})
	for range 3 {
		if v, _ := c.get(t.Context(), "k"); v != 1 {
			t.Fatalf("a read during the refresh waited for it or saw it: %d", v)
		}
	}
	close(l.gate)
	c.inFlight.Wait()
	if l.count() != 2 {
		t.Fatalf("%d loads, want one refresh for three reads", l.count())
	}
	clk.Advance(2 * time.Second) // past the first load's expiry, within the refresh's
	if v, _ := c.get(t.Context(), "k"); v != 2 || l.count() != 2 {
		t.Fatalf("after the refresh: %d after %d loads", v, l.count())
	}
}

// TestCacheFailedRefreshKeepsEntryUntilExpiry: a refresh that fails keeps
// the entry until it expires; the read after that loads on its own path
// and sees the failure.
func TestCacheFailedRefreshKeepsEntryUntilExpiry(t *testing.T) {
	l := &loader{v: 1}
	c, clk := newLoaderCache(l, 4*time.Second, false)
	_, _ = c.get(t.Context(), "k")
	clk.Advance(3 * time.Second)
	l.err = errors.New("throttled")
	if v, err := c.get(t.Context(), "k"); v != 1 || err != nil {
		t.Fatalf("read in the refresh window: %d, %v", v, err)
	}
	c.inFlight.Wait()
	if v, err := c.get(t.Context(), "k"); v != 1 || err != nil {
		t.Fatalf("after a failed refresh: %d, %v (want the entry)", v, err)
	}
	c.inFlight.Wait()
	if l.count() != 3 {
		t.Fatalf("%d loads, want the first and two refreshes", l.count())
	}
	clk.Advance(time.Second)
	if _, err := c.get(t.Context(), "k"); !errors.Is(err, l.err) {
		t.Fatalf("after expiry the failure shows: %v", err)
	}
}

// TestCacheMissesShareOneLoad: concurrent reads of a key not cached wait
// for one load.
func TestCacheMissesShareOneLoad(t *testing.T) {
	l := &loader{v: 7, gate: make(chan struct{}), began: make(chan struct{}, 8)}
	c, _ := newLoaderCache(l, time.Second, false)
	var wg sync.WaitGroup
	got := make([]int, 8)
	read := func(i int) { defer wg.Done(); got[i], _ = c.get(t.Context(), "k") }
	wg.Add(len(got))
	go read(0)
	<-l.began // the load is registered before it begins: every later miss finds it
	for i := 1; i < len(got); i++ {
		go read(i)
	}
	close(l.gate)
	wg.Wait()
	for i, v := range got {
		if v != 7 {
			t.Fatalf("reader %d got %d", i, v)
		}
	}
	if l.count() != 1 {
		t.Fatalf("%d loads for 8 concurrent misses, want 1", l.count())
	}
}

// TestCacheDropDuringLoad: a load under way when the key is dropped (a
// write through the cache) does not put the old value back.
func TestCacheDropDuringLoad(t *testing.T) {
	l := &loader{v: 1, gate: make(chan struct{}), began: make(chan struct{}, 1)}
	c, _ := newLoaderCache(l, time.Minute, false)
	done := make(chan int)
	go func() { v, _ := c.get(t.Context(), "k"); done <- v }()
	<-l.began
	l.set(2)
	c.drop("k")
	close(l.gate)
	if v := <-done; v != 2 {
		t.Fatalf("the load answered %d", v)
	}
	l.gate, l.began = nil, nil
	l.set(3)
	if v, _ := c.get(t.Context(), "k"); v != 3 {
		t.Fatalf("a load older than the drop was kept: %d", v)
	}
}

// TestCacheMissing: not-found is kept only when the cache says so; other
// errors never are.
func TestCacheMissing(t *testing.T) {
	for _, keep := range []bool{true, false} {
		l := &loader{err: storeerr.ErrNotFound}
		c, _ := newLoaderCache(l, time.Minute, keep)
		for range 2 {
			if _, err := c.get(t.Context(), "k"); !errors.Is(err, storeerr.ErrNotFound) {
				t.Fatal(err)
			}
		}
		if want := map[bool]int{true: 1, false: 2}[keep]; l.count() != want {
			t.Fatalf("keepMissing %v: %d loads, want %d", keep, l.count(), want)
		}
	}
}
