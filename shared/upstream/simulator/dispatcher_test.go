package simulator

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/upstream"
)

// payN makes n authorised payments and returns their pspReferences in order.
func payN(t *testing.T, e *env, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = e.pay(t, int64(100+i), "").PSPReference
	}
	return out
}

func pspsOf(items []upstream.NotificationRequestItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.PSPReference
	}
	return out
}

func TestFaultReorder(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Faults.Reorder = 3 })
	want := payN(t, e, 5)
	// The first three are released reversed as soon as three are held.
	e.delivered.wait(t, "notification", 3)
	if st := e.sim.NotificationStats(); st.Pending != 2 || st.Sent != 3 {
		t.Fatalf("held = %+v", st)
	}
	e.flush(t) // releases the partial batch, reversed
	got := pspsOf(e.rec.items(t))
	if exp := []string{want[2], want[1], want[0], want[4], want[3]}; !slices.Equal(got, exp) {
		t.Fatalf("order = %v, want %v", got, exp)
	}
}

// Without faults, with duplicates, with every second notification
// dropped, with a failing receiver and without a Notifier: what reaches
// the receiver, in which order, and the stats.
func TestDeliveryFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  func(*Options)
		n     int
		want  func(psps []string) []string // deliveries
		stats NotificationStats
	}{
		{"no faults", func(*Options) {}, 5, func(p []string) []string { return p }, NotificationStats{Emitted: 5, Sent: 5}},
		{"duplicate", func(o *Options) { o.Faults.Duplicate = 2 }, 2,
			func(p []string) []string { return []string{p[0], p[0], p[0], p[1], p[1], p[1]} }, NotificationStats{Emitted: 2, Sent: 6}},
		{"drop every 2nd", func(o *Options) { o.Faults.DropEvery = 2 }, 4,
			func(p []string) []string { return []string{p[0], p[2]} }, NotificationStats{Emitted: 4, Sent: 2, Dropped: 2}},
		{"receiver down", func(*Options) {}, 2, func(p []string) []string { return p }, NotificationStats{Emitted: 2, Failed: 2}},
		{"no notifier", func(o *Options) { o.Notifier = nil }, 3, func([]string) []string { return []string{} }, NotificationStats{Emitted: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts)
			if tc.stats.Failed > 0 {
				e.rec.fail = errors.New("receiver down")
			}
			want := tc.want(payN(t, e, tc.n))
			e.flush(t)
			if got := pspsOf(e.rec.items(t)); !slices.Equal(got, want) {
				t.Fatalf("deliveries = %v, want %v", got, want)
			}
			if st := e.sim.NotificationStats(); st != tc.stats {
				t.Fatalf("stats = %+v, want %+v", st, tc.stats)
			}
			// Dropped notifications stay available for inspection.
			if n := len(e.sim.Notifications()); n != tc.n {
				t.Fatalf("Notifications() = %d", n)
			}
		})
	}
}

func TestFaultDrop(t *testing.T) {
	e := newEnv(t)
	e.sim.SetFaults(Faults{Drop: func(it upstream.NotificationRequestItem) bool { return it.EventCode == "CAPTURE" }})
	r := e.pay(t, 1000, "")
	must(t, e.capture(r.PSPReference, 1000))
	e.flush(t)
	items := e.rec.items(t)
	if last := items[len(items)-1]; last.EventCode != "AUTHORISATION" || last.PSPReference != r.PSPReference {
		t.Fatalf("CAPTURE not dropped: %v", eventCodes(items))
	}
}

func TestFaultDelay(t *testing.T) {
	// On the fake clock of a synctest bubble: the simulator is served
	// in-process (no network), so the bubble sees every wait.
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		sim, err := New(Options{APIKey: testAPIKey, Notifier: rec, Clock: clock.NewFake(testStart),
			Rand: rand.NewChaCha8([32]byte{1, 2, 3}), Faults: Faults{Delay: 20 * time.Millisecond}})
		must(t, err)
		defer sim.Close()
		start := time.Now()
		for i := range 2 {
			w := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/v71/payments", strings.NewReader(paymentBody))
			req.Header.Set("X-API-Key", testAPIKey)
			sim.ServeHTTP(w, req)
			if w.Code != 200 {
				t.Fatalf("payment %d: %d %s", i, w.Code, w.Body)
			}
		}
		synctest.Wait() // the sender waits out the first delay: no time passes until it does
		if n := len(rec.items(t)); n != 0 {
			t.Fatalf("delivered before the delay: %d", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		must(t, sim.Flush(ctx))
		if d := time.Since(start); d < 40*time.Millisecond {
			t.Fatalf("delays not applied: %v", d)
		}
		if n := len(rec.items(t)); n != 2 {
			t.Fatalf("delivered = %d", n)
		}
	})
}

func TestFlushHonoursContextAndClose(t *testing.T) {
	block := make(chan struct{})
	sim, err := New(Options{Notifier: NotifierFunc(func(ctx context.Context, _ []byte) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return ctx.Err()
	})})
	must(t, err)
	sim.mu.Lock()
	sim.emit(upstream.NotificationRequestItem{PSPReference: "X", EventCode: "AUTHORISATION", Success: "true"})
	sim.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := sim.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush = %v", err)
	}
	done := make(chan struct{})
	go func() { sim.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Close did not stop a blocked delivery")
	}
	close(block)
}
