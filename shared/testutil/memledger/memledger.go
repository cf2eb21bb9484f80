// Package memledger is an in-memory payments.Store for tests and
// benchmarks: the store contract (shared/store/storetest) with no I/O.
package memledger

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/storeerr"
)

// Store keeps payments and sessions in memory. It is safe for concurrent use.
type Store struct {
	Clock    clock.Clock
	mu       sync.Mutex
	heads    map[string]payments.Head
	entries  map[string]map[string]payments.Entry
	facts    map[string][]payments.Fact
	factIDs  map[string]map[string]bool
	sessions map[string]payments.Session
}

var _ payments.Store = (*Store)(nil)

// New returns an empty store reading time from clk.
func New(clk clock.Clock) *Store {
	return &Store{Clock: clk, heads: map[string]payments.Head{}, entries: map[string]map[string]payments.Entry{},
		facts: map[string][]payments.Fact{}, factIDs: map[string]map[string]bool{}, sessions: map[string]payments.Session{}}
}

// PutSession implements payments.Store.
func (s *Store) PutSession(_ context.Context, sess payments.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[sess.ID] = sess
	return nil
}

// GetSession implements payments.Store.
func (s *Store) GetSession(_ context.Context, id string) (payments.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok || !sess.ExpiresAt.After(s.Clock.Now()) {
		return payments.Session{}, storeerr.ErrNotFound
	}
	return sess, nil
}

// head returns psp's live head (under s.mu).
func (s *Store) head(psp string) (payments.Head, bool) {
	h, ok := s.heads[psp]
	if ok && !h.CreatedAt.IsZero() && !h.CreatedAt.Add(store.PaymentRetention).After(s.Clock.Now()) {
		return payments.Head{}, false
	}
	return h, ok
}

// GetPayment implements payments.Store.
func (s *Store) GetPayment(_ context.Context, psp string) (payments.Head, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.head(psp)
	if !ok {
		return payments.Head{}, storeerr.ErrNotFound
	}
	return clone(h), nil
}

// GetEntries implements payments.Store.
func (s *Store) GetEntries(_ context.Context, psp string, refs ...string) ([]payments.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []payments.Entry
	if _, ok := s.head(psp); !ok {
		return nil, nil
	}
	for _, ref := range refs {
		if e, ok := s.entries[psp][ref]; ok {
			out = append(out, cloneEntry(e))
		}
	}
	return out, nil
}

// Timeline implements payments.Store.
func (s *Store) Timeline(_ context.Context, psp, cursor string, limit int) ([]payments.Fact, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.head(psp); !ok {
		return nil, "", nil
	}
	start := 0
	if cursor != "" {
		var err error
		if start, err = strconv.Atoi(cursor); err != nil {
			return nil, "", err
		}
	}
	all := s.facts[psp]
	end := min(start+limit, len(all))
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	}
	return append([]payments.Fact(nil), all[min(start, end):end]...), next, nil
}

// Write implements payments.Store.
func (s *Store) Write(_ context.Context, w payments.Write) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, found := s.head(w.PSP)
	var h payments.Head
	switch {
	case w.Put != nil:
		if !found && w.Put.Version != 1 || found && stored.Version != w.Put.Version-1 {
			return storeerr.ErrConflict
		}
		if !found { // a new payment: nothing of an expired one stays
			delete(s.entries, w.PSP)
			delete(s.facts, w.PSP)
			delete(s.factIDs, w.PSP)
		}
		h = clone(*w.Put)
	case !found || !w.Expect.Meets(stored):
		return storeerr.ErrConflict
	default:
		h = w.Apply(stored)
	}
	es := s.entries[w.PSP]
	for _, e := range w.Entries {
		cur, ok := es[e.Ref]
		if !ok && e.Version != 1 || ok && cur.Version != e.Version-1 {
			return storeerr.ErrConflict
		}
	}
	if es == nil {
		es = map[string]payments.Entry{}
		s.entries[w.PSP] = es
	}
	for _, e := range w.Entries {
		es[e.Ref] = cloneEntry(e)
	}
	ids := s.factIDs[w.PSP]
	if ids == nil {
		ids = map[string]bool{}
		s.factIDs[w.PSP] = ids
	}
	for _, f := range w.Facts {
		f.At = f.At.UTC()
		if !ids[f.ID] {
			ids[f.ID] = true
			s.facts[w.PSP] = append(s.facts[w.PSP], f)
		}
	}
	s.heads[w.PSP] = h
	return nil
}

// clone copies h, its times in UTC as the stores keep them.
func clone(h payments.Head) payments.Head {
	h.AmountUpdates = append([]payments.AmountUpdate(nil), h.AmountUpdates...)
	h.CreatedAt, h.UpdatedAt = h.CreatedAt.UTC(), h.UpdatedAt.UTC()
	return h
}

func cloneEntry(e payments.Entry) payments.Entry {
	e.Notices = append([]payments.Notice(nil), e.Notices...)
	return e
}

// Entries returns every entry of payment psp (for tests that check the
// fold against the cached totals).
func (s *Store) Entries(psp string) []payments.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []payments.Entry
	for _, e := range s.entries[psp] {
		out = append(out, cloneEntry(e))
	}
	return out
}

// InFlight implements payments.InFlight.
func (s *Store) InFlight(_ context.Context, before time.Time, limit int) ([]payments.OpRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type op struct {
		ref payments.OpRef
		at  time.Time
	}
	var ops []op
	for psp, es := range s.entries {
		if _, ok := s.head(psp); !ok {
			continue
		}
		for _, e := range es {
			if e.Recoverable() && e.Requested.At.Before(before) {
				ops = append(ops, op{payments.OpRef{PSP: psp, Ref: e.Ref}, e.Requested.At})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].at.Before(ops[j].at) })
	var out []payments.OpRef
	for _, o := range ops[:min(limit, len(ops))] {
		out = append(out, o.ref)
	}
	return out, nil
}

// Expiring lists the payments whose head is due in the expiry index
// (payments.Head.ExpiryDue) before `before`, soonest first.
func (s *Store) Expiring(_ context.Context, before time.Time, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type due struct {
		psp string
		at  time.Time
	}
	var ds []due
	for psp := range s.heads {
		h, ok := s.head(psp)
		if at, isDue := h.ExpiryDue(); ok && isDue && at.Before(before) {
			ds = append(ds, due{psp, at})
		}
	}
	sort.Slice(ds, func(i, j int) bool {
		return ds[i].at.Before(ds[j].at) || ds[i].at.Equal(ds[j].at) && ds[i].psp < ds[j].psp
	})
	var out []string
	for _, d := range ds[:min(limit, len(ds))] {
		out = append(out, d.psp)
	}
	return out, nil
}

var _ payments.InFlight = (*Store)(nil)
