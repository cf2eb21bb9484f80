package embedded

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// window is a rate-limit counter, stored as JSON under its bucket name.
type window struct {
	Count     int       `json:"count"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Hit counts one request in bucket if its live count is below limit and
// reports whether it did. A window that expired (by the store's clock) counts
// as empty. A full window is not an error and is not written.
func (s *Store) Hit(ctx context.Context, bucketName string, limit int, expiresAt time.Time) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	now := s.clock.Now()
	counted := false
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b, key := bucket(tx, bktRateLimit), []byte(bucketName)
		var w window
		found, err := getJSON(b, key, &w)
		if err != nil {
			return err
		}
		if !found || !w.ExpiresAt.After(now) {
			w = window{}
		}
		if w.Count >= limit {
			return nil
		}
		w.Count++
		w.ExpiresAt = expiresAt.UTC()
		if err := putJSON(b, key, w); err != nil {
			return err
		}
		counted = true
		return s.maybeSweep(tx)
	})
	if err != nil {
		return false, fmt.Errorf("embedded: rate-limit hit %q: %w", bucketName, err)
	}
	return counted, nil
}
