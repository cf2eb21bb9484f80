// Package embedded is the persistent, pure-Go storage adapter used when the
// service runs locally: one bbolt file holds merchants, sites, API keys,
// subscriptions, idempotency records, rate-limit windows, sessions and
// payments. It implements every storage port (tenant, idempotency,
// ratelimit, payments).
//
// Values are JSON documents (times in UTC) in one bbolt bucket per kind;
// secondary indexes for per-merchant lists live in their own buckets and are
// updated in the same transaction as the record. Every write is one bbolt
// read-write transaction (db.Update), atomic with respect to every other
// operation on the file and durable (bbolt's fsync) when it returns.
//
// Records with a lifetime (idempotency records, rate-limit windows, sessions)
// are treated as absent once expired, checked in code on every read, and
// deleted by Sweep, which also deletes payment records, notification
// events, merchants' event histories, webhook deliveries and dead queue
// jobs past their retention (store.*Retention); the local server runs it
// periodically (SweepEvery). Sweep works in short transactions of at most
// sweepChunk records each, so that a large file never holds the writers
// up for long.
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
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/ratelimit"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// ErrInUse is returned by Open when another process holds the data file.
var ErrInUse = errors.New("data dir in use by another process")

// DefaultLockTimeout is how long Open waits for the file lock.
const DefaultLockTimeout = 2 * time.Second

// sweepChunk is how many records one of Sweep's transactions examines: a
// few milliseconds of the single writer's time, whatever the file's size.
const sweepChunk = 512

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
)

// bucketNames lists every bucket Open creates.
func bucketNames() []string {
	return []string{
		bktMerchants, bktSites, bktSitesByMerchant, bktAPIKeys, bktAPIKeysByMerchant,
		bktSubscriptions, bktIdempotency, bktSessions,
		bktHeads, bktEntries, bktFacts, bktFactIDs, bktInFlight, bktExpiring,
	}
}

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
	leases leases      // idempotency leases (in memory, see idempotency.go)
	db     *bolt.DB
	clock  clock.Clock
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
	// NoFreelistSync: a commit does not write the list of free pages (one
	// page write fewer, flushed by each commit's fdatasync); Open rebuilds
	// the list by walking the file instead. Crash safety is unchanged:
	// the list is derived from the pages the meta page reaches. Files
	// written either way open either way.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.lockTimeout, NoFreelistSync: true})
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
	return &Store{db: db, clock: o.clock}, nil
}

// Close releases the file, once the write under way (if any) committed.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("embedded: close: %w", err)
	}
	return nil
}

// Sweep deletes what is past its expiry or retention at now: idempotency
// records and sessions at their expiry; payment records, notification
// events and merchants' event histories, webhook deliveries and dead
// queue jobs store.*Retention after their creation (docs/limits.md). It
// reports how many it deleted.
func (s *Store) Sweep(now time.Time) (int, error) {
	total := 0
	for _, k := range sweepKinds {
		var from []byte
		for {
			var (
				n    int
				next []byte
			)
			err := s.db.Update(func(tx *bolt.Tx) (err error) {
				n, next, err = sweepChunkOf(tx, k, from, now)
				return err
			})
			if err != nil {
				return total, fmt.Errorf("embedded: sweep: %w", err)
			}
			total += n
			if next == nil {
				break
			}
			from = next
		}
	}
	return total, nil
}

// SweepEvery runs Sweep at the store's clock at once and then every
// interval until ctx ends, logging what it did (the local server's
// periodic retention).
func (s *Store) SweepEvery(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		n, err := s.Sweep(s.clock.Now())
		switch {
		case err != nil:
			log.ErrorContext(ctx, "retention sweep failed", "err", err.Error())
		case n > 0:
			log.InfoContext(ctx, "retention sweep", "deleted", n)
		}
	}
}

// sweepKind is one kind of record sweep deletes: when a stored value
// expires, and what else goes with it (index entries).
type sweepKind struct {
	bucket  string
	expires func(v []byte) (time.Time, error)
	also    func(tx *bolt.Tx, key, v []byte) error
}

// expiresAt decodes v as T and returns f of it.
func expiresAt[T any](f func(T) time.Time) func(v []byte) (time.Time, error) {
	return func(v []byte) (time.Time, error) {
		var x T
		err := json.Unmarshal(v, &x)
		return f(x), err
	}
}

var sweepKinds = []sweepKind{
	{bucket: bktIdempotency, expires: expiresAt(func(r records.Idempotency) time.Time { return r.ExpiresAt })},
	{bucket: bktSessions, expires: expiresAt(func(ss records.Session) time.Time { return ss.ExpiresAt })},
	{bucket: bktHeads, expires: expiresAt(func(h records.PaymentHead) time.Time { return paymentExpiry(h.CreatedAt) }),
		also: func(tx *bolt.Tx, key, _ []byte) error {
			return deletePrefix(tx, prefixOf(string(key)), bktEntries, bktFacts, bktFactIDs)
		}},
	{bucket: bktEvents, expires: expiresAt(func(e records.Notification) time.Time { return e.ReceivedAt.Add(store.EventRetention) }),
		also: deleteIndexEntry(bktEventsByPayment, eventIndexKey)},
	{bucket: bktMerchantEvents, expires: expiresAt(func(e records.MerchantEvent) time.Time { return e.CreatedAt.Add(store.EventRetention) })},
	{bucket: bktDeliveries, expires: expiresAt(func(d records.Delivery) time.Time { return d.CreatedAt.Add(store.DeliveryRetention) }),
		also: deleteIndexEntry(bktDeliveriesByMerch, deliveryIndexKey)},
	{bucket: bktQueueDead, expires: expiresAt(func(j localqueue.StoredJob) time.Time { return j.CreatedAt.Add(store.DeadJobRetention) }),
		also: func(tx *bolt.Tx, key, _ []byte) error {
			if idx := readBucket(tx, bktQueueJobIndex); idx != nil {
				return idx.Delete(key)
			}
			return nil
		}},
}

// deletePrefix deletes every key starting with prefix in buckets.
func deletePrefix(tx *bolt.Tx, prefix []byte, buckets ...string) error {
	for _, name := range buckets {
		b := readBucket(tx, name)
		if b == nil {
			continue
		}
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteIndexEntry deletes a swept T's entry in index bucket idx.
func deleteIndexEntry[T any](idx string, key func(T) []byte) func(tx *bolt.Tx, _, v []byte) error {
	return func(tx *bolt.Tx, _, v []byte) error {
		var x T
		if err := json.Unmarshal(v, &x); err != nil {
			return err
		}
		if b := readBucket(tx, idx); b != nil {
			return b.Delete(key(x))
		}
		return nil
	}
}

// sweepChunkOf deletes the expired records of kind k among the next
// sweepChunk from key from (nil: the first) inside tx, and returns how
// many it deleted and the key to go on from (nil: the kind is done).
func sweepChunkOf(tx *bolt.Tx, k sweepKind, from []byte, now time.Time) (deleted int, next []byte, err error) {
	b := readBucket(tx, k.bucket)
	if b == nil {
		return 0, nil, nil
	}
	type entry struct{ key, v []byte }
	var expired []entry
	c := b.Cursor()
	key, v := c.First()
	if from != nil {
		key, v = c.Seek(from)
	}
	for seen := 0; key != nil; key, v = c.Next() {
		if seen == sweepChunk {
			next = bytes.Clone(key)
			break
		}
		seen++
		exp, err := k.expires(v)
		if err != nil {
			return 0, nil, fmt.Errorf("decode %s/%q: %w", k.bucket, key, err)
		}
		if !exp.After(now) {
			expired = append(expired, entry{bytes.Clone(key), bytes.Clone(v)})
		}
	}
	for _, e := range expired {
		if k.also != nil {
			if err := k.also(tx, e.key, e.v); err != nil {
				return 0, nil, fmt.Errorf("sweep %s/%q: %w", k.bucket, e.key, err)
			}
		}
		if err := b.Delete(e.key); err != nil {
			return 0, nil, err
		}
	}
	return len(expired), next, nil
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

// splitCompositeKey splits a two-part compositeKey.
func splitCompositeKey(k []byte) (first, second string, ok bool) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) < n {
		return "", "", false
	}
	return string(k[w : w+int(n)]), string(k[w+int(n):]), true
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
	if b == nil {
		return out, nil // never written
	}
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
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

// view runs fn in a read-only transaction after checking ctx.
func (s *Store) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

// update runs fn in a read-write transaction after checking ctx.
func (s *Store) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(fn)
}

// wrapErr is err (nil stays nil) in the words of what, formatted with args.
func wrapErr(err error, what string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("embedded: "+what+": %w", append(args, err)...)
}

// errEmpty reports a missing identifier.
func errEmpty(field string) error { return fmt.Errorf("empty %s", field) }

// getRecord reads the stored R at bkt[key] (storeerr.ErrNotFound when
// absent) and converts it with to; errors name what, formatted with args.
func getRecord[R, D any](ctx context.Context, s *Store, bkt string, key []byte, to func(R) D, what string, args ...any) (D, error) {
	var rec R
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bkt)
		if b == nil {
			return storeerr.ErrNotFound
		}
		return mustGet(b, key, &rec)
	})
	if err != nil {
		var zero D
		return zero, wrapErr(err, what, args...)
	}
	return to(rec), nil
}

// putRecord stores rec at bkt[key] in its own transaction; errors name
// what, formatted with args.
func putRecord(ctx context.Context, s *Store, bkt string, key []byte, rec any, what string, args ...any) error {
	err := s.update(ctx, func(tx *bolt.Tx) error { return putJSON(readBucket(tx, bkt), key, rec) })
	return wrapErr(err, what, args...)
}

// listRecords is listJSON of the stored Rs in bkt (resolve: see listJSON,
// given the transaction), converted with to; errors name what, formatted
// with args.
func listRecords[R, D any](ctx context.Context, s *Store, bkt string, prefix []byte, resolve func(tx *bolt.Tx) func(k, v []byte) []byte, to func(R) D, what string, args ...any) ([]D, error) {
	var out []R
	err := s.view(ctx, func(tx *bolt.Tx) error {
		var r func(k, v []byte) []byte
		if resolve != nil {
			r = resolve(tx)
		}
		var err error
		out, err = listJSON[R](readBucket(tx, bkt), prefix, r)
		return err
	})
	if err != nil {
		return nil, wrapErr(err, what, args...)
	}
	return records.Convert(out, to), nil
}

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
