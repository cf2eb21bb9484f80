package ratelimit

import (
	"context"
	"time"
)

// Store is the port behind the shared rate limiter: a counter per window,
// updated with one atomic conditional write.
type Store interface {
	// Hit counts one request in window `bucket` if its count is below limit
	// and reports whether it was counted. A full window is not an error: it
	// returns false and writes nothing. expiresAt is when the window record
	// may be deleted (TTL).
	Hit(ctx context.Context, bucket string, limit int, expiresAt time.Time) (bool, error)
}
