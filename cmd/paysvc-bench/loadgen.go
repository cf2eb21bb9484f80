package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// sample is the outcome of one bounded, closed-loop load run.
type sample struct {
	Latencies []time.Duration // of successful requests
	Errors    int
	FirstErr  string
	Wall      time.Duration
}

// runLoad is a closed-loop load generator: conc workers send requests
// 0..n-1 (each worker sends its next request when the previous answered)
// until all n are done or ctx ends. do sends request i and returns an error
// for a failed request; its latency is measured around it.
func runLoad(ctx context.Context, n, conc int, do func(ctx context.Context, i int) error) sample {
	return runLoadStaggered(ctx, n, conc, 0, do)
}

// runLoadStaggered is runLoad with worker k starting k*stagger/conc late,
// so workers whose requests all take about stagger do not arrive in
// lockstep (a closed loop would otherwise keep them synchronised).
func runLoadStaggered(ctx context.Context, n, conc int, stagger time.Duration, do func(ctx context.Context, i int) error) sample {
	conc = max(1, min(conc, n))
	var next atomic.Int64
	lat := make([]time.Duration, n)
	ok := make([]bool, n)
	var mu sync.Mutex
	var s sample
	var wg sync.WaitGroup
	start := time.Now()
	for k := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d := stagger * time.Duration(k) / time.Duration(conc); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				err := do(ctx, i)
				d := time.Since(t0)
				if err != nil {
					mu.Lock()
					if s.Errors == 0 {
						s.FirstErr = err.Error()
					}
					s.Errors++
					mu.Unlock()
					continue
				}
				lat[i], ok[i] = d, true
			}
		}()
	}
	wg.Wait()
	s.Wall = time.Since(start)
	for i, d := range lat {
		if ok[i] {
			s.Latencies = append(s.Latencies, d)
		}
	}
	if ctx.Err() != nil && len(s.Latencies)+s.Errors < n {
		s.Errors += n - len(s.Latencies) - s.Errors
		if s.FirstErr == "" {
			s.FirstErr = fmt.Sprintf("stopped after %s: %v", s.Wall.Round(time.Millisecond), ctx.Err())
		}
	}
	return s
}

// merge adds o's requests to s (the rounds of one target).
func (s *sample) merge(o sample) {
	s.Latencies = append(s.Latencies, o.Latencies...)
	if s.Errors == 0 && o.Errors > 0 {
		s.FirstErr = o.FirstErr
	}
	s.Errors += o.Errors
	s.Wall += o.Wall
}

// stats summarises a sample.
type stats struct {
	N             int
	Errors        int
	FirstErr      string
	P50, P90, P99 time.Duration
	RPS           float64
}

// stats computes percentiles and requests/s of a sample.
func (s sample) stats() stats {
	st := stats{N: len(s.Latencies), Errors: s.Errors, FirstErr: s.FirstErr}
	if st.N == 0 {
		return st
	}
	l := slices.Clone(s.Latencies)
	slices.Sort(l)
	st.P50, st.P90, st.P99 = percentile(l, 50), percentile(l, 90), percentile(l, 99)
	if s.Wall > 0 {
		st.RPS = float64(st.N) / s.Wall.Seconds()
	}
	return st
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// median of durations (not sorted in place).
func median(ds []time.Duration) time.Duration {
	l := slices.Clone(ds)
	slices.Sort(l)
	return percentile(l, 50)
}
