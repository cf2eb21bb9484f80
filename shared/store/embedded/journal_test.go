package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/storetest"
	"github.com/yp/paysvc/shared/storeerr"
)

// The port's contract with every payment save committed through bbolt
// (TestContract covers the journal, which takes saves that commit alone).
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
func (s *Store) crash(t *testing.T) {
	t.Helper()
	s.journal.closed = true
	if err := s.journal.close(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// inFile returns the version of key's record in the bbolt file (0: none).
func (s *Store) inFile(t *testing.T, key string) int64 {
	t.Helper()
	var head paymentHead
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := bucket(tx, bktPayments).Get([]byte(key))
		if raw == nil {
			return nil
		}
		return json.Unmarshal(raw, &head)
	})
	if err != nil {
		t.Fatal(err)
	}
	return head.Version
}

// journalFixture is a store's path, a fake clock at now, and the store
// opened there (not closed by the test's end: tests crash or reopen it).
func journalFixture(t *testing.T) (s *Store, path string, clk *clock.Fake, now time.Time) {
	t.Helper()
	now = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	clk = clock.NewFake(now)
	path = filepath.Join(t.TempDir(), "paysvc.db")
	s, err := Open(path, WithClock(clk))
	must(t, err)
	return s, path, clk, now
}

func journalPayment(psp string, version int64, at time.Time) payments.Payment {
	return payments.Payment{PSPReference: psp, MerchantID: "m_a", Amount: money.Amount{Value: 1000, Currency: "EUR"},
		State: payments.StateAuthorised, Version: version, CreatedAt: at, UpdatedAt: at}
}

func TestJournalTakesALoneSaveAndTheNextCommitFoldsIt(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clock.NewFake(now))

	must(t, s.SavePayment(ctx, journalPayment("PSP1", 1, now), 0))
	if v := s.inFile(t, "PSP1"); v != 0 {
		t.Fatalf("a lone save is in the bbolt file at once (version %d); want it journaled", v)
	}
	p := journalPayment("PSP1", 2, now)
	p.CapturedValue = 400
	must(t, s.SavePayment(ctx, p, 1))
	got, err := s.GetPayment(ctx, "PSP1")
	if err != nil || got.Version != 2 || got.CapturedValue != 400 {
		t.Fatalf("GetPayment of a journaled record = %+v, %v; want version 2, captured 400", got, err)
	}
	// Version checks see journaled records.
	for _, prev := range []int64{0, 1, 3} {
		if err := s.SavePayment(ctx, journalPayment("PSP1", prev+1, now), prev); !errors.Is(err, storeerr.ErrConflict) {
			t.Errorf("save at previous version %d over a journaled version 2 = %v, want a conflict", prev, err)
		}
	}

	// Any bbolt commit puts the journaled records first, and the journal
	// starts over.
	must(t, s.PutSession(ctx, payments.Session{ID: "CS1", ExpiresAt: now.Add(time.Hour)}))
	if v := s.inFile(t, "PSP1"); v != 2 {
		t.Fatalf("after the next commit the file holds version %d, want 2", v)
	}
	if _, ok := s.journal.get([]byte("PSP1")); ok || s.journal.off != 0 {
		t.Fatalf("journal after the fold: pending %v, offset %d; want empty, 0", ok, s.journal.off)
	}
	p.Version, p.CapturedValue = 3, 1000
	must(t, s.SavePayment(ctx, p, 2))
	if got, err := s.GetPayment(ctx, "PSP1"); err != nil || got.Version != 3 {
		t.Fatalf("GetPayment = %+v, %v; want version 3", got, err)
	}
}

func TestJournaledSaveSurvivesACrash(t *testing.T) {
	ctx := context.Background()
	s, path, clk, now := journalFixture(t)
	must(t, s.SavePayment(ctx, journalPayment("PSP1", 1, now), 0))
	must(t, s.PutSession(ctx, payments.Session{ID: "CS1", ExpiresAt: now.Add(time.Hour)})) // folds version 1
	p := journalPayment("PSP1", 2, now)
	p.CapturedValue = 400
	must(t, s.SavePayment(ctx, p, 1))                              // journaled (the journal started over)
	must(t, s.SavePayment(ctx, journalPayment("PSP2", 1, now), 0)) // journaled after it
	if s.inFile(t, "PSP1") != 1 || s.inFile(t, "PSP2") != 0 {
		t.Fatal("the saves after the fold are in the bbolt file; want them journaled only")
	}
	s.crash(t)

	s = openJournalTest(t, path, clk)
	for psp, want := range map[string]int64{"PSP1": 2, "PSP2": 1} {
		got, err := s.GetPayment(ctx, psp)
		if err != nil || got.Version != want {
			t.Fatalf("after the crash GetPayment(%s) = version %d, %v; want %d", psp, got.Version, err, want)
		}
		if v := s.inFile(t, psp); v != want {
			t.Fatalf("Open folded %s at version %d, want %d", psp, v, want)
		}
	}
	if got, _ := s.GetPayment(ctx, "PSP1"); got.CapturedValue != 400 {
		t.Fatalf("folded record %+v, want the journaled content", got)
	}
	// Open marked the journal empty: a second crash folds nothing again.
	data, err := os.ReadFile(path + journalSuffix)
	must(t, err)
	if e := readJournal(data); len(e) != 0 {
		t.Fatalf("journal after Open holds %d entries, want none", len(e))
	}
}

func TestOpenFoldsOnlyWhatIsNewer(t *testing.T) {
	ctx := context.Background()
	s, path, clk, now := journalFixture(t)
	must(t, s.SavePayment(ctx, journalPayment("OLD", 1, now), 0))
	must(t, s.SavePayment(ctx, journalPayment("STALE", 1, now), 0))
	s.crash(t)

	// The file moved on without the journal (a later version of STALE
	// written by an earlier process's bbolt commit, say), and OLD's
	// retention ends before the next start.
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error {
		rec, err := encodePayment(journalPayment("STALE", 5, now))
		if err != nil {
			return err
		}
		return bucket(tx, bktPayments).Put(rec.key, rec.raw)
	}))
	must(t, db.Close())
	clk.Set(now.Add(store.PaymentRetention + time.Hour))

	s = openJournalTest(t, path, clk)
	if v := s.inFile(t, "STALE"); v != 5 {
		t.Errorf("STALE at version %d after Open, want the file's 5 kept", v)
	}
	if v := s.inFile(t, "OLD"); v != 0 {
		t.Errorf("OLD, past its retention, folded at version %d; want it left out", v)
	}
}

func TestJournalFullOrFailedFallsBackToBbolt(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s := openJournalTest(t, filepath.Join(t.TempDir(), "paysvc.db"), clock.NewFake(now))

	// Full: the save commits through bbolt, folding what is pending.
	must(t, s.SavePayment(ctx, journalPayment("PSP1", 1, now), 0))
	s.journal.size = s.journal.off + 10
	must(t, s.SavePayment(ctx, journalPayment("PSP2", 1, now), 0))
	if s.inFile(t, "PSP1") != 1 || s.inFile(t, "PSP2") != 1 {
		t.Fatal("with the journal full, the save and the pending record are not in the bbolt file")
	}
	s.journal.size = journalSize

	// A failed write fails its save (its outcome is unknown, as a failed
	// commit's is) and leaves the journal unused: saves go on through bbolt.
	f := s.journal.f
	s.journal.f = readOnly(t, f.Name())
	err := s.SavePayment(ctx, journalPayment("PSP3", 1, now), 0)
	if err == nil || !strings.Contains(err.Error(), "journal") {
		t.Fatalf("save with a failing journal = %v, want its write error", err)
	}
	must(t, s.journal.f.Close())
	s.journal.f = f
	must(t, s.SavePayment(ctx, journalPayment("PSP4", 1, now), 0))
	if s.inFile(t, "PSP4") != 1 {
		t.Fatal("after a journal write failed, a save is not in the bbolt file")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readOnly(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	return f
}

func TestReadJournal(t *testing.T) {
	j := &journal{size: 1 << 12, nonce: 7, pending: map[string][]byte{}}
	entry := func(nonce, seq uint64, key, raw string) []byte {
		j.nonce, j.seq = nonce, seq-1
		return encodeEntry(j, []byte(key), []byte(raw))
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
				keys = append(keys, string(e.key))
			}
			if got := strings.Join(keys, " "); got != tc.want {
				t.Fatalf("entries %q, want %q", got, tc.want)
			}
		})
	}
}

// Readers, lone savers and other writers at once (run with -race): every
// save lands once, reads never go back in version, and a crash at the
// end loses nothing.
func TestJournalUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s, path, clk, now := journalFixture(t)
	const payers, saves = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, payers*2)
	for i := range payers {
		psp := fmt.Sprintf("PSP%d", i)
		wg.Add(2)
		go func() { // saves each version in turn
			defer wg.Done()
			for v := int64(1); v <= saves; v++ {
				if err := s.SavePayment(ctx, journalPayment(psp, v, now), v-1); err != nil {
					errs <- fmt.Errorf("%s version %d: %w", psp, v, err)
					return
				}
				if i%2 == 0 { // other writers in between
					if err := s.PutSession(ctx, payments.Session{ID: psp, ExpiresAt: now.Add(time.Hour)}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
		go func() { // reads never see a version go back
			defer wg.Done()
			var last int64
			for last < saves {
				p, err := s.GetPayment(ctx, psp)
				if errors.Is(err, storeerr.ErrNotFound) {
					continue
				}
				if err != nil || p.Version < last {
					errs <- fmt.Errorf("%s read version %d after %d: %v", psp, p.Version, last, err)
					return
				}
				last = p.Version
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s.crash(t)
	s = openJournalTest(t, path, clk)
	for i := range payers {
		if p, err := s.GetPayment(ctx, fmt.Sprintf("PSP%d", i)); err != nil || p.Version != saves {
			t.Errorf("PSP%d after the crash: version %d, %v; want %d", i, p.Version, err, saves)
		}
	}
}

// FuzzReadJournal: entries written in sequence read back as written,
// whatever follows them in the file (a torn entry, an older one, noise),
// and reading any bytes never panics.
func FuzzReadJournal(f *testing.F) {
	f.Add([]byte("PSP1"), []byte(`{"version":1}`), uint8(3), []byte{})
	f.Add([]byte(""), []byte(""), uint8(1), []byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})
	f.Add([]byte("K"), []byte("v"), uint8(0), bytes.Repeat([]byte{0}, 64))
	f.Fuzz(func(t *testing.T, key, raw []byte, n uint8, tail []byte) {
		readJournal(tail) // noise alone
		if len(key) > maxJournalKey {
			return
		}
		val := func(i int) []byte { return append(append([]byte(nil), raw...), byte(i)) }
		j := &journal{nonce: 99, pending: map[string][]byte{}}
		var data []byte
		for i := range int(n % 8) {
			data = append(data, encodeEntry(j, key, val(i))...)
			j.seq++
		}
		got := readJournal(append(data, tail...))
		if len(got) < int(n%8) {
			t.Fatalf("%d entries read back, want at least the %d written", len(got), n%8)
		}
		for i := range int(n % 8) {
			if !bytes.Equal(got[i].key, key) || !bytes.Equal(got[i].raw, val(i)) {
				t.Fatalf("entry %d read back as %q %q", i, got[i].key, got[i].raw)
			}
		}
	})
}
