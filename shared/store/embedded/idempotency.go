package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// In-progress claims (leases) are kept in memory, not in the file: the
// embedded store serves one process, whose leases end with it anyway, and a
// claim then costs no commit (no fsync) before the upstream call. What must
// survive a crash is durable: a completed record is written (and synced)
// before its answer is sent. A request interrupted by a crash left no
// lease, so its retry runs again at once and sends the upstream the same
// derived Idempotency-Key: the upstream answers it once (docs/idempotency.md).

// leases are the in-progress claims, by compositeKey.
type leases struct {
	mu    sync.Mutex
	m     map[string]records.Idempotency
	calls int
}

// Claim takes a lease on (rec.Scope, rec.Key) unless a live lease or a
// live completed record exists; see idempotency.Store. On conflict it
// returns the existing record with storeerr.ErrConflict.
func (s *Store) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	if rec.Scope == "" || rec.Key == "" {
		return idempotency.Record{}, fmt.Errorf("embedded: claim idempotency key: %w", errEmpty("scope or key"))
	}
	stored := records.FromIdempotency(rec)
	stored.Status, stored.Response = string(idempotency.StatusInProgress), nil
	rec = stored.ToIdempotency()
	key := compositeKey(rec.Scope, rec.Key)
	conflict := func(existing idempotency.Record) (idempotency.Record, error) {
		return existing, fmt.Errorf("embedded: claim idempotency key %q of %q: %w", rec.Key, rec.Scope, storeerr.ErrConflict)
	}

	l := &s.leases
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]records.Idempotency{}
	}
	if l.calls++; l.calls%1024 == 0 { // drop ended leases now and then
		for k, r := range l.m {
			if claimable(r.ToIdempotency(), now) {
				delete(l.m, k)
			}
		}
	}
	if cur, ok := l.m[string(key)]; ok && !claimable(cur.ToIdempotency(), now) {
		l.mu.Unlock()
		return conflict(cur.ToIdempotency())
	}
	l.m[string(key)] = stored // held while the file is read: a concurrent claim conflicts
	l.mu.Unlock()

	// A live completed record decides.
	var cur records.Idempotency
	var found bool
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		found, err = getJSON(readBucket(tx, bktIdempotency), key, &cur)
		return err
	})
	if err == nil && found && !claimable(cur.ToIdempotency(), now) {
		s.dropLease(key, stored.LeaseToken)
		return conflict(cur.ToIdempotency())
	}
	if err != nil {
		s.dropLease(key, stored.LeaseToken)
		return idempotency.Record{}, fmt.Errorf("embedded: claim idempotency key %q of %q: %w", rec.Key, rec.Scope, err)
	}
	return rec, nil
}

// dropLease ends the lease of key if it holds token.
func (s *Store) dropLease(key []byte, token string) {
	s.leases.mu.Lock()
	defer s.leases.mu.Unlock()
	if cur, ok := s.leases.m[string(key)]; ok && token != "" && cur.LeaseToken == token {
		delete(s.leases.m, string(key))
	}
}

// claimable reports whether an existing record may be replaced by a new
// claim at now: it expired, or it is in progress and its lease ended.
func claimable(r idempotency.Record, now time.Time) bool {
	if !r.ExpiresAt.After(now) {
		return true
	}
	return r.Status == idempotency.StatusInProgress && !r.LeaseUntil.After(now)
}

// Complete stores resp and marks the record completed until expiresAt,
// ending its lease; storeerr.ErrConflict unless the lease holds leaseToken.
// The completed record is durable when Complete returns.
func (s *Store) Complete(ctx context.Context, scope, key, leaseToken string, resp idempotency.Response, expiresAt time.Time) error {
	k := compositeKey(scope, key)
	// Encoded before the transaction: the commit only puts it.
	raw, err := s.completedRecord(k, leaseToken, resp, expiresAt)
	if err == nil {
		err = s.update(ctx, func(tx *bolt.Tx) error { return readBucket(tx, bktIdempotency).Put(k, raw) })
	}
	if err != nil {
		return fmt.Errorf("embedded: complete idempotency key %q of %q: %w", key, scope, err)
	}
	s.dropLease(k, leaseToken)
	return nil
}

// completedRecord is the record Complete writes for key k, encoded:
// storeerr.ErrConflict unless its lease holds leaseToken.
func (s *Store) completedRecord(k []byte, leaseToken string, resp idempotency.Response, expiresAt time.Time) ([]byte, error) {
	s.leases.mu.Lock()
	held, ok := s.leases.m[string(k)]
	s.leases.mu.Unlock()
	if !ok || leaseToken == "" || held.LeaseToken != leaseToken {
		return nil, storeerr.ErrConflict
	}
	rec := held
	rec.Status, rec.LeaseToken, rec.ExpiresAt, rec.Response = string(idempotency.StatusCompleted), "", expiresAt.UTC(), records.FromResponse(&resp)
	return json.Marshal(rec)
}

// Release ends the lease if it holds leaseToken; otherwise it does nothing.
func (s *Store) Release(_ context.Context, scope, key, leaseToken string) error {
	s.dropLease(compositeKey(scope, key), leaseToken)
	return nil
}
