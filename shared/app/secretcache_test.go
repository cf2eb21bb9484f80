package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
)

// fakeSource is a secret source whose value and failure the test sets.
type fakeSource struct {
	val   config.Secrets
	err   error
	reads int
}

func (f *fakeSource) fetch(context.Context) (config.Secrets, error) {
	f.reads++
	return f.val, f.err
}

func TestSecretCache(t *testing.T) {
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	k := func(s string) config.Secrets { return config.Secrets{APIKey: s} }
	type step struct {
		advance  time.Duration
		set      *config.Secrets // new source value
		fail     bool            // the source fails from here on
		refresh  bool            // call Refresh first
		want     string          // APIKey Get returns ("" = an error)
		version  uint64
		reads    int  // source reads so far
		rescheds bool // what Refresh returned (when refresh)
	}
	v2 := k("k2")
	cases := []struct {
		name  string
		steps []step
	}{
		{"served from the cache until the TTL ends, then read again", []step{
			{want: "k1", version: 1, reads: 1},
			{advance: SecretTTL - time.Second, set: &v2, want: "k1", version: 1, reads: 1},
			{advance: time.Second, want: "k2", version: 2, reads: 2},
			{advance: SecretTTL, want: "k2", version: 2, reads: 3}, // same value: same version
		}},
		{"a refused value is read again at once, at most every SecretMinRefresh", []step{
			{want: "k1", version: 1, reads: 1},
			{set: &v2, refresh: true, rescheds: false, want: "k1", version: 1, reads: 1}, // just read
			{advance: SecretMinRefresh, refresh: true, rescheds: true, want: "k2", version: 2, reads: 2},
			{advance: time.Second, refresh: true, rescheds: false, want: "k2", version: 2, reads: 2},
		}},
		{"a failed read keeps the last value for at most SecretMaxStale", []step{
			{want: "k1", version: 1, reads: 1},
			{advance: SecretTTL, fail: true, want: "k1", version: 1, reads: 2},
			{advance: time.Minute, want: "k1", version: 1, reads: 2}, // within the TTL of the failed attempt
			{advance: SecretMaxStale - SecretTTL - time.Minute - time.Second, want: "k1", version: 1, reads: 3},
			{advance: time.Second, want: "", reads: 4},
		}},
		{"no value before the first successful read", []step{
			{fail: true, want: "", reads: 1},
			{want: "", reads: 2}, // no value: every Get tries
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC))
			src := &fakeSource{val: k("k1")}
			c := NewSecretCache(src.fetch, clk, discard)
			for i, s := range tc.steps {
				clk.Advance(s.advance)
				if s.set != nil {
					src.val = *s.set
				}
				if s.fail {
					src.err = errors.New("secrets manager unavailable")
				}
				if s.refresh {
					if got := c.Refresh(); got != s.rescheds {
						t.Errorf("step %d: Refresh() = %v, want %v", i, got, s.rescheds)
					}
				}
				got, version, err := c.Get(context.Background())
				switch {
				case s.want == "" && err == nil:
					t.Errorf("step %d: Get = %q, want an error", i, got.APIKey)
				case s.want != "" && (err != nil || got.APIKey != s.want || version != s.version):
					t.Errorf("step %d: Get = %q v%d, %v; want %q v%d", i, got.APIKey, version, err, s.want, s.version)
				}
				if src.reads != s.reads {
					t.Errorf("step %d: %d reads of the source, want %d", i, src.reads, s.reads)
				}
			}
		})
	}
}
