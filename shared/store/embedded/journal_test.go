package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/store/storetest"
	"github.com/yp/paysvc/shared/storeerr"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadJournal(t *testing.T) {
	j := &journal{size: 1 << 12, nonce: 7}
	entry := func(nonce, seq uint64, key, raw string) []byte {
		j.nonce, j.seq = nonce, seq-1
		return encodeEntry(j, legacyRecord([]byte(key), []byte(raw)))
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	a, b, c := entry(7, 1, "A", `{"v":1}`), entry(7, 2, "B", `{"v":2}`), entry(7, 3, "C", `{"v":3}`)
	torn := c[:len(c)-1]
	flipped := append([]byte(nil), c...)
	flipped[len(flipped)-1] ^= 1
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, ""},
		{"zeros", make([]byte, 100), ""},
		{"in sequence", cat(a, b, c, make([]byte, 64)), "A B C"},
		{"torn last entry", cat(a, b, torn), "A B"},
		{"flipped bit", cat(a, b, flipped), "A B"},
		{"another process's entry", cat(a, b, entry(8, 3, "C", `{}`)), "A B"},
		{"left from before the journal started over", cat(entry(7, 9, "X", `{}`), b, c), "X"},
		{"first entry of any nonce and sequence", cat(entry(9, 41, "A", `{}`), entry(9, 42, "B", `{}`)), "A B"},
		{"short header", a[:journalHeader-1], ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keys []string
			for _, e := range readJournal(tc.data) {
				ops, legacy, err := decodeRecord(e.payload)
				if err != nil || !legacy || len(ops) != 1 || ops[0].bucket != bktPayments {
					t.Fatalf("entry %d decodes as %+v, legacy %v, %v", e.seq, ops, legacy, err)
				}
				keys = append(keys, string(ops[0].key))
			}
			if got := strings.Join(keys, " "); got != tc.want {
				t.Fatalf("entries %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzReadJournal: entries written in sequence read back as written,
// whatever follows them in the file (a torn entry, an older one, noise);
// a write's changes decode as encoded; reading or decoding any bytes never
// panics.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte("PSP1"), []byte(`{"version":1}`), uint8(3), []byte{})
	f.Add([]byte(""), []byte(""), uint8(1), []byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})
	f.Add([]byte("K"), []byte("v"), uint8(0), bytes.Repeat([]byte{0}, 64))
	f.Add([]byte("K"), []byte("v"), uint8(5), []byte{0, 0, 1, 1, 'b', 1, 'k', 1, 'v', 2, 1, 'b', 1, 'k'})
	f.Fuzz(func(t *testing.T, key, raw []byte, n uint8, tail []byte) {
		readJournal(tail) // noise alone
		_, _, _ = decodeRecord(tail)
		ops := func(i int) []op {
			v := append(append([]byte(nil), raw...), byte(i))
			return []op{{bucket: "b", key: key, value: v}, {bucket: "other", key: v, del: i%2 == 0}, {bucket: "b", key: raw, value: []byte{}}}
		}
		j := &journal{nonce: 99}
		var data []byte
		for i := range int(n % 8) {
			data = append(data, encodeEntry(j, encodeRecord(ops(i)))...)
			j.seq++
		}
		got := readJournal(append(data, tail...))
		if len(got) < int(n%8) {
			t.Fatalf("%d entries read back, want at least the %d written", len(got), n%8)
		}
		for i := range int(n % 8) {
			dec, legacy, err := decodeRecord(got[i].payload)
			want := ops(i)
			if want[1].del {
				want[1].value = nil
			}
			same := len(dec) == len(want)
			for k := 0; same && k < len(want); k++ {
				d, w := dec[k], want[k]
				same = d.bucket == w.bucket && d.del == w.del && bytes.Equal(d.key, w.key) && bytes.Equal(d.value, w.value)
			}
			if err != nil || legacy || !same {
				t.Fatalf("entry %d decodes as %+v, %v, %v; want %+v", i, dec, legacy, err, want)
			}
		}
	})
}

// The port's contract with every payment write committed through bbolt
// (TestContract covers the journal, which takes writes that commit alone).
func TestContractWithoutJournal(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T, clk clock.Clock) storetest.Stores {
		s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clk)
		s.journal.failed = errors.New("journal off for this test")
		return storetest.Stores{Tenant: s, Idempotency: s, RateLimit: s, Payments: s}
	})
}

func openJournalTest(t *testing.T, path string, clk clock.Clock) *Store {
	t.Helper()
	s, err := Open(path, WithClock(clk))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// crash ends s as a killed process would: nothing folded, nothing
// flushed beyond what each write flushed itself.
// commitFile makes a write the journal never takes (a record update's):
// its bbolt commit folds the journal.
func commitFile(ctx context.Context, s *Store, id string) error {
	return s.PutRecordUpdate(ctx, id, []byte(`{}`))
}

func (s *Store) crash(t *testing.T) {
	t.Helper()
	s.journal.closed = true
	must(t, s.journal.close())
	must(t, s.db.Close())
}

// inFile returns the version of payment psp's head in the bbolt file,
// not through the journal (0: none).
func (s *Store) inFile(t *testing.T, psp string) int64 {
	t.Helper()
	var r records.PaymentHead
	must(t, s.db.View(func(tx *bolt.Tx) error {
		_, err := kvGetJSON(txKV{tx}, bktHeads, []byte(psp), &r)
		return err
	}))
	return r.Version
}

var journalT0 = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)

// journalFixture is a store's path, a fake clock, and the store opened
// there (not closed by the test's end: tests crash or reopen it).
func journalFixture(t *testing.T) (s *Store, path string, clk *clock.Fake) {
	t.Helper()
	clk = clock.NewFake(journalT0)
	path = filepath.Join(t.TempDir(), "paysvc.db")
	s, err := Open(path, WithClock(clk))
	must(t, err)
	return s, path, clk
}

// newHead is an authorised payment of 1000 EUR, capturable in full.
func newHead(psp string) payments.Head {
	yes := true
	h := payments.Head{PSPReference: psp, MerchantID: "m_a", SiteID: "site_1", Amount: money.Amount{Value: 1000, Currency: "EUR"},
		Auth: payments.Auth{ResultCode: "Authorised", Notified: &yes}, Authorised: 1000, Version: 1,
		CreatedAt: journalT0, UpdatedAt: journalT0}
	h.Totals = payments.Fold(h, nil)
	return h
}

func create(psp string) payments.Write {
	h := newHead(psp)
	return payments.Write{PSP: psp, Put: &h, Facts: []payments.Fact{{ID: "payment", At: journalT0, Kind: "payment", Origin: payments.OriginAPI}}}
}

// captureOf is capture ref's entry as its request writes it.
func captureOf(ref string, v int64, at time.Time) payments.Entry {
	return payments.Entry{Ref: ref, Kind: payments.OpCapture, Version: 1, Requested: &payments.Request{
		Amount: money.Amount{Value: v, Currency: "EUR"}, UpstreamKey: "k-" + ref, At: at}}
}

// request is the guarded write of capture e's request.
func request(psp string, e payments.Entry) payments.Write {
	v := e.Requested.Amount.Value
	return payments.Write{PSP: psp, Delta: e.Contribution(), At: e.Requested.At, Entries: []payments.Entry{e},
		Expect: payments.Expect{MerchantID: "m_a", Authorised: true, Currency: "EUR", Capturable: &v},
		Facts: []payments.Fact{{ID: e.Ref + "#requested", At: e.Requested.At, Kind: "capture-requested", Origin: payments.OriginAPI,
			PSPReference: e.Ref, Amount: &e.Requested.Amount}}}
}

// answer is the write of outcome o of operation e.
func answer(psp string, e payments.Entry, o payments.Outcome, at time.Time) (payments.Write, payments.Entry) {
	a := e
	a.Answered, a.Version = &payments.Answer{Outcome: o, At: at}, e.Version+1
	return payments.Write{PSP: psp, Delta: a.Contribution().Sub(e.Contribution()), Entries: []payments.Entry{a}, At: at,
		Facts: []payments.Fact{{ID: e.Ref + "#" + string(o), At: at, Kind: "capture-" + string(o), Origin: payments.OriginAPI}}}, a
}

func TestJournalTakesALoneWriteAndTheNextCommitFoldsIt(t *testing.T) {
	ctx := context.Background()
	s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clock.NewFake(journalT0))

	must(t, s.Write(ctx, create("PSP1")))
	if v := s.inFile(t, "PSP1"); v != 0 {
		t.Fatalf("a lone write is in the bbolt file at once (version %d); want it journaled", v)
	}
	e := captureOf("op_1", 400, journalT0)
	must(t, s.Write(ctx, request("PSP1", e)))
	got, err := s.GetPayment(ctx, "PSP1")
	if err != nil || got.Version != 2 || got.Totals.CapturesInFlight != 400 || got.Totals.Capturable != 600 {
		t.Fatalf("GetPayment of a journaled head = %+v, %v; want version 2, 400 in flight", got, err)
	}
	if es, err := s.GetEntries(ctx, "PSP1", "op_1", "op_none"); err != nil || len(es) != 1 || !reflect.DeepEqual(es[0], e) {
		t.Fatalf("GetEntries of a journaled entry = %+v, %v; want %+v", es, err, e)
	}
	// Conditions see journaled writes.
	for what, w := range map[string]payments.Write{
		"create again":                       create("PSP1"),
		"the same entry again":               request("PSP1", e),
		"more than the journaled capturable": request("PSP1", captureOf("op_2", 700, journalT0)),
	} {
		if err := s.Write(ctx, w); !errors.Is(err, storeerr.ErrConflict) {
			t.Errorf("%s over journaled writes = %v, want a conflict", what, err)
		}
	}
	if facts, _, err := s.Timeline(ctx, "PSP1", "", 10); err != nil || len(facts) != 2 || facts[1].Kind != "capture-requested" {
		t.Fatalf("Timeline of journaled facts = %+v, %v", facts, err)
	}
	if refs, err := s.InFlight(ctx, journalT0.Add(time.Hour), 10); err != nil || len(refs) != 1 || refs[0].Ref != "op_1" {
		t.Fatalf("InFlight of a journaled request = %+v, %v", refs, err)
	}

	// Any bbolt commit puts the journaled writes first, and the journal
	// starts over.
	must(t, commitFile(ctx, s, "CS1"))
	if v := s.inFile(t, "PSP1"); v != 2 {
		t.Fatalf("after the next commit the file holds version %d, want 2", v)
	}
	if len(s.journal.pending) != 0 || s.journal.off != 0 {
		t.Fatalf("journal after the fold: %d buckets pending, offset %d; want none, 0", len(s.journal.pending), s.journal.off)
	}
	w, _ := answer("PSP1", e, payments.Received, journalT0.Add(time.Second))
	must(t, s.Write(ctx, w))
	if got, err := s.GetPayment(ctx, "PSP1"); err != nil || got.Version != 3 || s.inFile(t, "PSP1") != 2 {
		t.Fatalf("GetPayment = %+v, %v (file: version %d); want version 3 journaled", got, err, s.inFile(t, "PSP1"))
	}
	if refs, err := s.InFlight(ctx, journalT0.Add(time.Hour), 10); err != nil || len(refs) != 0 {
		t.Fatalf("InFlight after a journaled answer deleted its index key = %+v, %v", refs, err)
	}
}

func TestJournaledWriteSurvivesACrash(t *testing.T) {
	ctx := context.Background()
	s, path, clk := journalFixture(t)
	must(t, s.Write(ctx, create("PSP1")))
	must(t, commitFile(ctx, s, "CS1")) // folds version 1
	e := captureOf("op_1", 400, journalT0)
	must(t, s.Write(ctx, request("PSP1", e))) // journaled (the journal started over)
	must(t, s.Write(ctx, create("PSP2")))     // journaled after it
	if s.inFile(t, "PSP1") != 1 || s.inFile(t, "PSP2") != 0 {
		t.Fatal("the writes after the fold are in the bbolt file; want them journaled only")
	}
	want := readAll(t, s, "PSP1", "PSP2")
	s.crash(t)

	s = openJournalTest(t, path, clk)
	if v1, v2 := s.inFile(t, "PSP1"), s.inFile(t, "PSP2"); v1 != 2 || v2 != 1 {
		t.Fatalf("Open folded PSP1 at version %d, PSP2 at %d; want 2 and 1", v1, v2)
	}
	if got := readAll(t, s, "PSP1", "PSP2"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the crash the store reads\n%s\nwant what it read before\n%s", got, want)
	}
	// Open marked the journal empty: a second crash folds nothing again.
	data, err := os.ReadFile(path + journalSuffix)
	must(t, err)
	if e := readJournal(data); len(e) != 0 {
		t.Fatalf("journal after Open holds %d entries, want none", len(e))
	}
}

// A journal entry the file holds already (the marker covers it) is not
// folded again by Open, though the file moved on since; one after it is.
func TestOpenFoldsOnlyWhatTheFileLacks(t *testing.T) {
	ctx := context.Background()
	s, path, clk := journalFixture(t)
	must(t, s.Write(ctx, create("PSP1")))
	e := captureOf("op_1", 400, journalT0)
	must(t, s.Write(ctx, request("PSP1", e)))
	must(t, commitFile(ctx, s, "CS1")) // folds both
	// The journal still holds both entries (it starts over by writing at
	// offset 0). The file moves on through bbolt (the journal full).
	s.journal.size = 10
	w, _ := answer("PSP1", e, payments.Refused, journalT0.Add(time.Second))
	must(t, s.Write(ctx, w))
	if v := s.inFile(t, "PSP1"); v != 3 {
		t.Fatalf("a write that does not fit the journal is at version %d in the file, want 3", v)
	}
	want := readAll(t, s, "PSP1")
	s.crash(t)

	s = openJournalTest(t, path, clk)
	if got := readAll(t, s, "PSP1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Open the store reads\n%s\nwant\n%s", got, want)
	}
}

// A journal entry whose write failed (it may be on disk all the same) is
// covered by the next commit's marker: its write never happens.
func TestFailedJournalWriteIsNotFoldedLater(t *testing.T) {
	ctx := context.Background()
	s, path, clk := journalFixture(t)
	must(t, s.Write(ctx, create("PSP1")))
	must(t, commitFile(ctx, s, "CS1"))

	// A write that landed on disk but reported an error (say, its
	// fdatasync failed): it put version 2.
	h := newHead("PSP1")
	h.Version, h.Reference = 2, "lost"
	j := s.journal
	rec := encodeEntry(j, encodeRecord([]op{{bucket: bktHeads, key: []byte("PSP1"), value: mustJSON(t, records.FromHead(h))}}))
	_, err := j.f.WriteAt(rec, j.off)
	must(t, err)
	j.fail(errors.New("fdatasync: input/output error"))

	// Writes go on through bbolt, the first folding the marker.
	h.Reference = "kept"
	must(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &h}))
	s.crash(t)

	s = openJournalTest(t, path, clk)
	if got, err := s.GetPayment(ctx, "PSP1"); err != nil || got.Reference != "kept" {
		t.Fatalf("after Open PSP1 = %+v, %v; want the write committed after the failed one", got, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// A torn entry (the crash came during its write) is left out whole: none
// of its changes are folded; the entries before it are, whole.
func TestTornEntryIsLeftOutWhole(t *testing.T) {
	ctx := context.Background()
	s, path, clk := journalFixture(t)
	must(t, s.Write(ctx, create("PSP1")))
	want := readAll(t, s, "PSP1")
	off := s.journal.off
	e := captureOf("op_1", 400, journalT0)
	must(t, s.Write(ctx, request("PSP1", e)))
	end := s.journal.off
	s.crash(t)

	f, err := os.OpenFile(path+journalSuffix, os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt(make([]byte, (end-off)/2), off+(end-off)/2) // the second half never written
	must(t, err)
	must(t, f.Close())

	s = openJournalTest(t, path, clk)
	if got := readAll(t, s, "PSP1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Open the store reads\n%s\nwant only the entry before the torn one\n%s", got, want)
	}
}

func TestJournalFullOrFailedFallsBackToBbolt(t *testing.T) {
	ctx := context.Background()
	s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clock.NewFake(journalT0))

	// Full: the write commits through bbolt, folding what is pending.
	must(t, s.Write(ctx, create("PSP1")))
	s.journal.size = s.journal.off + 10
	must(t, s.Write(ctx, create("PSP2")))
	if s.inFile(t, "PSP1") != 1 || s.inFile(t, "PSP2") != 1 {
		t.Fatal("with the journal full, the write and the pending one are not in the bbolt file")
	}
	s.journal.size = journalSize

	// A failed write fails its Write (its outcome is unknown, as a failed
	// commit's is) and leaves the journal unused: writes go on through
	// bbolt.
	f := s.journal.f
	s.journal.f = readOnly(t, f.Name())
	err := s.Write(ctx, create("PSP3"))
	if err == nil || !strings.Contains(err.Error(), "journal") {
		t.Fatalf("write with a failing journal = %v, want its write error", err)
	}
	must(t, s.journal.f.Close())
	s.journal.f = f
	must(t, s.Write(ctx, create("PSP4")))
	if s.inFile(t, "PSP4") != 1 {
		t.Fatal("after a journal write failed, a write is not in the bbolt file")
	}
}

func readOnly(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	return f
}

// An idempotency result and a session are journaled like a payment write:
// read through the journal, and folded by Open after a crash.
func TestJournaledIdempotencyResultAndSession(t *testing.T) {
	ctx := context.Background()
	s, path, clk := journalFixture(t)
	claim := idempotency.Record{Scope: "scope", Key: "key", LeaseToken: "lease", Fingerprint: "fp",
		LeaseUntil: journalT0.Add(time.Minute), ExpiresAt: journalT0.Add(time.Hour)}
	_, err := s.Claim(ctx, claim, journalT0)
	must(t, err)
	must(t, s.Complete(ctx, "scope", "key", "lease", idempotency.Response{Status: 201, Body: []byte(`{"ok":true}`)}, journalT0.Add(time.Hour)))
	must(t, s.PutSession(ctx, payments.Session{ID: "CS1", MerchantID: "m_a", ExpiresAt: journalT0.Add(time.Hour)}))
	if s.journal.seq != 2 {
		t.Fatalf("%d journal entries, want 2 (the result, the session)", s.journal.seq)
	}
	check := func(s *Store, when string) {
		t.Helper()
		claim.LeaseToken = "lease2"
		existing, err := s.Claim(ctx, claim, journalT0.Add(time.Second))
		if !errors.Is(err, storeerr.ErrConflict) || existing.Status != idempotency.StatusCompleted || existing.Response == nil || existing.Response.Status != 201 {
			t.Fatalf("%s: a claim of the completed key = %+v, %v; want the completed record", when, existing, err)
		}
		if sess, err := s.GetSession(ctx, "CS1"); err != nil || sess.MerchantID != "m_a" {
			t.Fatalf("%s: GetSession = %+v, %v", when, sess, err)
		}
	}
	check(s, "journaled")
	var inFile bool
	must(t, s.db.View(func(tx *bolt.Tx) error {
		inFile = bucket(tx, bktIdempotency).Get(compositeKey("scope", "key")) != nil || bucket(tx, bktSessions).Get([]byte("CS1")) != nil
		return nil
	}))
	if inFile {
		t.Fatal("the journaled writes are in the bbolt file already")
	}
	s.crash(t)
	check(openJournalTest(t, path, clk), "after a crash")
}

// Writers that arrive while a commit is under way share the next one
// (group commit): one journal entry for a group of up to maxJournaled
// writes the journal takes (a request's record and idempotency result);
// a bbolt transaction for a larger group, or when one write is not a
// change the journal takes (a record update's), or when one of them
// fails its condition (the transaction finds which: the others stand).
func TestConcurrentWritersShareOneCommit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		payments    int                  // payment writes, one payment each
		other       func(s *Store) error // one more writer, if any
		entries     uint64               // journal entries the group makes
		otherFailed bool
	}{
		{name: "a record and its idempotency result", payments: 1, entries: 1, other: func(s *Store) error {
			return s.Complete(ctx, "scope", "key", "lease", idempotency.Response{Status: 200}, journalT0.Add(time.Hour))
		}},
		{name: "two payment writes", payments: 2, entries: 1},
		{name: "more than the journal takes at once", payments: maxJournaled + 6},
		{name: "with a write the journal does not take", payments: 1, other: func(s *Store) error { return commitFile(ctx, s, "RU1") }},
		{name: "with a write that fails its condition", payments: 1, otherFailed: true, other: func(s *Store) error {
			return s.Write(ctx, request("PSP_NONE", captureOf("op_1", 1, journalT0)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clock.NewFake(journalT0))
			if _, err := s.Claim(ctx, idempotency.Record{Scope: "scope", Key: "key", LeaseToken: "lease",
				LeaseUntil: journalT0.Add(time.Minute), ExpiresAt: journalT0.Add(time.Hour)}, journalT0); err != nil {
				t.Fatal(err)
			}
			groups := make(chan int, 64)
			s.commit.committed = func(n int) { groups <- n }
			// A commit under way, held until the writers wait behind it.
			release := make(chan struct{})
			held := make(chan error)
			go func() { held <- s.commit.update(func(*bolt.Tx) error { <-release; return nil }) }()
			if n := <-groups; n != 1 {
				t.Fatalf("the held commit's group has %d writers", n)
			}
			n := tc.payments
			writers := n
			if tc.other != nil {
				writers++
			}
			allWaiting := make(chan struct{})
			s.commit.queued = func(waiting int) {
				if waiting == writers {
					close(allWaiting)
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range n {
				wg.Go(func() { errs[i] = s.Write(ctx, create(fmt.Sprintf("PSP%d", i))) })
			}
			if tc.other != nil {
				wg.Go(func() { errs[n] = tc.other(s) })
			}
			<-allWaiting
			close(release)
			must(t, <-held)
			wg.Wait()
			if g := <-groups; g != writers {
				t.Fatalf("the writers waiting behind a commit made a group of %d, want all %d", g, writers)
			}
			if tc.other != nil && (errs[n] != nil) != tc.otherFailed {
				t.Fatalf("the last writer: %v (want failed: %v)", errs[n], tc.otherFailed)
			}
			inFile := int64(1)
			if tc.entries > 0 {
				inFile = 0
			}
			for i := range n {
				must(t, errs[i])
				if v := s.inFile(t, fmt.Sprintf("PSP%d", i)); v != inFile {
					t.Errorf("grouped writer %d: version %d in the file, want %d", i, v, inFile)
				}
				if h, err := s.GetPayment(ctx, fmt.Sprintf("PSP%d", i)); err != nil || h.Version != 1 {
					t.Errorf("grouped writer %d reads %+v, %v", i, h, err)
				}
			}
			if s.journal.seq != tc.entries {
				t.Errorf("%d journal entries, want %d", s.journal.seq, tc.entries)
			}
		})
	}
}

// Journaled and grouped writes, and readers, run at once (go test -race):
// nothing is lost, no guard crossed, reads always see a whole write.
func TestJournalUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clock.NewFake(journalT0))
	must(t, s.Write(ctx, create("PSP1")))
	const n = 40
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i] = s.Write(ctx, request("PSP1", captureOf(fmt.Sprintf("op_%02d", i), 50, journalT0)))
			if i%5 == 0 { // other writers commit meanwhile, folding
				if err := commitFile(ctx, s, fmt.Sprint(i)); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			h, err := s.GetPayment(ctx, "PSP1")
			if err != nil || h.Totals.CapturesInFlight != 50*(h.Version-1) {
				t.Errorf("head version %d with %d in flight (%v): not a whole write", h.Version, h.Totals.CapturesInFlight, err)
			}
			facts, _, err := s.Timeline(ctx, "PSP1", "", 100)
			if err != nil || len(facts) < int(h.Version) {
				t.Errorf("%d facts after head version %d was read (%v)", len(facts), h.Version, err)
			}
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, storeerr.ErrConflict):
			t.Fatal(err)
		}
	}
	h, err := s.GetPayment(ctx, "PSP1")
	must(t, err)
	if ok != 20 || h.Totals.CapturesInFlight != 1000 || h.Version != 21 {
		t.Fatalf("%d captures of 50 on 1000 accepted, head %+v; want 20, all of it in flight", ok, h.Totals)
	}
	facts, next, err := s.Timeline(ctx, "PSP1", "", 100)
	must(t, err)
	if len(facts) != 21 || next != "" {
		t.Fatalf("%d facts, want 21", len(facts))
	}
}

// readAll is everything the store answers about payments psps, as text.
func readAll(t *testing.T, s *Store, psps ...string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, psp := range psps {
		h, err := s.GetPayment(ctx, psp)
		fmt.Fprintf(&b, "%s head: %s %v\n", psp, mustJSON(t, h), err)
		var refs []string
		for i := range 8 {
			refs = append(refs, fmt.Sprintf("op_%d", i))
		}
		es, err := s.GetEntries(ctx, psp, refs...)
		must(t, err)
		fmt.Fprintf(&b, "%s entries: %s\n", psp, mustJSON(t, es))
		for cursor, page := "", 0; page == 0 || cursor != ""; page++ {
			facts, next, err := s.Timeline(ctx, psp, cursor, 2)
			must(t, err)
			fmt.Fprintf(&b, "%s timeline after %q: %s next %q\n", psp, cursor, mustJSON(t, facts), next)
			cursor = next
		}
	}
	refs, err := s.InFlight(ctx, journalT0.Add(time.Hour), 100)
	must(t, err)
	fmt.Fprintf(&b, "in flight: %v\n", refs)
	return b.String()
}

// The same 150 random writes, on a store that journals them and one that
// commits every write through bbolt, read the same
// after each write; and the journaling store reads the same again once a commit
// folded its journal: the overlay's reads are the file's.
func TestOverlayReadsEqualTheFile(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(journalT0)
	journaled := openJournalTest(t, filepath.Join(t.TempDir(), "a.db"), clk)
	committed := openJournalTest(t, filepath.Join(t.TempDir(), "b.db"), clk)
	committed.journal.failed = errors.New("journal off for this test")
	psps := []string{"PSP_A", "PSP_B"}
	rng := rand.New(rand.NewPCG(1, 2))
	entries := map[string]map[string]payments.Entry{}
	folds := 0
	for step := range 150 {
		psp := psps[rng.IntN(len(psps))]
		at := journalT0.Add(time.Duration(step) * time.Second)
		if entries[psp] == nil {
			entries[psp] = map[string]payments.Entry{}
		}
		var (
			w    payments.Write
			next *payments.Entry
		)
		ref := fmt.Sprintf("op_%d", rng.IntN(6))
		e, exists := entries[psp][ref]
		switch {
		case !exists:
			c := captureOf(ref, int64(1+rng.IntN(150)), at)
			if rng.IntN(4) == 0 {
				c.Requested.UpstreamKey = ""
			}
			w, next = request(psp, c), &c
		case rng.IntN(3) == 0:
			w = payments.Write{PSP: psp, At: at, Facts: []payments.Fact{{ID: ref + "#requested", At: at, Kind: "again", Origin: "api"}}}
		default:
			o := []payments.Outcome{payments.Received, payments.Refused, payments.Unknown}[rng.IntN(3)]
			var a payments.Entry
			w, a = answer(psp, e, o, at)
			w.Facts[0].ID += fmt.Sprint(step)
			next = &a
		}
		if step == 0 || rng.IntN(10) == 0 {
			w = create(psp)
		}
		errJ, errC := journaled.Write(ctx, w), committed.Write(ctx, w)
		if (errJ == nil) != (errC == nil) || errJ != nil && !errors.Is(errJ, storeerr.ErrConflict) {
			t.Fatalf("step %d: journaled %v, committed %v", step, errJ, errC)
		}
		if errJ == nil && next != nil {
			entries[psp][next.Ref] = *next
		}
		want := readAll(t, committed, psps...)
		if got := readAll(t, journaled, psps...); got != want {
			t.Fatalf("step %d: through the journal the store reads\n%s\nthrough bbolt\n%s", step, got, want)
		}
		if rng.IntN(8) == 0 {
			folds++
			must(t, commitFile(ctx, journaled, fmt.Sprint(step)))
			if len(journaled.journal.pending) != 0 {
				t.Fatal("a commit left writes pending")
			}
			if got := readAll(t, journaled, psps...); got != want {
				t.Fatalf("step %d: after a fold the store reads\n%s\nbefore\n%s", step, got, want)
			}
		}
	}
	if journaled.journal.seq == 0 || folds == 0 {
		t.Fatalf("%d journal entries, %d folds: the test exercised nothing", journaled.journal.seq, folds)
	}
}

// Between a commit that folded the journal (and wrote more after it) and
// the journal's reset, readers see the file: the marker tells them the
// pending writes are in it already, and older than what followed them.
func TestReadsBetweenAFoldAndTheJournalsReset(t *testing.T) {
	ctx := context.Background()
	s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clock.NewFake(journalT0))
	must(t, s.Write(ctx, create("PSP1")))
	e := captureOf("op_1", 400, journalT0)
	must(t, s.Write(ctx, request("PSP1", e))) // head version 2, journaled
	w, _ := answer("PSP1", e, payments.Refused, journalT0.Add(time.Second))
	// The leader's commit, stopped before folded(): the fold, then a write
	// of version 3.
	must(t, s.db.Update(func(tx *bolt.Tx) error {
		if err := s.journal.fold(tx); err != nil {
			return err
		}
		return writeLedger(txKV{tx}, w, journalT0)
	}))
	if len(s.journal.pending) == 0 {
		t.Fatal("nothing pending")
	}
	h, err := s.GetPayment(ctx, "PSP1")
	if err != nil || h.Version != 3 || h.Totals.CapturesInFlight != 0 {
		t.Fatalf("GetPayment = version %d, %d in flight, %v; want the file's version 3", h.Version, h.Totals.CapturesInFlight, err)
	}
	if es, err := s.GetEntries(ctx, "PSP1", "op_1"); err != nil || len(es) != 1 || es[0].Version != 2 {
		t.Fatalf("GetEntries = %+v, %v; want the file's version 2", es, err)
	}
	if refs, err := s.InFlight(ctx, journalT0.Add(time.Hour), 10); err != nil || len(refs) != 0 {
		t.Fatalf("InFlight = %v, %v; want none (the file deleted the journaled index key)", refs, err)
	}
	s.journal.folded()
	if h, err := s.GetPayment(ctx, "PSP1"); err != nil || h.Version != 3 {
		t.Fatalf("after the reset GetPayment = version %d, %v; want 3", h.Version, err)
	}
}

// BenchmarkLoneCaptureRequest: a capture's request write committing alone,
// through the journal and through a bbolt commit (journal off). Every
// 8th write another commit (untimed) folds the journal, as a request's
// idempotency write does.
func BenchmarkLoneCaptureRequest(b *testing.B) {
	for _, mode := range []string{"journal", "bbolt"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(filepath.Join(b.TempDir(), "paysvc.db"), WithClock(clock.NewFake(journalT0)))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if mode == "bbolt" {
				s.journal.failed = errors.New("journal off")
			}
			for i := range 64 {
				if err := s.Write(ctx, create(fmt.Sprintf("PSP%d", i))); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				w := request(fmt.Sprintf("PSP%d", i%64), captureOf(fmt.Sprintf("op_%d", i), 1, journalT0))
				if err := s.Write(ctx, w); err != nil {
					b.Fatal(err)
				}
				if i%8 == 7 {
					b.StopTimer()
					if err := commitFile(ctx, s, "CS"); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
}

// Close while writers are still writing (a server whose requests outlive
// the store): Close waits for the commit under way, and every write
// acknowledged before it is in the file when the store opens again.
func TestCloseDuringWrites(t *testing.T) {
	ctx := context.Background()
	s, path, clk := journalFixture(t)
	must(t, s.Write(ctx, create("PSP1")))
	const n = 40
	var (
		wg      sync.WaitGroup
		results = make([]error, n)
		closed  = make(chan error, 1)
	)
	for i := range n {
		wg.Go(func() {
			results[i] = s.Write(ctx, request("PSP1", captureOf(fmt.Sprintf("op_%02d", i), 10, journalT0)))
		})
		if i == n/2 {
			go func() { closed <- s.Close() }()
		}
	}
	wg.Wait()
	must(t, <-closed)
	acked := 0
	for _, err := range results {
		if err == nil {
			acked++
		}
	}
	s = openJournalTest(t, path, clk)
	h, err := s.GetPayment(ctx, "PSP1")
	must(t, err)
	if h.Totals.CapturesInFlight != int64(10*acked) || h.Version != int64(acked+1) {
		t.Fatalf("after Close during writes and Open: head version %d with %d in flight; %d writes were acknowledged", h.Version, h.Totals.CapturesInFlight, acked)
	}
}
