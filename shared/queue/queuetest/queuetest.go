// Package queuetest is the contract suite of the delivery-queue port
// (queue.Queue and queue.DeadLetters). Each adapter's test runs it with a
// factory building an empty queue and a way to receive from it:
//
//	func TestContract(t *testing.T) {
//		queuetest.Run(t, func(t *testing.T) queuetest.Harness { ... })
//	}
package queuetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/queue"
)

// Harness is one adapter under test.
type Harness struct {
	Queue       queue.Queue
	DeadLetters queue.DeadLetters
	// Receive returns the jobs available now and removes them.
	Receive func(t *testing.T) []queue.Job
	// Advance moves the adapter's time on by d; nil when it runs on real
	// time (delayed jobs are then only checked not to arrive early).
	Advance func(d time.Duration)
}

// Factory returns a harness over an empty queue; called once per subtest.
type Factory func(t *testing.T) Harness

// Run runs the contract.
func Run(t *testing.T, newHarness Factory) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"EnqueueReceive", testEnqueueReceive},
		{"InvalidJobRefused", testInvalidJob},
		{"DelayedJob", testDelayed},
		{"DeadLetters", testDeadLetters},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newHarness(t)) })
	}
}

func job(i int) queue.Job { return queue.Job{DeliveryID: fmt.Sprintf("msg_%02d", i), Attempt: 1 + i%3} }

func sorted(jobs []queue.Job) []queue.Job {
	out := slices.Clone(jobs)
	slices.SortFunc(out, func(a, b queue.Job) int { return strings.Compare(a.DeliveryID, b.DeliveryID) })
	return out
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func testEnqueueReceive(t *testing.T, h Harness) {
	ctx := context.Background()
	want := []queue.Job{job(0), job(1), job(2)}
	for _, j := range want {
		must(t, h.Queue.Enqueue(ctx, j, 0), "Enqueue")
	}
	got := sorted(h.Receive(t))
	if !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	if again := h.Receive(t); len(again) != 0 {
		t.Fatalf("received again after removal: %v", again)
	}
}

func testInvalidJob(t *testing.T, h Harness) {
	ctx := context.Background()
	for _, j := range []queue.Job{{}, {DeliveryID: "msg_1"}, {Attempt: 1}} {
		if err := h.Queue.Enqueue(ctx, j, 0); err == nil {
			t.Fatalf("Enqueue(%+v) accepted an invalid job", j)
		}
	}
	if got := h.Receive(t); len(got) != 0 {
		t.Fatalf("invalid jobs were queued: %v", got)
	}
}

func testDelayed(t *testing.T, h Harness) {
	ctx := context.Background()
	must(t, h.Queue.Enqueue(ctx, job(1), 2*time.Minute), "Enqueue delayed")
	must(t, h.Queue.Enqueue(ctx, job(2), 0), "Enqueue now")
	if got := h.Receive(t); !slices.Equal(got, []queue.Job{job(2)}) {
		t.Fatalf("before the delay: received %v, want only %v", got, job(2))
	}
	if h.Advance == nil {
		return
	}
	h.Advance(2 * time.Minute)
	if got := h.Receive(t); !slices.Equal(got, []queue.Job{job(1)}) {
		t.Fatalf("after the delay: received %v, want %v", got, job(1))
	}
}

func testDeadLetters(t *testing.T, h Harness) {
	ctx := context.Background()
	msgs, err := h.DeadLetters.ReceiveDeadLetters(ctx, 10)
	must(t, err, "ReceiveDeadLetters (empty)")
	if len(msgs) != 0 {
		t.Fatalf("empty dead-letter queue returned %v", msgs)
	}
	if err := h.DeadLetters.DeadLetter(ctx, queue.Job{}); err == nil {
		t.Fatal("DeadLetter accepted an invalid job")
	}
	want := []queue.Job{job(3), job(4)}
	for _, j := range want {
		must(t, h.DeadLetters.DeadLetter(ctx, j), "DeadLetter")
	}
	if got := h.Receive(t); len(got) != 0 {
		t.Fatalf("dead letters reached the queue: %v", got)
	}
	var got []queue.Job
	ids := map[string]bool{}
	for range 5 {
		msgs, err := h.DeadLetters.ReceiveDeadLetters(ctx, 10)
		must(t, err, "ReceiveDeadLetters")
		for _, m := range msgs {
			if m.Err != nil {
				t.Fatalf("dead letter %s: %v", m.ID, m.Err)
			}
			if m.ID == "" || m.Handle == "" {
				t.Fatalf("dead letter without id or handle: %+v", m)
			}
			if ids[m.ID] {
				continue
			}
			ids[m.ID] = true
			got = append(got, m.Job)
			must(t, h.DeadLetters.DeleteDeadLetter(ctx, m.Handle), "DeleteDeadLetter")
		}
		if len(got) == len(want) {
			break
		}
	}
	if !slices.Equal(sorted(got), want) {
		t.Fatalf("dead letters %v, want %v", got, want)
	}
	msgs, err = h.DeadLetters.ReceiveDeadLetters(ctx, 10)
	must(t, err, "ReceiveDeadLetters after delete")
	if len(msgs) != 0 {
		t.Fatalf("deleted dead letters returned again: %v", msgs)
	}
}
