// Package embedded is the persistent, pure-Go storage adapter used when the
// service runs locally: one bbolt file holds merchants, sites, API keys,
// subscriptions, idempotency records, rate-limit windows, sessions and
// payments. It implements every storage port (tenant, idempotency,
// ratelimit, payments).
//
// Values are JSON documents (times in UTC) in one bbolt bucket per kind;
// secondary indexes for per-merchant lists live in their own buckets and are
// updated in the same transaction as the record. Every conditional operation
// runs inside a single bbolt read-write transaction, so it is atomic with
// respect to every other operation on the file.
//
// Records with a lifetime (idempotency records, rate-limit windows, sessions)
// are treated as absent once expired, checked in code on every read, and
// deleted by Sweep, which also runs opportunistically (inside the write's
// transaction) once every 1024 writes of such records.
//
// bbolt locks the file: a second process (or a second Open in the same
// process) gets ErrInUse after the lock timeout instead of hanging.
package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// ErrInUse is returned by Open when another process holds the data file.
var ErrInUse = errors.New("data dir in use by another process")

// DefaultLockTimeout is how long Open waits for the file lock.
const DefaultLockTimeout = 2 * time.Second

// sweepEveryWrites is how many writes of expiring records (idempotency,
// rate limit, sessions) trigger one opportunistic Sweep.
const sweepEveryWrites = 1024

// Bucket names.
const (
	bktMerchants         = "merchants"            // id → Merchant
	bktSites             = "sites"                // id → Site
	bktSitesByMerchant   = "sites_by_merchant"    // compositeKey(merchantID, siteID) → ""
	bktAPIKeys           = "api_keys"             // hash → APIKey
	bktAPIKeysByMerchant = "api_keys_by_merchant" // compositeKey(merchantID, keyID) → hash
	bktSubscriptions     = "subscriptions"        // compositeKey(merchantID, id) → Subscription
	bktIdempotency       = "idempotency"          // compositeKey(scope, key) → Record
	bktSessions          = "sessions"             // id → Session
	bktPayments          = "payments"             // pspReference → Payment
)

// bucketNames lists every bucket Open creates.
func bucketNames() []string {
	return []string{
		bktMerchants, bktSites, bktSitesByMerchant, bktAPIKeys, bktAPIKeysByMerchant,
		bktSubscriptions, bktIdempotency, bktSessions, bktPayments,
	}
}

// bucket returns the named bucket, created by Open.
func bucket(tx *bolt.Tx, name string) *bolt.Bucket { return tx.Bucket([]byte(name)) }

// Compile-time checks that Store implements every port.
var (
	_ tenant.Store      = (*Store)(nil)
	_ idempotency.Store = (*Store)(nil)
	_ ratelimit.Store   = (*Store)(nil)
	_ payments.Store    = (*Store)(nil)
)

// Store is the bbolt-backed adapter. It is safe for concurrent use.
type Store struct {
	rate   rateWindows // rate-limit windows (in memory, see ratelimit.go)
	db     *bolt.DB
	commit *committer // group commit of update
	clock  clock.Clock
	writes atomic.Uint64 // writes of expiring records, for opportunistic sweeps
}

// Option configures Open.
type Option func(*options)

type options struct {
	clock       clock.Clock
	lockTimeout time.Duration
}

// WithClock sets the clock used for expiry checks that take no explicit time
// (sessions, rate-limit windows, sweeps). The default is clock.System.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithLockTimeout sets how long Open waits for another process to release
// the file (default DefaultLockTimeout).
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// Open opens (creating if needed) the database file at path, creating its
// parent directory. It fails with ErrInUse if another process holds the file
// for longer than the lock timeout.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{clock: clock.System{}, lockTimeout: DefaultLockTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.lockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("embedded: open %s: %w (file locked for %s)", path, ErrInUse, o.lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range bucketNames() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	return &Store{db: db, commit: &committer{db: db}, clock: o.clock}, nil
}

// Close releases the file.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("embedded: close: %w", err)
	}
	return nil
}

// Sweep deletes idempotency records, rate-limit windows and sessions that
// expired at or before now, and reports how many it deleted.
func (s *Store) Sweep(now time.Time) (int, error) {
	var n int
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		n, err = sweep(tx, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("embedded: sweep: %w", err)
	}
	return n, nil
}

// sweep deletes expired records inside tx.
func sweep(tx *bolt.Tx, now time.Time) (int, error) {
	kinds := []struct {
		bucket  string
		expires func(v []byte) (time.Time, error)
	}{
		{bktIdempotency, func(v []byte) (time.Time, error) {
			var r records.Idempotency
			err := json.Unmarshal(v, &r)
			return r.ExpiresAt, err
		}},
		{bktSessions, func(v []byte) (time.Time, error) {
			var ss records.Session
			err := json.Unmarshal(v, &ss)
			return ss.ExpiresAt, err
		}},
	}
	deleted := 0
	for _, k := range kinds {
		b := bucket(tx, k.bucket)
		var expired [][]byte
		err := b.ForEach(func(key, v []byte) error {
			exp, err := k.expires(v)
			if err != nil {
				return fmt.Errorf("decode %s/%q: %w", k.bucket, key, err)
			}
			if !exp.After(now) {
				expired = append(expired, bytes.Clone(key))
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		for _, key := range expired {
			if err := b.Delete(key); err != nil {
				return 0, err
			}
		}
		deleted += len(expired)
	}
	return deleted, nil
}

// maybeSweep runs sweep in tx once every sweepEveryWrites calls.
func (s *Store) maybeSweep(tx *bolt.Tx) error {
	if s.writes.Add(1)%sweepEveryWrites != 0 {
		return nil
	}
	_, err := sweep(tx, s.clock.Now())
	return err
}

// compositeKey joins parts so that distinct tuples never collide and all
// keys sharing a leading part are contiguous and ordered by the last part:
// every part but the last is prefixed by its uvarint length.
func compositeKey(parts ...string) []byte {
	var out []byte
	for i, p := range parts {
		if i < len(parts)-1 {
			out = binary.AppendUvarint(out, uint64(len(p)))
		}
		out = append(out, p...)
	}
	return out
}

// prefixOf is the prefix shared by every compositeKey(first, …).
func prefixOf(first string) []byte { return compositeKey(first, "") }

// getJSON decodes b[key] into v; ok is false when the key is absent.
func getJSON(b *bolt.Bucket, key []byte, v any) (ok bool, err error) {
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

// putJSON stores v as JSON at b[key].
func putJSON(b *bolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, raw)
}

// listJSON decodes every record of b whose key starts with prefix, in key
// order. With resolve, b is an index: resolve maps an index entry to the
// record's JSON.
func listJSON[T any](b *bolt.Bucket, prefix []byte, resolve func(k, v []byte) []byte) ([]T, error) {
	out := []T{}
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
		if resolve != nil {
			v = resolve(k, v)
			if v == nil {
				return nil, fmt.Errorf("dangling index entry %q", k)
			}
		}
		var x T
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, fmt.Errorf("decode %q: %w", k, err)
		}
		out = append(out, x)
	}
	return out, nil
}

func hasPrefix(b, prefix []byte) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == string(prefix)
}

// view runs fn in a read-only transaction after checking ctx.
func (s *Store) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

// update runs fn in a read-write transaction after checking ctx, committed
// together with concurrent writers' (group commit: one fsync for all). fn
// must depend only on tx: it may run twice (see committer).
func (s *Store) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.commit.update(fn)
}

// errEmpty reports a missing identifier.
func errEmpty(field string) error { return fmt.Errorf("empty %s", field) }

// mustGet decodes b[key] into v, or returns storeerr.ErrNotFound.
func mustGet(b *bolt.Bucket, key []byte, v any) error {
	ok, err := getJSON(b, key, v)
	if err != nil {
		return err
	}
	if !ok {
		return storeerr.ErrNotFound
	}
	return nil
}
