// Package localqueue is the in-process delivery queue of local runs: jobs
// are persisted through a JobStore (the embedded store), so nothing is
// lost across a restart — jobs pending at shutdown, including those being
// processed, are loaded again and run when due. A worker loop (Run) starts
// due jobs concurrently; each job's Outcome reschedules it (Retry: the
// same job with the next attempt number), removes it (Done) or moves it to
// the dead-letter list (DeadLetter).
package localqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
)

// Defaults.
const (
	DefaultConcurrency = 16               // jobs processed at once
	maxIdle            = 5 * time.Second  // longest sleep of the worker loop
	errorBackoff       = time.Second      // sleep after a store failure
	minSleep           = time.Millisecond // shortest sleep before a due job
)

// Queue is the local queue: producer (queue.Queue), dead letters
// (queue.DeadLetters) and worker. It is safe for concurrent use.
type Queue struct {
	store JobStore
	clock clock.Clock
	log   *slog.Logger
	wake  chan struct{}
	slots chan struct{}

	mu       sync.Mutex
	inflight map[string]bool
	wg       sync.WaitGroup
}

var (
	_ queue.Queue       = (*Queue)(nil)
	_ queue.DeadLetters = (*Queue)(nil)
)

// New returns a queue over st processing at most concurrency jobs at once
// (<= 0: DefaultConcurrency).
func New(st JobStore, clk clock.Clock, log *slog.Logger, concurrency int) *Queue {
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	return &Queue{
		store: st, clock: clk, log: log,
		wake: make(chan struct{}, 1), slots: make(chan struct{}, concurrency),
		inflight: map[string]bool{},
	}
}

// newID returns a random job id.
func newID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("localqueue: random id: %w", err)
	}
	return "job_" + hex.EncodeToString(b), nil
}

// Enqueue stores job, due after delay, and wakes the worker.
func (q *Queue) Enqueue(ctx context.Context, job queue.Job, delay time.Duration) error {
	if err := job.Validate(); err != nil {
		return err
	}
	now := q.clock.Now()
	j, err := NewJob(job, now.Add(max(delay, 0)), now)
	if err != nil {
		return err
	}
	if err := q.store.PutJob(ctx, j); err != nil {
		return fmt.Errorf("localqueue: enqueue %s: %w", job.DeliveryID, err)
	}
	q.signal()
	return nil
}

// NewJob returns job as a new live stored job (a fresh id), due at due.
// A store that writes it in a transaction of its own (an outbox) calls
// Wake once the transaction is committed.
func NewJob(job queue.Job, due, now time.Time) (StoredJob, error) {
	if err := job.Validate(); err != nil {
		return StoredJob{}, err
	}
	id, err := newID()
	if err != nil {
		return StoredJob{}, err
	}
	return StoredJob{ID: id, Job: job, Due: due, CreatedAt: now}, nil
}

// Wake tells the worker loop that jobs were stored by someone else (see
// NewJob), so they start now rather than at its next poll.
func (q *Queue) Wake() { q.signal() }

// DeadLetter stores job as a dead letter.
func (q *Queue) DeadLetter(ctx context.Context, job queue.Job) error {
	if err := job.Validate(); err != nil {
		return err
	}
	id, err := newID()
	if err != nil {
		return err
	}
	now := q.clock.Now()
	if err := q.store.PutJob(ctx, StoredJob{ID: id, Job: job, Due: now, Dead: true, CreatedAt: now}); err != nil {
		return fmt.Errorf("localqueue: dead-letter %s: %w", job.DeliveryID, err)
	}
	return nil
}

// ReceiveDeadLetters returns up to limit dead letters.
func (q *Queue) ReceiveDeadLetters(ctx context.Context, limit int) ([]queue.DeadLetterMsg, error) {
	jobs, err := q.store.DeadJobs(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("localqueue: receive dead letters: %w", err)
	}
	out := make([]queue.DeadLetterMsg, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, queue.DeadLetterMsg{ID: j.ID, Handle: j.ID, Job: j.Job, Err: j.Job.Validate()})
	}
	return out, nil
}

// DeleteDeadLetter removes a dead letter.
func (q *Queue) DeleteDeadLetter(ctx context.Context, handle string) error {
	if err := q.store.DeleteJob(ctx, handle); err != nil {
		return fmt.Errorf("localqueue: delete dead letter: %w", err)
	}
	return nil
}

// signal wakes the worker loop without blocking.
func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run is the worker loop: it starts due jobs with h until ctx ends, then
// waits for the jobs in progress (their handlers get a context that is not
// cancelled, so an attempt under way completes and is recorded).
func (q *Queue) Run(ctx context.Context, h queue.Handler) error {
	defer q.wg.Wait()
	for {
		sleep := q.nextSleep(ctx, h)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-q.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// nextSleep starts the due jobs and returns how long to sleep: until the
// next job falls due (jobs due now are running or wait for a slot, and
// finishing or new jobs wake the loop), at most maxIdle.
func (q *Queue) nextSleep(ctx context.Context, h queue.Handler) time.Duration {
	if _, err := q.startDue(ctx, h); err != nil {
		q.log.ErrorContext(ctx, "local queue: reading due jobs failed", "err", err.Error())
		return errorBackoff
	}
	now := q.clock.Now()
	due, ok, err := q.store.NextDue(ctx, now)
	if err != nil || !ok {
		return maxIdle
	}
	return min(max(due.Sub(now), minSleep), maxIdle)
}

// RunDue starts every due job not already in progress and waits until all
// jobs in progress are finished. It returns how many it started. Tests
// drive the queue with it and a fake clock.
func (q *Queue) RunDue(ctx context.Context, h queue.Handler) (int, error) {
	n, err := q.startDue(ctx, h)
	q.wg.Wait()
	return n, err
}

// startDue starts due jobs not in progress, as many as there are free
// slots, each on its own goroutine.
func (q *Queue) startDue(ctx context.Context, h queue.Handler) (int, error) {
	jobs, err := q.store.DueJobs(ctx, q.clock.Now(), 0)
	if err != nil {
		return 0, err
	}
	started := 0
	for _, j := range jobs {
		if !q.claim(j.ID) {
			continue
		}
		select {
		case q.slots <- struct{}{}:
		default:
			q.release(j.ID)
			return started, nil // all slots busy: the rest wait for the next round
		}
		started++
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			defer func() { <-q.slots; q.release(j.ID); q.signal() }()
			q.runJob(context.WithoutCancel(ctx), h, j)
		}()
	}
	return started, nil
}

// claim marks job id in progress; false when it already is.
func (q *Queue) claim(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inflight[id] {
		return false
	}
	q.inflight[id] = true
	return true
}

func (q *Queue) release(id string) {
	q.mu.Lock()
	delete(q.inflight, id)
	q.mu.Unlock()
}

// runJob runs one job and carries out its outcome. If that write fails the
// job stays as it was and runs again (at-least-once).
func (q *Queue) runJob(ctx context.Context, h queue.Handler, j StoredJob) {
	out := h(ctx, j.Job, j.Job.Attempt)
	var err error
	switch out.Kind {
	case queue.Retry:
		next := j
		next.Job.Attempt++
		next.Due = q.clock.Now().Add(max(out.After, 0))
		err = q.store.PutJob(ctx, next)
	case queue.DeadLetter:
		dead := j
		dead.Dead = true
		err = q.store.PutJob(ctx, dead)
	default:
		err = q.store.DeleteJob(ctx, j.ID)
	}
	if err != nil {
		q.log.ErrorContext(ctx, "local queue: recording job outcome failed; the job runs again",
			"deliveryId", j.Job.DeliveryID, "outcome", out.Kind.String(), "err", err.Error())
	}
}
