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
// deleted by Sweep, which also deletes payment records, notification
// events, merchants' event histories, webhook deliveries and dead queue
// jobs past their retention (store.*Retention); the local server runs it
// periodically (SweepEvery). Sweep works in short transactions of at most
// sweepChunk records each, queued with the other writers, so that a large
// file never holds the writers up for long.
//
// Writes are committed in groups (groupcommit.go); a group of one or two
// payment, session or idempotency-result writes goes to the payment
// journal beside the file instead, and the next commit puts it into the
// file (journal.go).
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
	rate    rateWindows // rate-limit windows (in memory, see ratelimit.go)
	leases  leases      // idempotency leases (in memory, see idempotency.go)
	db      *bolt.DB
	journal *journal   // small groups of payment, session and idempotency writes (journal.go)
	commit  *committer // group commit of update
	clock   clock.Clock
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
	var j *journal
	if err == nil {
		j, err = openFoldedJournal(db, path+journalSuffix, o.clock.Now())
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	s := &Store{db: db, journal: j, clock: o.clock}
	s.commit = &committer{db: db, fold: j.fold, folded: j.folded, journal: s.journalChanges}
	return s, nil
}

// journalSuffix names the payment journal beside the database file.
const journalSuffix = ".journal"

// openFoldedJournal opens the payment journal at path and puts the
// entries a crash left in it into db, each whole or not at all, in one
// transaction with the marker: those the file's marker covers are in the
// file already. A payment record the release before the ledger journaled
// goes in unless the file holds that version or a later one (or the
// payment moved to the ledger buckets), or the record is past its
// retention at now.
func openFoldedJournal(db *bolt.DB, path string, now time.Time) (*journal, error) {
	j, entries, err := openJournal(path)
	if err != nil || len(entries) == 0 {
		return j, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		nonce, seq := readMarker(tx)
		for _, e := range entries {
			if e.nonce == nonce && e.seq <= seq {
				continue
			}
			ops, legacy, err := decodeRecord(e.payload)
			if err != nil {
				return fmt.Errorf("entry %d: %w", e.seq, err)
			}
			if legacy {
				err = foldLegacy(tx, ops[0], now)
			} else {
				err = apply(txKV{tx}, ops)
			}
			if err != nil {
				return err
			}
		}
		last := entries[len(entries)-1]
		return putMarker(tx, last.nonce, last.seq)
	})
	if err == nil {
		err = j.clearHead()
	}
	if err != nil {
		_ = j.close()
		return nil, fmt.Errorf("folding the payment journal: %w", err)
	}
	return j, nil
}

// apply makes the changes ops in db.
func apply(db kv, ops []op) error {
	for _, o := range ops {
		var err error
		if o.del {
			err = db.del(o.bucket, o.key)
		} else {
			err = db.put(o.bucket, o.key, o.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// foldLegacy puts a payment record the release before the ledger
// journaled (see openFoldedJournal).
func foldLegacy(tx *bolt.Tx, o op, now time.Time) error {
	if (txKV{tx}).get(bktHeads, o.key) != nil {
		return nil // moved to the ledger since
	}
	head, err := decodeHead(o.key, o.value)
	if err != nil {
		return err
	}
	b := bucket(tx, bktPayments)
	stored, err := decodeHead(o.key, b.Get(o.key))
	if err != nil {
		return err
	}
	if stored.Version >= head.Version || paymentExpired(head.CreatedAt, now) {
		return nil
	}
	return b.Put(o.key, o.value)
}

// paymentHead is what the journal's fold reads of a legacy record.
type paymentHead struct {
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
}

// decodeHead decodes the head of key's encoded legacy record raw (nil: the
// zero head, version 0).
func decodeHead(key, raw []byte) (paymentHead, error) {
	var head paymentHead
	if raw == nil {
		return head, nil
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return head, fmt.Errorf("decode payment %q: %w", key, err)
	}
	return head, nil
}

// Close folds the payment journal into the file and releases both.
func (s *Store) Close() error {
	// As the committer's leader: no commit or journal write runs meanwhile.
	err := s.commit.exclusive(func() error {
		return s.journal.closeFolded(func() error { return s.commit.run(func(*bolt.Tx) error { return nil }) })
	})
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
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
			err := s.commit.update(func(tx *bolt.Tx) (err error) {
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
	{bucket: bktPayments, expires: expiresAt(func(p paymentHead) time.Time { return paymentExpiry(p.CreatedAt) })},
	{bucket: bktHeads, expires: expiresAt(func(h records.PaymentHead) time.Time { return paymentExpiry(h.CreatedAt) }),
		also: func(tx *bolt.Tx, key, _ []byte) error {
			return deletePrefix(tx, prefixOf(string(key)), bktEntries, bktFacts, bktFactIDs)
		}},
	{bucket: bktEvents, expires: expiresAt(func(e records.Notification) time.Time { return e.ReceivedAt.Add(store.EventRetention) }),
		also: deleteIndexEntry(bktEventsByPayment, func(r records.Notification) []byte { return eventIndexKey(r.ToEvent()) })},
	{bucket: bktMerchantEvents, expires: expiresAt(func(e records.MerchantEvent) time.Time { return e.CreatedAt.Add(store.EventRetention) })},
	{bucket: bktDeliveries, expires: expiresAt(func(d records.Delivery) time.Time { return d.CreatedAt.Add(store.DeliveryRetention) }),
		also: deleteIndexEntry(bktDeliveriesByMerch, func(r records.Delivery) []byte { return deliveryIndexKey(r.ToDelivery()) })},
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
		for k, _ := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, _ = c.Seek(prefix) {
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

// viewJournaled runs fn on the file in a read-only transaction seen through
// the payment journal's pending writes, after checking ctx. With nothing
// pending it reads the file alone: a write journaled after the check is
// concurrent with the read. Otherwise it holds the journal's read lock
// from before the transaction begins until fn returns, so no reset of
// the journal (after a fold's commit) falls in between: each pending
// write is newer than the transaction's file, or in it already (folded
// by a commit the transaction sees: the marker tells, journal.view).
func (s *Store) viewJournaled(ctx context.Context, fn func(db kv) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := s.journal
	j.mu.RLock()
	if len(j.pending) == 0 {
		j.mu.RUnlock()
		return s.db.View(func(tx *bolt.Tx) error { return fn(txKV{tx}) })
	}
	defer j.mu.RUnlock()
	return s.db.View(func(tx *bolt.Tx) error { return fn(j.view(tx)) })
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

// change is update for a write on a kv, which the payment journal may
// take (journalChanges); its buckets' readers read through the journal
// (viewJournaled). fn may run twice.
func (s *Store) change(ctx context.Context, fn func(db kv) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.commit.change(fn)
}

// journalChanges makes changes durable as one payment journal entry, run
// by the committer's leader (nobody else appends or folds meanwhile, so
// the checks and the append are atomic with respect to every other
// writer): each change runs on the file seen through the journal's
// pending writes and the changes before it. handled false: a transaction
// takes them (the journal is full or unusable, or one of several changes
// failed: the transaction finds which); a lone change's failure is its
// result, with nothing written.
func (s *Store) journalChanges(changes []func(kv) error) (handled bool, err error) {
	j := s.journal
	if !j.usable() {
		return false, nil
	}
	var ops []op
	err = s.db.View(func(tx *bolt.Tx) error {
		o := j.view(tx)
		o.batch = map[string]map[string]pendingValue{}
		for _, change := range changes {
			if err := change(o); err != nil {
				return err
			}
		}
		ops = o.ops
		return nil
	})
	if err != nil {
		return len(changes) == 1, err
	}
	if err := j.append(ops); errors.Is(err, errJournalFull) {
		return false, nil
	} else if err != nil {
		return true, err
	}
	return true, nil
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
