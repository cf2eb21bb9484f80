package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// Claim writes rec as an in-progress record unless a live one exists for
// (rec.Scope, rec.Key); see idempotency.Store. On conflict it returns the
// existing record with storeerr.ErrConflict.
func (s *Store) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	if rec.Scope == "" || rec.Key == "" {
		return idempotency.Record{}, fmt.Errorf("embedded: claim idempotency key: %w", errEmpty("scope or key"))
	}
	stored := records.FromIdempotency(rec)
	stored.Status, stored.Response = string(idempotency.StatusInProgress), nil
	rec = stored.ToIdempotency()
	var existing idempotency.Record
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b, key := bucket(tx, bktIdempotency), compositeKey(rec.Scope, rec.Key)
		var cur records.Idempotency
		found, err := getJSON(b, key, &cur)
		if err != nil {
			return err
		}
		existing = cur.ToIdempotency()
		if found && !claimable(existing, now) {
			return storeerr.ErrConflict
		}
		if err := putJSON(b, key, stored); err != nil {
			return err
		}
		return s.maybeSweep(tx)
	})
	if err != nil {
		return existingOnConflict(existing, err), fmt.Errorf("embedded: claim idempotency key %q of %q: %w", rec.Key, rec.Scope, err)
	}
	return rec, nil
}

// claimable reports whether an existing record may be replaced by a new
// claim at now: it expired, or it is in progress and its lease ended.
func claimable(r idempotency.Record, now time.Time) bool {
	if !r.ExpiresAt.After(now) {
		return true
	}
	return r.Status == idempotency.StatusInProgress && !r.LeaseUntil.After(now)
}

// existingOnConflict returns existing when err is a conflict, else a zero record.
func existingOnConflict(existing idempotency.Record, err error) idempotency.Record {
	if errors.Is(err, storeerr.ErrConflict) {
		return existing
	}
	return idempotency.Record{}
}

// Complete stores resp and marks the record completed until expiresAt,
// dropping its lease; storeerr.ErrConflict unless the record holds leaseToken.
func (s *Store) Complete(ctx context.Context, scope, key, leaseToken string, resp idempotency.Response, expiresAt time.Time) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b, k := bucket(tx, bktIdempotency), compositeKey(scope, key)
		var rec records.Idempotency
		found, err := getJSON(b, k, &rec)
		if err != nil {
			return err
		}
		if !found || leaseToken == "" || rec.LeaseToken != leaseToken {
			return storeerr.ErrConflict
		}
		rec.Status, rec.LeaseToken, rec.ExpiresAt, rec.Response = string(idempotency.StatusCompleted), "", expiresAt.UTC(), records.FromResponse(&resp)
		if err := putJSON(b, k, rec); err != nil {
			return err
		}
		return s.maybeSweep(tx)
	})
	if err != nil {
		return fmt.Errorf("embedded: complete idempotency key %q of %q: %w", key, scope, err)
	}
	return nil
}

// Release deletes the record if it holds leaseToken; otherwise it does nothing.
func (s *Store) Release(ctx context.Context, scope, key, leaseToken string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b, k := bucket(tx, bktIdempotency), compositeKey(scope, key)
		var rec records.Idempotency
		found, err := getJSON(b, k, &rec)
		if err != nil || !found || leaseToken == "" || rec.LeaseToken != leaseToken {
			return err
		}
		return b.Delete(k)
	})
	if err != nil {
		return fmt.Errorf("embedded: release idempotency key %q of %q: %w", key, scope, err)
	}
	return nil
}
