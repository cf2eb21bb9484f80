package embedded

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/yp/paysvc/shared/idempotency"
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
	raw, err := json.Marshal(records.FromSession(sess))
	if err == nil { // through the journal with the request's idempotency result, like a payment write
		err = s.change(ctx, func(db kv) error { return db.put(bktSessions, []byte(sess.ID), raw) })
	}
	if err != nil {
		return fmt.Errorf("embedded: put session %q: %w", sess.ID, err)
	}
	return nil
}

// GetSession returns a session, or storeerr.ErrNotFound if it is unknown or
// expired by the store's clock.
func (s *Store) GetSession(ctx context.Context, id string) (payments.Session, error) {
	var rec records.Session
	err := s.viewJournaled(ctx, func(db kv) error {
		raw := db.get(bktSessions, []byte(id))
		if raw == nil {
			return storeerr.ErrNotFound
		}
		return json.Unmarshal(raw, &rec)
	})
	sess := rec.ToSession()
	if err == nil && !sess.ExpiresAt.After(s.clock.Now()) {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Session{}, fmt.Errorf("embedded: get session %q: %w", id, err)
	}
	return sess, nil
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
)

// ledger is one payment as read in a transaction.
type ledger struct {
	head  payments.Head
	found bool
}

// readLedger reads payment psp's head in db; a payment past its retention
// at now counts as absent.
func readLedger(db kv, psp string, now time.Time) (ledger, error) {
	var l ledger
	var r records.PaymentHead
	found, err := kvGetJSON(db, bktHeads, []byte(psp), &r)
	if err != nil {
		return l, err
	}
	if found {
		l.head, l.found = r.ToHead(), true
	}
	if l.found && paymentExpired(l.head.CreatedAt, now) {
		return ledger{}, nil
	}
	return l, nil
}

// GetPayment returns payment psp's head, or storeerr.ErrNotFound (also
// once it is past its retention, before a sweep deletes it).
func (s *Store) GetPayment(ctx context.Context, psp string) (payments.Head, error) {
	var l ledger
	err := s.viewJournaled(ctx, func(db kv) (err error) {
		l, err = readLedger(db, psp, s.clock.Now())
		return err
	})
	if err == nil && !l.found {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Head{}, fmt.Errorf("embedded: get payment %q: %w", psp, err)
	}
	return l.head, nil
}

// GetEntries returns those of payment psp's entries refs that exist.
func (s *Store) GetEntries(ctx context.Context, psp string, refs ...string) ([]payments.Entry, error) {
	var out []payments.Entry
	err := s.viewJournaled(ctx, func(db kv) error {
		l, err := readLedger(db, psp, s.clock.Now())
		if err != nil || !l.found {
			return err
		}
		for _, ref := range refs {
			e, ok, err := l.entry(db, psp, ref)
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

// entry reads entry ref of the ledger psp.
func (l ledger) entry(db kv, psp, ref string) (payments.Entry, bool, error) {
	var r records.Entry
	found, err := kvGetJSON(db, bktEntries, compositeKey(psp, ref), &r)
	return r.ToEntry(), found, err
}

// Timeline returns at most limit facts of payment psp after cursor, oldest
// first, and the cursor of the last one when more follow.
func (s *Store) Timeline(ctx context.Context, psp, cursor string, limit int) ([]payments.Fact, string, error) {
	var out []payments.Fact
	next := ""
	err := s.viewJournaled(ctx, func(db kv) error {
		l, err := readLedger(db, psp, s.clock.Now())
		if err != nil || !l.found {
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
		return db.scan(bktFacts, prefix, factKey(psp, after+1), func(k, v []byte) (bool, error) {
			if len(out) == limit {
				next = strconv.FormatUint(n, 10)
				return false, nil
			}
			var r records.Fact
			if err := json.Unmarshal(v, &r); err != nil {
				return false, fmt.Errorf("decode fact %q: %w", k, err)
			}
			out = append(out, r.ToFact())
			n = factNumber(k, prefix)
			return true, nil
		})
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

// Write makes payment write w in one transaction (shared with concurrent
// writers by group commit): storeerr.ErrConflict when a condition fails,
// and nothing is written then. It goes to the payment journal instead
// when its group allows (journal.go): checked against the file seen
// through the writes pending there, it is durable when Write returns.
func (s *Store) Write(ctx context.Context, w payments.Write) error {
	if w.PSP == "" {
		return fmt.Errorf("embedded: write payment: %w", errEmpty("pspReference"))
	}
	now := s.clock.Now()
	if c := w.Claim; c != nil {
		// Leases are in memory (idempotency.go): taken first, dropped
		// again if the write fails, so the two are one step as in DynamoDB's
		// transaction.
		existing, err := s.Claim(ctx, *c, now)
		if errors.Is(err, storeerr.ErrConflict) {
			return &idempotency.Taken{Existing: existing}
		}
		if err != nil {
			return fmt.Errorf("embedded: write payment %q: %w", w.PSP, err)
		}
	}
	change, commit := func(db kv) error { return writeLedger(db, w, now) }, s.commit.change
	if w.Claim != nil {
		commit = s.commit.changeFirst // its request's first write
	}
	var result []byte // the completed idempotency record of w.Result
	if r := w.Result; r != nil {
		var err error
		if result, err = s.completedRecord(*r); err != nil {
			return fmt.Errorf("embedded: write payment %q: %w", w.PSP, err)
		}
		k := compositeKey(r.Scope, r.Key)
		change = func(db kv) error {
			if err := writeLedger(db, w, now); err != nil {
				return err
			}
			return db.put(bktIdempotency, k, result)
		}
	}
	err := ctx.Err()
	if err == nil {
		err = commit(change)
	}
	if err != nil {
		if c := w.Claim; c != nil {
			s.dropLease(compositeKey(c.Scope, c.Key), c.LeaseToken)
		}
		return fmt.Errorf("embedded: write payment %q: %w", w.PSP, err)
	}
	if r := w.Result; r != nil {
		s.dropLease(compositeKey(r.Scope, r.Key), r.LeaseToken)
	}
	return nil
}

// writeLedger is Write in db.
func writeLedger(db kv, w payments.Write, now time.Time) error {
	l, err := readLedger(db, w.PSP, now)
	if err != nil {
		return err
	}
	var head payments.Head
	switch {
	case w.Put != nil:
		if stored := l.head.Version; !l.found && w.Put.Version != 1 || l.found && stored != w.Put.Version-1 {
			return storeerr.ErrConflict
		}
		head = *w.Put
	case !l.found || !w.Expect.Meets(l.head):
		return storeerr.ErrConflict
	default:
		head = w.Apply(l.head)
	}
	var index []indexChange
	for _, e := range w.Entries {
		stored, found, err := l.entry(db, w.PSP, e.Ref)
		if err != nil {
			return err
		}
		if !found && e.Version != 1 || found && stored.Version != e.Version-1 {
			return storeerr.ErrConflict
		}
		index = append(index, indexChange{stored, e})
	}
	if err := indexInFlight(db, w.PSP, index); err != nil {
		return err
	}
	if err := putLedger(db, w.PSP, w.Entries, w.Facts); err != nil {
		return err
	}
	return kvPutJSON(db, bktHeads, []byte(w.PSP), records.FromHead(head))
}

// putLedger puts entries and the facts not stored yet of payment psp.
func putLedger(db kv, psp string, entries []payments.Entry, facts []payments.Fact) error {
	for _, e := range entries {
		if err := kvPutJSON(db, bktEntries, compositeKey(psp, e.Ref), records.FromEntry(e)); err != nil {
			return err
		}
	}
	if len(facts) == 0 {
		return nil
	}
	prefix := prefixOf(psp)
	n := uint64(0)
	if k := db.last(bktFacts, prefix); k != nil {
		n = factNumber(k, prefix)
	}
	for _, f := range facts {
		id := compositeKey(psp, f.ID)
		if db.get(bktFactIDs, id) != nil {
			continue
		}
		n++
		if err := kvPutJSON(db, bktFacts, factKey(psp, n), records.FromFact(f)); err != nil {
			return err
		}
		if err := db.put(bktFactIDs, id, binary.BigEndian.AppendUint64(nil, n)); err != nil {
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

// indexInFlight moves payment psp's entries in the in-flight index as
// they change.
func indexInFlight(db kv, psp string, changes []indexChange) error {
	for _, c := range changes {
		was, is := c.from.Requested != nil && c.from.Recoverable(), c.to.Recoverable()
		if was == is {
			continue
		}
		if was {
			if err := db.del(bktInFlight, inFlightKey(c.from.Requested.At, psp, c.from.Ref)); err != nil {
				return err
			}
		}
		if is {
			if err := db.put(bktInFlight, inFlightKey(c.to.Requested.At, psp, c.to.Ref), []byte{}); err != nil {
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

// InFlight implements payments.InFlight: the index read oldest first;
// an entry that does not await its answer any more (its payment expired)
// is passed over.
func (s *Store) InFlight(ctx context.Context, before time.Time, limit int) ([]payments.OpRef, error) {
	now := s.clock.Now()
	var out []payments.OpRef
	err := s.viewJournaled(ctx, func(db kv) error {
		end := binary.BigEndian.AppendUint64(nil, uint64(before.UnixNano()))
		return db.scan(bktInFlight, nil, nil, func(k, _ []byte) (bool, error) {
			if len(out) == limit || len(k) < 8 || string(k[:8]) >= string(end) {
				return false, nil
			}
			psp, ref, ok := splitCompositeKey(k[8:])
			if !ok {
				return true, nil
			}
			l, err := readLedger(db, psp, now)
			if err != nil || !l.found {
				return err == nil, err
			}
			if e, found, err := l.entry(db, psp, ref); err != nil {
				return false, err
			} else if found && e.Recoverable() {
				out = append(out, payments.OpRef{PSP: psp, Ref: ref})
			}
			return true, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: operations in flight: %w", err)
	}
	return out, nil
}

var _ payments.InFlight = (*Store)(nil)
