package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/embedded"
	"github.com/yp/paysvc/shared/store/storetest"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

func openTemp(t *testing.T, clk clock.Clock) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "data", "paysvc.db"), embedded.WithClock(clk))
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

func TestContract(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T, clk clock.Clock) storetest.Stores {
		s := openTemp(t, clk)
		return storetest.Stores{Tenant: s, Idempotency: s, RateLimit: s, Payments: s}
	})
}

func TestDataSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	path := filepath.Join(t.TempDir(), "paysvc.db")

	s, err := embedded.Open(path, embedded.WithClock(clk))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	m := tenant.Merchant{ID: "m_a", Name: "A", Active: true, CreatedAt: now}
	k := tenant.APIKey{ID: "key_1", Hash: "h1", MerchantID: "m_a", CreatedAt: now}
	p := payments.Head{PSPReference: "PSP1", MerchantID: "m_a", Amount: money.Amount{Value: 1, Currency: "EUR"}, Version: 1, CreatedAt: now}
	must(t, s.PutMerchant(ctx, m))
	must(t, s.PutSite(ctx, tenant.Site{ID: "site_1", MerchantID: "m_a", CreatedAt: now}))
	must(t, s.CreateAPIKey(ctx, k))
	must(t, s.Write(ctx, payments.Write{PSP: "PSP1", Put: &p}))
	must(t, s.PutSession(ctx, payments.Session{ID: "CS1", ExpiresAt: now.Add(time.Hour)}))
	_, err = s.Claim(ctx, idempotency.Record{Scope: "m_a", Key: "k1", LeaseToken: "tok", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}, now)
	must(t, err)
	must(t, s.Complete(ctx, "m_a", "k1", "tok", idempotency.Response{Status: 200, Body: []byte(`{}`)}, now.Add(time.Hour)))
	// A lease still held when the process ends is not kept (in memory).
	_, err = s.Claim(ctx, idempotency.Record{Scope: "m_a", Key: "k2", LeaseToken: "tok", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}, now)
	must(t, err)
	if ok, err := s.Hit(ctx, "rl", 1, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("Hit: %v %v", ok, err)
	}
	must(t, s.Close())

	s, err = embedded.Open(path, embedded.WithClock(clk))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	gotM, err := s.GetMerchant(ctx, "m_a")
	must(t, err)
	if gotM.Name != "A" {
		t.Fatalf("merchant after reopen: %+v", gotM)
	}
	sites, err := s.ListSites(ctx, "m_a")
	must(t, err)
	keys, err := s.ListAPIKeys(ctx, "m_a")
	must(t, err)
	if len(sites) != 1 || len(keys) != 1 {
		t.Fatalf("after reopen: %d sites, %d keys; want 1 and 1", len(sites), len(keys))
	}
	gotP, err := s.GetPayment(ctx, "PSP1")
	must(t, err)
	if gotP.Version != 1 {
		t.Fatalf("payment after reopen: %+v", gotP)
	}
	_, err = s.GetSession(ctx, "CS1")
	must(t, err)
	if got, err := s.Claim(ctx, idempotency.Record{Scope: "m_a", Key: "k1", LeaseToken: "x", ExpiresAt: now.Add(time.Hour)}, now); !errors.Is(err, storeerr.ErrConflict) ||
		got.Status != idempotency.StatusCompleted || got.Response == nil || got.Response.Status != 200 {
		t.Fatalf("Claim of a completed key after reopen: %+v, %v; want the stored answer and a conflict", got, err)
	}
	// The lease ended with the process: the retry runs again (sending the
	// upstream the same derived key).
	if _, err := s.Claim(ctx, idempotency.Record{Scope: "m_a", Key: "k2", LeaseToken: "y", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}, now); err != nil {
		t.Fatalf("Claim of a key whose lease ended with the process: %v", err)
	}
	// Rate-limit windows live in memory (seconds long): a reopened store
	// starts them afresh.
	if ok, err := s.Hit(ctx, "rl", 1, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("Hit after reopen: %v %v, want a fresh window", ok, err)
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paysvc.db")
	s, err := embedded.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	_, err = embedded.Open(path, embedded.WithLockTimeout(50*time.Millisecond))
	if !errors.Is(err, embedded.ErrInUse) || !strings.Contains(err.Error(), "data dir in use by another process") {
		t.Fatalf("second Open: got %v, want ErrInUse", err)
	}
}

func TestSweepDeletesExpired(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	s := openTemp(t, clk)
	for i, exp := range []time.Time{now.Add(time.Second), now.Add(time.Hour)} {
		key := []string{"short", "long"}[i]
		_, err := s.Claim(ctx, idempotency.Record{Scope: "m_a", Key: key, LeaseToken: "tok", LeaseUntil: exp, ExpiresAt: exp}, now)
		must(t, err)
		must(t, s.Complete(ctx, "m_a", key, "tok", idempotency.Response{Status: 200}, exp))
		if _, err := s.Hit(ctx, key, 5, exp); err != nil {
			t.Fatalf("Hit: %v", err)
		}
		must(t, s.PutSession(ctx, payments.Session{ID: key, ExpiresAt: exp}))
	}
	n, err := s.Sweep(now.Add(time.Second))
	must(t, err)
	if n != 2 { // the short idempotency record and session (rate windows are in memory)
		t.Fatalf("Sweep deleted %d records, want 2", n)
	}
	if n, err := s.Sweep(now.Add(time.Second)); err != nil || n != 0 {
		t.Fatalf("second Sweep: %d, %v; want 0, nil", n, err)
	}
	if _, err := s.Claim(ctx, idempotency.Record{Scope: "m_a", Key: "long", LeaseToken: "x", ExpiresAt: now.Add(time.Hour)}, now); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("live record swept: Claim got %v", err)
	}
	if _, err := s.GetSession(ctx, "long"); err != nil {
		t.Fatalf("live session swept: %v", err)
	}
	n, err = s.Sweep(now.Add(time.Hour))
	must(t, err)
	if n != 2 {
		t.Fatalf("Sweep at the later expiry deleted %d records, want 2", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFreelistNotSyncedStaysConsistent: the store does not write bbolt's
// free-page list (Open rebuilds it). A file written by a version that kept
// the list opens, takes writes and deletes, and reopens consistent, as
// does the file afterwards for a reader that keeps the list again.
func TestFreelistNotSyncedStaysConsistent(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	clk := clock.NewFake(now)
	path := filepath.Join(t.TempDir(), "paysvc.db")

	// An older file: the freelist written, with free pages on it.
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("scratch"))
		if err != nil {
			return err
		}
		for i := range 200 {
			if err := b.Put(fmt.Appendf(nil, "k%03d", i), make([]byte, 512)); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("scratch")) }))
	// The deleted pages are free once a later write transaction begins.
	must(t, db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists([]byte("other")); return err }))
	if free := db.Stats().FreePageN; free == 0 {
		t.Fatal("setup: no free pages")
	}
	must(t, db.Close())

	for round := range 3 {
		s, err := embedded.Open(path, embedded.WithClock(clk))
		must(t, err)
		for i := range 20 {
			psp := fmt.Sprintf("PSP%d_%d", round, i)
			p := payments.Head{PSPReference: psp, MerchantID: "m_a", Amount: money.Amount{Value: 1, Currency: "EUR"}, Version: 1, CreatedAt: now}
			must(t, s.Write(ctx, payments.Write{PSP: psp, Put: &p}))
			p.Version, p.Reference = 2, strings.Repeat("r", 64)
			must(t, s.Write(ctx, payments.Write{PSP: psp, Put: &p}))
		}
		must(t, s.Close())
		checkFile(t, path)
	}

	s, err := embedded.Open(path, embedded.WithClock(clk))
	must(t, err)
	for round := range 3 {
		for i := range 20 {
			got, err := s.GetPayment(ctx, fmt.Sprintf("PSP%d_%d", round, i))
			if err != nil || got.Version != 2 {
				t.Fatalf("payment %d/%d after reopens: %+v, %v", round, i, got, err)
			}
		}
	}
	must(t, s.Close())
}

// checkFile opens path with bbolt's defaults (the free-page list read or
// rebuilt, and written again) and runs its consistency check.
func checkFile(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	defer db.Close()
	must(t, db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}))
}
