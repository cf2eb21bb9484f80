package sqsqueue_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
)

// fakeBackoff records what the Lambda handler asks of the queue; sends
// and visibility changes fail when told to.
type fakeBackoff struct {
	mu       sync.Mutex
	sent     []sentJob
	hidden   map[string]time.Duration // receipt handle → visibility
	dead     []queue.Job
	failSend bool
	failHide bool
}

type sentJob struct {
	job   queue.Job
	delay time.Duration
}

var _ sqsqueue.Backoff = (*fakeBackoff)(nil)

func (b *fakeBackoff) Enqueue(_ context.Context, job queue.Job, delay time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failSend {
		return errors.New("send refused")
	}
	if delay > sqsqueue.MaxDelay {
		return errors.New("delay over SQS's maximum")
	}
	b.sent = append(b.sent, sentJob{job, delay})
	return nil
}

func (b *fakeBackoff) ChangeVisibility(_ context.Context, handle string, d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failHide {
		return errors.New("visibility refused")
	}
	if b.hidden == nil {
		b.hidden = map[string]time.Duration{}
	}
	b.hidden[handle] = d
	return nil
}

func (b *fakeBackoff) DeadLetter(_ context.Context, job queue.Job) error {
	b.mu.Lock()
	b.dead = append(b.dead, job)
	b.mu.Unlock()
	return nil
}

// takeSent returns and forgets the jobs sent so far.
func (b *fakeBackoff) takeSent() []sentJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.sent
	b.sent = nil
	return out
}

// record is an SQS event record of job, received for the receives-th time.
func record(t *testing.T, id string, job queue.Job, receives int) events.SQSMessage {
	t.Helper()
	body, err := job.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)}}
}

// call is one handler call the fake dispatcher saw.
type call struct {
	job     queue.Job
	attempt int
}

// scripted is a queue.Handler answering out for every job, recording calls.
type scripted struct {
	mu    sync.Mutex
	calls []call
	out   func(job queue.Job, attempt int) queue.Outcome
}

func (s *scripted) handle(_ context.Context, job queue.Job, attempt int) queue.Outcome {
	s.mu.Lock()
	s.calls = append(s.calls, call{job, attempt})
	s.mu.Unlock()
	return s.out(job, attempt)
}

func (s *scripted) taken() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}

var discard = slog.New(slog.NewJSONHandler(io.Discard, nil))

var start = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// always is a handler answering o for every job.
func always(o queue.Outcome) *scripted {
	return &scripted{out: func(queue.Job, int) queue.Outcome { return o }}
}

// run hands recs to the Lambda handler as one batch.
func run(b sqsqueue.Backoff, h *scripted, clk clock.Clock, recs ...events.SQSMessage) (events.SQSEventResponse, error) {
	return sqsqueue.LambdaHandler(b, h.handle, clk, discard)(context.Background(), events.SQSEvent{Records: recs})
}

func failures(resp events.SQSEventResponse) map[string]bool {
	out := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		out[f.ItemIdentifier] = true
	}
	return out
}

// A failed attempt's wait is carried by new messages, never by a received
// one: the first is sent delayed by the wait up to SQS's 15 minutes and
// says when it is due; a copy received before that is sent again
// (a hop: no attempt, delayed by the time left, at most 15 minutes) until
// it is due, then the next attempt runs. Every received message is
// deleted (not reported).
func TestRetryCarriedByDelayedMessages(t *testing.T) {
	for _, tc := range []struct {
		wait     time.Duration
		messages int             // sent for the wait: the first and its hops
		first    time.Duration   // DelaySeconds of the first
		hops     []time.Duration // DelaySeconds of each hop
	}{
		{0, 1, 0, nil},
		{5 * time.Second, 1, 5 * time.Second, nil},
		{14 * time.Minute, 1, 14 * time.Minute, nil},
		{15 * time.Minute, 1, 15 * time.Minute, nil},
		{2 * time.Hour, 8, 15 * time.Minute, slices.Repeat([]time.Duration{15 * time.Minute}, 7)},
		{12 * time.Hour, 48, 15 * time.Minute, slices.Repeat([]time.Duration{15 * time.Minute}, 47)},
		{37 * time.Minute, 3, 15 * time.Minute, []time.Duration{15 * time.Minute, 7 * time.Minute}},
	} {
		t.Run(tc.wait.String(), func(t *testing.T) {
			if got := sqsqueue.Messages(tc.wait); got != tc.messages {
				t.Errorf("Messages(%s) = %d, want %d", tc.wait, got, tc.messages)
			}
			clk := clock.NewFake(start)
			b := &fakeBackoff{}
			h := always(queue.Outcome{Kind: queue.Retry, After: tc.wait, Next: 4})

			// Attempt 3 fails: the job is sent again for attempt 4, still
			// naming its subscription.
			resp, err := run(b, h, clk, record(t, "m0", queue.Job{DeliveryID: "msg_1", Attempt: 3, MerchantID: "m_a", SubscriptionID: "sub_1"}, 1))
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("attempt 3: %+v, %v; want the message deleted", resp, err)
			}
			if c := h.taken(); len(c) != 1 || c[0].attempt != 3 {
				t.Fatalf("calls %+v, want attempt 3", c)
			}
			sent := b.takeSent()
			due := start.Add(tc.wait)
			want := queue.Job{DeliveryID: "msg_1", Attempt: 4, NotBefore: due, MerchantID: "m_a", SubscriptionID: "sub_1"}
			if len(sent) != 1 || sent[0].job != want || sent[0].delay != tc.first {
				t.Fatalf("sent %+v, want %+v delayed %s", sent, want, tc.first)
			}
			if len(b.hidden) != 0 {
				t.Fatalf("visibility changed: %v", b.hidden)
			}
			// SQS shows each message once its delay has passed.
			var hops []time.Duration
			for i := 1; ; i++ {
				clk.Advance(sent[0].delay)
				id := "m" + strconv.Itoa(i)
				resp, err := run(b, h, clk, record(t, id, sent[0].job, 1))
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("receive %d: %+v, %v; want the message deleted", i, resp, err)
				}
				if calls := h.taken(); len(calls) > 0 {
					if len(calls) != 1 || calls[0].attempt != 4 || calls[0].job != want {
						t.Fatalf("due: calls %+v, want attempt 4 of %+v", calls, want)
					}
					if i != tc.messages {
						t.Fatalf("attempt 4 ran on message %d, want %d", i, tc.messages)
					}
					break
				}
				if sent = b.takeSent(); len(sent) != 1 || sent[0].job != want {
					t.Fatalf("hop %d: sent %+v, want %+v unchanged", i, sent, want)
				}
				hops = append(hops, sent[0].delay)
				if i > tc.messages {
					t.Fatalf("still hopping after %d messages", i)
				}
			}
			if !slices.Equal(hops, tc.hops) {
				t.Fatalf("hops %v, want %v", hops, tc.hops)
			}
			if !clk.Now().Equal(due) {
				t.Fatalf("attempt 4 ran at %s, due %s", clk.Now(), due)
			}
		})
	}
}

// A message received a little before its due time (clocks differ by
// less than a second) runs; one received earlier hops.
func TestDueSlack(t *testing.T) {
	for _, tc := range []struct {
		early time.Duration
		runs  bool
	}{{0, true}, {500 * time.Millisecond, true}, {time.Second, true}, {2 * time.Second, false}} {
		b, h := &fakeBackoff{}, always(queue.Outcome{Kind: queue.Done})
		job := queue.Job{DeliveryID: "msg_1", Attempt: 2, NotBefore: start.Add(tc.early)}
		resp, _ := run(b, h, clock.NewFake(start), record(t, "m", job, 1))
		ran := len(h.taken()) == 1
		sent := b.takeSent()
		if ran != tc.runs || len(resp.BatchItemFailures) != 0 || (!ran && (len(sent) != 1 || sent[0].delay != tc.early)) {
			t.Errorf("%s early: ran %v (want %v), sent %+v, failures %+v", tc.early, ran, tc.runs, sent, resp.BatchItemFailures)
		}
	}
}

// When the retry cannot be sent, nothing is lost: the received message
// itself waits out the backoff hidden (ChangeMessageVisibility) and is
// reported, so SQS delivers it again then; the same for a hop, hidden for
// the time left. If hiding fails too it is still reported (the queue's
// visibility timeout applies).
func TestSendFailureFallsBackToVisibility(t *testing.T) {
	for _, tc := range []struct {
		name     string
		job      queue.Job
		failHide bool
		hidden   time.Duration // 0: not hidden
		attempts int
	}{
		{"retry", queue.Job{DeliveryID: "msg_1", Attempt: 1}, false, 2 * time.Hour, 1},
		{"hop", queue.Job{DeliveryID: "msg_1", Attempt: 5, NotBefore: start.Add(40 * time.Minute)}, false, 40 * time.Minute, 0},
		{"retry, hiding fails too", queue.Job{DeliveryID: "msg_1", Attempt: 1}, true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackoff{failSend: true, failHide: tc.failHide}
			h := always(queue.Outcome{Kind: queue.Retry, After: 2 * time.Hour, Next: 2})
			rec := record(t, "m1", tc.job, 1)
			resp, err := run(b, h, clock.NewFake(start), rec)
			if err != nil || !failures(resp)["m1"] || len(resp.BatchItemFailures) != 1 {
				t.Fatalf("%+v, %v; want m1 reported (kept)", resp, err)
			}
			if got := len(h.taken()); got != tc.attempts {
				t.Fatalf("%d attempts, want %d", got, tc.attempts)
			}
			if got, ok := b.hidden[rec.ReceiptHandle]; ok != (tc.hidden > 0) || got != tc.hidden {
				t.Fatalf("hidden %v, want %s", b.hidden, tc.hidden)
			}
		})
	}
}

// The attempt a message makes counts its receives (a message kept after
// a failed send, or re-received after a crash, makes the next attempt);
// the handler sees the job's due time only on its first receive; a retry
// that made no attempt (Outcome.Next 0) keeps the attempt's number.
func TestAttemptNumbers(t *testing.T) {
	due := start.Add(-time.Minute)
	for _, tc := range []struct {
		receives    int
		next        int
		wantAttempt int
		wantSeen    time.Time // NotBefore as the handler sees it
		wantSent    int       // attempt number of the job sent again
	}{
		{1, 4, 3, due, 4},
		{2, 5, 4, time.Time{}, 5},
		{1, 0, 3, due, 3}, // no attempt made (a store read failed)
		{3, 0, 5, time.Time{}, 5},
	} {
		b, h := &fakeBackoff{}, always(queue.Outcome{Kind: queue.Retry, After: 30 * time.Second, Next: tc.next})
		job := queue.Job{DeliveryID: "msg_1", Attempt: 3, NotBefore: due}
		_, _ = run(b, h, clock.NewFake(start), record(t, "m", job, tc.receives))
		calls, sent := h.taken(), b.takeSent()
		if len(calls) != 1 || calls[0].attempt != tc.wantAttempt || !calls[0].job.NotBefore.Equal(tc.wantSeen) {
			t.Errorf("receive %d: calls %+v, want attempt %d seeing notBefore %s", tc.receives, calls, tc.wantAttempt, tc.wantSeen)
		}
		if len(sent) != 1 || sent[0].job.Attempt != tc.wantSent || !sent[0].job.NotBefore.Equal(start.Add(30*time.Second)) ||
			sent[0].delay != 30*time.Second {
			t.Errorf("receive %d, next %d: sent %+v, want attempt %d due in 30 s", tc.receives, tc.next, sent, tc.wantSent)
		}
	}
}

// Partial batch failures: of one batch, only the messages that must come
// back are reported — a retry whose send failed and a body that is not a
// job, or a dead letter that could not be sent; delivered, retried (sent
// again), hopped and dead-lettered messages are deleted.
func TestBatchReportsOnlyWhatMustComeBack(t *testing.T) {
	b := &failingFor{fakeBackoff: &fakeBackoff{}, failSendOf: "msg_sendfails", failDeadOf: "msg_deadfails"}
	h := &scripted{out: func(job queue.Job, _ int) queue.Outcome {
		switch job.DeliveryID {
		case "msg_ok":
			return queue.Outcome{Kind: queue.Done}
		case "msg_dead", "msg_deadfails":
			return queue.Outcome{Kind: queue.DeadLetter}
		}
		return queue.Outcome{Kind: queue.Retry, After: 5 * time.Minute, Next: 2}
	}}
	recs := []events.SQSMessage{
		record(t, "ok", queue.Job{DeliveryID: "msg_ok", Attempt: 1}, 1),
		record(t, "retry", queue.Job{DeliveryID: "msg_retry", Attempt: 1}, 1),
		record(t, "sendfails", queue.Job{DeliveryID: "msg_sendfails", Attempt: 1}, 1),
		record(t, "hop", queue.Job{DeliveryID: "msg_hop", Attempt: 6, NotBefore: start.Add(3 * time.Hour)}, 1),
		record(t, "dead", queue.Job{DeliveryID: "msg_dead", Attempt: 10}, 1),
		record(t, "deadfails", queue.Job{DeliveryID: "msg_deadfails", Attempt: 10}, 1),
		{MessageId: "garbage", ReceiptHandle: "rh-garbage", Body: "not json"},
	}
	resp, err := run(b, h, clock.NewFake(start), recs...)
	if err != nil {
		t.Fatal(err)
	}
	got := failures(resp)
	want := map[string]bool{"sendfails": true, "deadfails": true, "garbage": true}
	if len(got) != len(want) || !got["sendfails"] || !got["deadfails"] || !got["garbage"] {
		t.Fatalf("batch item failures %v, want %v", got, want)
	}
	if len(h.taken()) != 5 {
		t.Fatal("the hop made an attempt, or a due message none")
	}
	sent := map[string]sentJob{}
	for _, s := range b.takeSent() {
		sent[s.job.DeliveryID] = s
	}
	if len(sent) != 2 || sent["msg_retry"].delay != 5*time.Minute || sent["msg_hop"].delay != sqsqueue.MaxDelay {
		t.Fatalf("sent %+v", sent)
	}
	if len(b.hidden) != 1 || b.hidden["rh-sendfails"] != 5*time.Minute {
		t.Fatalf("hidden %v, want only the failed send's message, for its backoff", b.hidden)
	}
	if len(b.dead) != 1 || b.dead[0].DeliveryID != "msg_dead" {
		t.Fatalf("dead letters %+v", b.dead)
	}
}

// failingFor fails the sends of one delivery and the dead letter of another.
type failingFor struct {
	*fakeBackoff
	failSendOf, failDeadOf string
}

func (f *failingFor) Enqueue(ctx context.Context, job queue.Job, delay time.Duration) error {
	if job.DeliveryID == f.failSendOf {
		return errors.New("send refused")
	}
	return f.fakeBackoff.Enqueue(ctx, job, delay)
}

func (f *failingFor) DeadLetter(ctx context.Context, job queue.Job) error {
	if job.DeliveryID == f.failDeadOf {
		return errors.New("dead letter refused")
	}
	return f.fakeBackoff.DeadLetter(ctx, job)
}
