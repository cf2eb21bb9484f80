package localqueue_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/queue/queuetest"
	"github.com/yp/paysvc/shared/store/embedded"
)

var start = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

func open(t *testing.T, path string, clk clock.Clock) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(path, embedded.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestContract(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		clk := clock.NewFake(start)
		st := open(t, filepath.Join(t.TempDir(), "q.db"), clk)
		t.Cleanup(func() { _ = st.Close() })
		q := localqueue.New(st, clk, quiet(), 0)
		return queuetest.Harness{
			Queue: q, DeadLetters: q, Advance: clk.Advance,
			Receive: func(t *testing.T) []queue.Job {
				jobs, err := st.DueJobs(context.Background(), clk.Now(), 0)
				if err != nil {
					t.Fatal(err)
				}
				var out []queue.Job
				for _, j := range jobs {
					out = append(out, j.Job)
					if err := st.DeleteJob(context.Background(), j.ID); err != nil {
						t.Fatal(err)
					}
				}
				return out
			},
		}
	})
}

// recorder is a handler answering from a script and recording calls.
type recorder struct {
	mu    sync.Mutex
	calls []call
	next  func(job queue.Job, attempt int) queue.Outcome
}

type call struct {
	job     queue.Job
	attempt int
	at      time.Time
}

func (r *recorder) handler(clk clock.Clock) queue.Handler {
	return func(_ context.Context, job queue.Job, attempt int) queue.Outcome {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, call{job, attempt, clk.Now()})
		return r.next(job, attempt)
	}
}

func TestWorkerOutcomes(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(start)
	st := open(t, filepath.Join(t.TempDir(), "q.db"), clk)
	defer st.Close()
	q := localqueue.New(st, clk, quiet(), 0)
	rec := &recorder{next: func(job queue.Job, attempt int) queue.Outcome {
		switch {
		case job.DeliveryID == "ok":
			return queue.Outcome{Kind: queue.Done}
		case attempt < 3:
			return queue.Outcome{Kind: queue.Retry, After: time.Minute}
		}
		return queue.Outcome{Kind: queue.DeadLetter}
	}}
	h := rec.handler(clk)
	for _, id := range []string{"ok", "bad"} {
		if err := q.Enqueue(ctx, queue.Job{DeliveryID: id, Attempt: 1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.RunDue(ctx, h); err != nil || n != 2 {
		t.Fatalf("RunDue: %d, %v; want 2 jobs", n, err)
	}
	if n, _ := q.RunDue(ctx, h); n != 0 {
		t.Fatalf("RunDue before the retry is due ran %d jobs", n)
	}
	clk.Advance(time.Minute)
	if n, _ := q.RunDue(ctx, h); n != 1 {
		t.Fatalf("second attempt: ran %d jobs, want 1", n)
	}
	clk.Advance(time.Minute)
	if n, _ := q.RunDue(ctx, h); n != 1 {
		t.Fatalf("third attempt: ran %d jobs, want 1", n)
	}
	var bad []int
	for _, c := range rec.calls {
		if c.job.DeliveryID == "bad" {
			bad = append(bad, c.attempt)
		}
	}
	if len(bad) != 3 || bad[0] != 1 || bad[1] != 2 || bad[2] != 3 {
		t.Fatalf("attempts of the failing job: %v, want [1 2 3]", bad)
	}
	if due, _ := st.DueJobs(ctx, clk.Now().Add(time.Hour), 0); len(due) != 0 {
		t.Fatalf("live jobs left: %+v", due)
	}
	dead, err := q.ReceiveDeadLetters(ctx, 10)
	if err != nil || len(dead) != 1 || dead[0].Job.DeliveryID != "bad" || dead[0].Job.Attempt != 3 {
		t.Fatalf("dead letters: %+v, %v; want the failing job at attempt 3", dead, err)
	}
}

// TestJobsSurviveRestart: jobs pending (due or not) when the process stops
// are loaded by the next process and run when due.
func TestJobsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(start)
	path := filepath.Join(t.TempDir(), "q.db")
	st := open(t, path, clk)
	q := localqueue.New(st, clk, quiet(), 0)
	for i, d := range []time.Duration{0, time.Hour} {
		if err := q.Enqueue(ctx, queue.Job{DeliveryID: []string{"now", "later"}[i], Attempt: 1}, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open(t, path, clk)
	defer st.Close()
	q = localqueue.New(st, clk, quiet(), 0)
	rec := &recorder{next: func(queue.Job, int) queue.Outcome { return queue.Outcome{Kind: queue.Done} }}
	if n, _ := q.RunDue(ctx, rec.handler(clk)); n != 1 || rec.calls[0].job.DeliveryID != "now" {
		t.Fatalf("after restart: ran %d jobs %+v; want the due one", n, rec.calls)
	}
	clk.Advance(time.Hour)
	if n, _ := q.RunDue(ctx, rec.handler(clk)); n != 1 || rec.calls[1].job.DeliveryID != "later" {
		t.Fatalf("after the delay: ran %d jobs %+v; want the delayed one", n, rec.calls)
	}
}

// TestSlowJobDoesNotHoldOthers: jobs run concurrently; a job that blocks
// does not keep the others from finishing.
func TestSlowJobDoesNotHoldOthers(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(start)
	st := open(t, filepath.Join(t.TempDir(), "q.db"), clk)
	defer st.Close()
	q := localqueue.New(st, clk, quiet(), 4)
	release := make(chan struct{})
	var fast atomic.Int32
	allFast := make(chan struct{})
	h := func(_ context.Context, job queue.Job, _ int) queue.Outcome {
		if job.DeliveryID == "slow" {
			<-release
		} else if fast.Add(1) == 3 {
			close(allFast)
		}
		return queue.Outcome{Kind: queue.Done}
	}
	for _, id := range []string{"slow", "a", "b", "c"} {
		if err := q.Enqueue(ctx, queue.Job{DeliveryID: id, Attempt: 1}, 0); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { _, _ = q.RunDue(ctx, h); close(done) }()
	select {
	case <-allFast:
	case <-time.After(30 * time.Second): // a failure bound only
		t.Fatal("fast jobs did not finish while the slow one was running")
	}
	close(release)
	<-done
}

// TestRunLoop: the worker loop runs jobs enqueued while it runs, a
// delayed one when it is due, and stops with its context. In a synctest
// bubble: the system clock and the loop's timers are the bubble's fake
// time, which moves only while everything waits.
func TestRunLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		clk := clock.System{}
		st := open(t, filepath.Join(t.TempDir(), "q.db"), clk)
		defer st.Close()
		q := localqueue.New(st, clk, quiet(), 0)
		got := make(chan queue.Job, 2)
		h := func(_ context.Context, job queue.Job, _ int) queue.Outcome {
			got <- job
			return queue.Outcome{Kind: queue.Done}
		}
		stopped := make(chan error)
		go func() { stopped <- q.Run(ctx, h) }()
		synctest.Wait() // the loop sleeps: nothing is queued
		start := time.Now()
		want := queue.Job{DeliveryID: "msg_1", Attempt: 1}
		if err := q.Enqueue(ctx, want, 0); err != nil {
			t.Fatal(err)
		}
		if j := <-got; j != want {
			t.Fatalf("ran %+v, want %+v", j, want)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("the job enqueued ran after %s, want at once", d)
		}
		if err := q.Enqueue(ctx, queue.Job{DeliveryID: "msg_2", Attempt: 1}, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case j := <-got:
			t.Fatalf("the delayed job ran at once: %+v", j)
		default:
		}
		delayed := time.Now()
		<-got // (a loop that never runs it fails as a deadlock of the bubble)
		if d := time.Since(delayed); d != 20*time.Millisecond {
			t.Fatalf("the delayed job ran after %s, want 20ms", d)
		}
		cancel()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
	})
}
