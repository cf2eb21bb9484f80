package testenv

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/lookup"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
)

// selfServiceStores are the ports of the lookups and the webhook
// self-service, which both adapters implement.
type selfServiceStores interface {
	lookup.Events
	lookup.Deliveries
	notifications.EventStore
	PutMerchantEvent(ctx context.Context, e notifications.MerchantEvent) error
	webhooks.DeliveryStore
}

// MemQueue records enqueued jobs.
type MemQueue struct {
	mu   sync.Mutex
	jobs []queue.Job
}

// Enqueue records job.
func (q *MemQueue) Enqueue(_ context.Context, job queue.Job, _ time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, job)
	return nil
}

// Jobs returns the jobs enqueued so far.
func (q *MemQueue) Jobs() []queue.Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]queue.Job(nil), q.jobs...)
}

// RecordingPoster records the webhook requests it is given and answers
// each with Answer (default 200 after 3 ms).
type RecordingPoster struct {
	mu     sync.Mutex
	reqs   []webhooks.Request
	Answer func(webhooks.Request) webhooks.Result
}

// Send records req.
func (p *RecordingPoster) Send(_ context.Context, req webhooks.Request) webhooks.Result {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	answer := p.Answer
	p.mu.Unlock()
	if answer != nil {
		return answer(req)
	}
	return webhooks.Result{StatusCode: 200, Duration: 3 * time.Millisecond}
}

// Requests returns the requests sent so far.
func (p *RecordingPoster) Requests() []webhooks.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]webhooks.Request(nil), p.reqs...)
}

// Notify runs the simulator's notifications emitted so far through the
// service's notifications receiver (HMAC-verified, applied to payment
// records, kept in merchants' event histories, deliveries created and
// queued on Queue), as the notifications function does. Items already
// processed are processed again harmlessly (they are de-duplicated).
func (e *Env) Notify() {
	e.T.Helper()
	signer, err := upstream.NewSigner(HMACKey)
	if err != nil {
		e.T.Fatal(err)
	}
	inbox := &connector.Inbox{Signer: signer, Log: e.Deps.Log, Receiver: &notifications.Receiver{
		Events: e.SelfService, Payments: e.Store, Tenants: e.Store,
		Deliveries: e.SelfService, Queue: e.Queue, Clock: e.Clock, Log: e.Deps.Log}}
	for _, it := range e.Sim.Notifications() {
		body, err := json.Marshal(upstream.Notification{Live: "false", NotificationItems: []upstream.NotificationItem{{Item: it}}})
		if err != nil {
			e.T.Fatal(err)
		}
		if _, err := inbox.Accept(context.Background(), body); err != nil {
			e.T.Fatalf("notification %s %s: %v", it.EventCode, it.PSPReference, err)
		}
		e.Clock.Advance(time.Second) // distinct arrival times
	}
}
