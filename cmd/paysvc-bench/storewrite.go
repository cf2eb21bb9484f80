package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/embedded"
)

// storeWriteResult is the cost of one embedded-store write, which bounds
// the added latency of the local server: each is a bbolt read-write
// transaction committed with fsync, and bbolt runs one at a time.
type storeWriteResult struct {
	FS     string
	Writes int
	P50    time.Duration
	P99    time.Duration
}

// measureStoreWrite times rate-limit hits (one small conditional write
// each) on a fresh embedded store in the temp directory the overhead runs
// used.
func measureStoreWrite(cfg *config) (*storeWriteResult, error) {
	res := &storeWriteResult{Writes: 200}
	if cfg.Smoke {
		res.Writes = 20
	}
	err := runSection("store-write", cfg.progress, func(t *section) error {
		dir, err := t.TempDir()
		if err != nil {
			return err
		}
		res.FS = fsType(dir)
		st, err := embedded.Open(filepath.Join(dir, "paysvc.db"), embedded.WithClock(clock.System{}))
		if err != nil {
			return err
		}
		defer st.Close()
		ctx := context.Background()
		lat := make([]time.Duration, 0, res.Writes)
		exp := time.Now().Add(time.Hour)
		for i := range res.Writes {
			start := time.Now()
			if err := st.PutSession(ctx, payments.Session{ID: fmt.Sprintf("bench#%d", i%7), ExpiresAt: exp}); err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
		}
		s := sample{Latencies: lat}.stats()
		res.P50, res.P99 = s.P50, s.P99
		return nil
	})
	return res, err
}
