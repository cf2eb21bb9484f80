package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// PutSession writes a session, replacing one with the same id.
func (s *Store) PutSession(ctx context.Context, sess payments.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("embedded: put session: %w", errEmpty("id"))
	}
	return putRecord(ctx, s, bktSessions, []byte(sess.ID), records.FromSession(sess), "put session %q", sess.ID)
}

// GetSession returns a session, or storeerr.ErrNotFound if it is unknown or
// expired by the store's clock.
func (s *Store) GetSession(ctx context.Context, id string) (payments.Session, error) {
	sess, err := getRecord(ctx, s, bktSessions, []byte(id), records.Session.ToSession, "get session %q", id)
	if err == nil && !sess.ExpiresAt.After(s.clock.Now()) {
		return payments.Session{}, fmt.Errorf("embedded: get session %q: %w", id, storeerr.ErrNotFound)
	}
	return sess, err
}

// A payment is a ledger (payments.Head, Entry, Fact) in four buckets:
// its head by pspReference, its entries by (pspReference, ref), its
// timeline facts by (pspReference, number) in the order written, and the
// numbers of its facts by (pspReference, fact id), so a fact written again
// is found and left as it is.
const (
	bktHeads   = "ledger_heads"
	bktEntries = "ledger_entries"
	bktFacts   = "ledger_facts"
	bktFactIDs = "ledger_fact_ids"
	// bktInFlight indexes the entries awaiting their answer
	// (payments.Entry.Recoverable) by (requested at, pspReference, ref).
	bktInFlight = "ledger_inflight"
	// bktExpiring indexes the heads whose authorisation can still expire
	// (payments.Head.ExpiryDue) by (expires at, pspReference).
	bktExpiring = "ledger_expiring"
)

// readHead reads payment psp's head in tx; a payment past its retention
// at now counts as absent.
func readHead(tx *bolt.Tx, psp string, now time.Time) (head payments.Head, found bool, err error) {
	var r records.PaymentHead
	found, err = getJSON(readBucket(tx, bktHeads), []byte(psp), &r)
	if err != nil || !found || paymentExpired(r.CreatedAt, now) {
		return payments.Head{}, false, err
	}
	return r.ToHead(), true, nil
}

// GetPayment returns payment psp's head, or storeerr.ErrNotFound (also
// once it is past its retention, before a sweep deletes it).
func (s *Store) GetPayment(ctx context.Context, psp string) (payments.Head, error) {
	var (
		head  payments.Head
		found bool
	)
	err := s.view(ctx, func(tx *bolt.Tx) (err error) {
		head, found, err = readHead(tx, psp, s.clock.Now())
		return err
	})
	if err == nil && !found {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Head{}, fmt.Errorf("embedded: get payment %q: %w", psp, err)
	}
	return head, nil
}

// GetEntries returns those of payment psp's entries refs that exist.
func (s *Store) GetEntries(ctx context.Context, psp string, refs ...string) ([]payments.Entry, error) {
	var out []payments.Entry
	err := s.view(ctx, func(tx *bolt.Tx) error {
		_, found, err := readHead(tx, psp, s.clock.Now())
		if err != nil || !found {
			return err
		}
		for _, ref := range refs {
			e, ok, err := readEntry(tx, psp, ref)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: get entries of payment %q: %w", psp, err)
	}
	return out, nil
}

// readEntry reads entry ref of payment psp.
func readEntry(tx *bolt.Tx, psp, ref string) (payments.Entry, bool, error) {
	var r records.Entry
	found, err := getJSON(readBucket(tx, bktEntries), compositeKey(psp, ref), &r)
	return r.ToEntry(), found, err
}

// Timeline returns at most limit facts of payment psp after cursor, oldest
// first, and the cursor of the last one when more follow.
func (s *Store) Timeline(ctx context.Context, psp, cursor string, limit int) ([]payments.Fact, string, error) {
	var out []payments.Fact
	next := ""
	err := s.view(ctx, func(tx *bolt.Tx) error {
		_, found, err := readHead(tx, psp, s.clock.Now())
		if err != nil || !found {
			return err
		}
		after := uint64(0)
		if cursor != "" {
			if after, err = strconv.ParseUint(cursor, 10, 64); err != nil {
				return fmt.Errorf("bad cursor %q", cursor)
			}
		}
		prefix := prefixOf(psp)
		n := after
		c := readBucket(tx, bktFacts).Cursor()
		for k, v := c.Seek(factKey(psp, after+1)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(out) == limit {
				next = strconv.FormatUint(n, 10)
				break
			}
			var r records.Fact
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode fact %q: %w", k, err)
			}
			out = append(out, r.ToFact())
			n = factNumber(k, prefix)
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("embedded: timeline of payment %q: %w", psp, err)
	}
	return out, next, nil
}

// factKey is the key of payment psp's fact number n (numbers sort in
// order: fixed width, big-endian).
func factKey(psp string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(prefixOf(psp), n)
}

// factNumber is the number in fact key k (prefix: its payment's).
func factNumber(k, prefix []byte) uint64 { return binary.BigEndian.Uint64(k[len(prefix):]) }

// lastFact is the number of payment psp's last fact in b (0: none).
func lastFact(b *bolt.Bucket, psp string) uint64 {
	c := b.Cursor()
	k, _ := c.Seek(factKey(psp, math.MaxUint64))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if prefix := prefixOf(psp); k != nil && bytes.HasPrefix(k, prefix) {
		return factNumber(k, prefix)
	}
	return 0
}

// Write makes payment write w in one transaction: storeerr.ErrConflict
// when a condition fails, and nothing is written then.
func (s *Store) Write(ctx context.Context, w payments.Write) error {
	if w.PSP == "" {
		return fmt.Errorf("embedded: write payment: %w", errEmpty("pspReference"))
	}
	now := s.clock.Now()
	if err := s.update(ctx, func(tx *bolt.Tx) error { return writeLedger(tx, w, now) }); err != nil {
		return fmt.Errorf("embedded: write payment %q: %w", w.PSP, err)
	}
	return nil
}

// writeLedger is Write in tx.
func writeLedger(tx *bolt.Tx, w payments.Write, now time.Time) error {
	head, found, err := readHead(tx, w.PSP, now)
	if err != nil {
		return err
	}
	stored := head
	switch {
	case w.Put != nil:
		if !found && w.Put.Version != 1 || found && head.Version != w.Put.Version-1 {
			return storeerr.ErrConflict
		}
		head = *w.Put
	case !found || !w.Expect.Meets(head):
		return storeerr.ErrConflict
	default:
		head = w.Apply(head)
	}
	var index []indexChange
	for _, e := range w.Entries {
		stored, found, err := readEntry(tx, w.PSP, e.Ref)
		if err != nil {
			return err
		}
		if !found && e.Version != 1 || found && stored.Version != e.Version-1 {
			return storeerr.ErrConflict
		}
		index = append(index, indexChange{stored, e})
	}
	if err := indexInFlight(readBucket(tx, bktInFlight), w.PSP, index); err != nil {
		return err
	}
	if err := indexExpiring(readBucket(tx, bktExpiring), stored, found, head); err != nil {
		return err
	}
	if err := putLedger(tx, w.PSP, w.Entries, w.Facts); err != nil {
		return err
	}
	return putJSON(readBucket(tx, bktHeads), []byte(w.PSP), records.FromHead(head))
}

// putLedger puts entries and the facts not stored yet of payment psp.
func putLedger(tx *bolt.Tx, psp string, entries []payments.Entry, facts []payments.Fact) error {
	for _, e := range entries {
		if err := putJSON(readBucket(tx, bktEntries), compositeKey(psp, e.Ref), records.FromEntry(e)); err != nil {
			return err
		}
	}
	if len(facts) == 0 {
		return nil
	}
	factsB, ids := readBucket(tx, bktFacts), readBucket(tx, bktFactIDs)
	n := lastFact(factsB, psp)
	for _, f := range facts {
		id := compositeKey(psp, f.ID)
		if ids.Get(id) != nil {
			continue
		}
		n++
		if err := putJSON(factsB, factKey(psp, n), records.FromFact(f)); err != nil {
			return err
		}
		if err := ids.Put(id, binary.BigEndian.AppendUint64(nil, n)); err != nil {
			return err
		}
	}
	return nil
}

// paymentExpired reports whether a record created at created is past its
// retention at now.
func paymentExpired(created, now time.Time) bool { return !paymentExpiry(created).After(now) }

// paymentExpiry is when the retention of a record created at created ends
// (never for a record without CreatedAt).
func paymentExpiry(created time.Time) time.Time {
	if created.IsZero() {
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return created.Add(store.PaymentRetention)
}

// indexChange is an entry as stored (zero: none) and as written.
type indexChange struct{ from, to payments.Entry }

// indexInFlight moves payment psp's entries in the in-flight index b as
// they change.
func indexInFlight(b *bolt.Bucket, psp string, changes []indexChange) error {
	for _, c := range changes {
		was, is := c.from.Requested != nil && c.from.Recoverable(), c.to.Recoverable()
		if was == is {
			continue
		}
		if was {
			if err := b.Delete(inFlightKey(c.from.Requested.At, psp, c.from.Ref)); err != nil {
				return err
			}
		}
		if is {
			if err := b.Put(inFlightKey(c.to.Requested.At, psp, c.to.Ref), []byte{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// inFlightKey orders the index by time: 8 bytes of Unix nanoseconds, the
// pspReference and the ref (compositeKey).
func inFlightKey(at time.Time, psp, ref string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), compositeKey(psp, ref)...)
}

// indexExpiring moves a head in the expiry index b as it changes from
// stored (found: one was stored) to written.
func indexExpiring(b *bolt.Bucket, stored payments.Head, found bool, written payments.Head) error {
	was, wasDue := stored.ExpiryDue()
	is, isDue := written.ExpiryDue()
	if wasDue && found && (!isDue || !was.Equal(is)) {
		if err := b.Delete(expiringKey(was, stored.PSPReference)); err != nil {
			return err
		}
	}
	if isDue && (!wasDue || !found || !was.Equal(is)) {
		return b.Put(expiringKey(is, written.PSPReference), []byte{})
	}
	return nil
}

// expiringKey orders the expiry index by time: 8 bytes of Unix
// nanoseconds, then the pspReference.
func expiringKey(at time.Time, psp string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), psp...)
}

// Expiring lists at most limit payments whose authorisation expires
// before `before`, soonest first: the expiry index read in order (a
// payment past its retention is passed over).
func (s *Store) Expiring(ctx context.Context, before time.Time, limit int) ([]string, error) {
	now := s.clock.Now()
	var out []string
	err := s.view(ctx, func(tx *bolt.Tx) error {
		end := binary.BigEndian.AppendUint64(nil, uint64(before.UnixNano()))
		c := readBucket(tx, bktExpiring).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit && len(k) > 8 && string(k[:8]) < string(end); k, _ = c.Next() {
			psp := string(k[8:])
			if _, found, err := readHead(tx, psp, now); err != nil {
				return err
			} else if found {
				out = append(out, psp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: expiring authorisations: %w", err)
	}
	return out, nil
}

// InFlight implements payments.InFlight: the index read oldest first;
// an entry that does not await its answer any more (its payment expired)
// is passed over.
func (s *Store) InFlight(ctx context.Context, before time.Time, limit int) ([]payments.OpRef, error) {
	now := s.clock.Now()
	var out []payments.OpRef
	err := s.view(ctx, func(tx *bolt.Tx) error {
		end := binary.BigEndian.AppendUint64(nil, uint64(before.UnixNano()))
		c := readBucket(tx, bktInFlight).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit && len(k) >= 8 && string(k[:8]) < string(end); k, _ = c.Next() {
			psp, ref, ok := splitCompositeKey(k[8:])
			if !ok {
				continue
			}
			if _, found, err := readHead(tx, psp, now); err != nil {
				return err
			} else if !found {
				continue
			}
			if e, found, err := readEntry(tx, psp, ref); err != nil {
				return err
			} else if found && e.Recoverable() {
				out = append(out, payments.OpRef{PSP: psp, Ref: ref})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: operations in flight: %w", err)
	}
	return out, nil
}

var _ payments.InFlight = (*Store)(nil)
