package embedded

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/internal/records"
)

// Sweep works through a bucket in several short transactions: every
// expired record goes, however many, and no live one.
func TestSweepInChunks(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(t.TempDir(), "paysvc.db"), WithClock(clock.NewFake(now)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 2*sweepChunk + sweepChunk/2 // more than two transactions' worth
	id := func(i int) string { return fmt.Sprintf("sess_%04d", i) }
	err = s.db.Update(func(tx *bolt.Tx) error { // one commit, not n
		for i := range n {
			exp := now.Add(time.Second)
			if i%10 == 0 {
				exp = now.Add(time.Hour)
			}
			if err := putJSON(readBucket(tx, bktSessions), []byte(id(i)), records.FromSession(payments.Session{ID: id(i), ExpiresAt: exp})); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	live := (n + 9) / 10
	if deleted, err := s.Sweep(now.Add(time.Second)); err != nil || deleted != n-live {
		t.Fatalf("Sweep deleted %d, %v; want %d", deleted, err, n-live)
	}
	for i := range n {
		_, err := s.GetSession(ctx, id(i))
		if live := i%10 == 0; live != (err == nil) {
			t.Fatalf("session %d (live %v) after the sweep: %v", i, live, err)
		}
	}
	if deleted, err := s.Sweep(now.Add(time.Second)); err != nil || deleted != 0 {
		t.Fatalf("second Sweep: %d, %v; want 0, nil", deleted, err)
	}
}
