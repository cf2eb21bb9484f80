package embedded

import (
	"context"
	"sync"
	"time"
)

// window is a rate-limit counter.
type window struct {
	Count     int       `json:"count"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// rateWindows keeps rate-limit windows in memory. The embedded store is
// held by one process at a time (the file lock), so a counter in that
// process is shared by every request the store serves, exactly as the
// DynamoDB counter is shared by every instance; windows last seconds, so
// there is nothing worth an fsync per request.
type rateWindows struct {
	mu      sync.Mutex
	windows map[string]window
	hits    int
}

// Hit counts one request in bucket if its live count is below limit and
// reports whether it did. A window that expired (by the store's clock) counts
// as empty. A full window is not an error and is not written.
func (s *Store) Hit(_ context.Context, bucketName string, limit int, expiresAt time.Time) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	now := s.clock.Now()
	r := &s.rate
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.windows == nil {
		r.windows = map[string]window{}
	}
	if r.hits++; r.hits%1024 == 0 { // drop expired windows now and then
		for k, w := range r.windows {
			if !w.ExpiresAt.After(now) {
				delete(r.windows, k)
			}
		}
	}
	w, ok := r.windows[bucketName]
	if !ok || !w.ExpiresAt.After(now) {
		w = window{}
	}
	if w.Count >= limit {
		return false, nil
	}
	w.Count++
	w.ExpiresAt = expiresAt.UTC()
	r.windows[bucketName] = w
	return true, nil
}
