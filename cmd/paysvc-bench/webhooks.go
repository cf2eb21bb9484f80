package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/provision"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/sqsqueue"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooks/sender"
)

// batchSize is the dispatcher's SQS batch size (template.yaml BatchSize).
const batchSize = 10

// webhookStore is what the dispatcher reads and writes.
type webhookStore interface {
	webhooks.DeliveryStore
	tenant.Store
}

// webhookRun is one store's figures.
type webhookRun struct {
	Store      string
	Deliveries int
	PerSecond  float64
	BatchP50   time.Duration
	BatchP99   time.Duration
	// Hanging receiver: the nine others of a batch whose tenth receiver hangs.
	HangFor       time.Duration
	BaselineNine  time.Duration // slowest of nine in batches without a hanging receiver (median of 3)
	HangNine      time.Duration // slowest of the nine with the tenth hanging
	HangBatch     time.Duration // the whole batch (the invocation) with the tenth hanging
	HangDelivered int           // of the nine
}

// webhookResult is item 4.
type webhookResult struct {
	Runs []webhookRun
}

// noBackoff stands in for the retries' messages, SQS visibility changes
// and the DLQ (the benchmark's deliveries all succeed except the hanging
// one's).
type noBackoff struct{}

// Enqueue drops a retry sent again.
func (noBackoff) Enqueue(context.Context, queue.Job, time.Duration) error { return nil }

// ChangeVisibility drops a retry kept hidden.
func (noBackoff) ChangeVisibility(context.Context, string, time.Duration) error { return nil }

// DeadLetter drops a dead letter.
func (noBackoff) DeadLetter(context.Context, queue.Job) error { return nil }

// receivers are the loopback webhook receivers: /fast answers 200 at once,
// /hang holds the request for hang (or until the sender gives up).
type receivers struct {
	srv  *httptest.Server
	fast atomic.Int64
	hang time.Duration
}

// newReceivers starts the receivers on a loopback port.
func newReceivers(hang time.Duration) *receivers {
	r := &receivers{hang: hang}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fast", func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.fast.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("POST /hang", func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		select {
		case <-time.After(r.hang):
		case <-req.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	r.srv = httptest.NewServer(mux)
	return r
}

// webhookBench is one store with its dispatcher and deliveries.
type webhookBench struct {
	st      webhookStore
	handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	done    sync.Map // delivery id → time its job finished
	payload []byte
	seq     int
}

// newWebhookBench seeds st (demo tenant, a fast and a hanging subscription)
// and wires the dispatcher under the SQS Lambda handler.
func newWebhookBench(st webhookStore, recv *receivers) (*webhookBench, error) {
	ctx := context.Background()
	clk := clock.System{}
	prov, _, err := seedDemo(ctx, st)
	if err != nil {
		return nil, err
	}
	for id, path := range map[string]string{"sub_fast": "/fast", "sub_hang": "/hang"} {
		if _, _, err := prov.PutSubscription(ctx, provision.SubscriptionSpec{ID: id, MerchantID: "m_demo", URL: recv.srv.URL + path, AllowLocal: true}); err != nil {
			return nil, fmt.Errorf("subscription: %w", err)
		}
	}
	item := upstream.NotificationRequestItem{
		Amount: money.Amount{Value: 12950, Currency: "EUR"}, EventCode: upstream.EventAuthorisation,
		EventDate: "2026-11-23T10:00:00+01:00", MerchantAccountCode: "DemoShopECOM", MerchantReference: "order-2026-000123",
		PaymentMethod: "visa", PSPReference: "QFQTPCQ8HXSKGK82", Success: "true",
		AdditionalData: map[string]string{"authCode": "058158", "cardSummary": "1111"},
	}
	payload, err := webhooks.BuildPayload(false, connector.Notification(item), "advanced", 0)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	// As the dispatcher function wires it: the production sender (its
	// 15 s timeout), loopback targets allowed as in development.
	d := &webhooks.Dispatcher{
		Deliveries: st, Tenants: st, Clock: clk, Log: log,
		Sender: sender.New(sender.Config{AllowLocal: true}),
	}
	wb := &webhookBench{st: st, payload: payload}
	process := func(ctx context.Context, job queue.Job, attempt int) queue.Outcome {
		out := d.Process(ctx, job, attempt)
		wb.done.Store(job.DeliveryID, time.Now())
		return out
	}
	wb.handler = sqsqueue.LambdaHandler(noBackoff{}, process, clk, log)
	return wb, nil
}

// create stores n pending deliveries to subscription sub.
func (w *webhookBench) create(sub string, n int) ([]string, error) {
	ctx := context.Background()
	ids := make([]string, n)
	now := time.Now().UTC()
	s := runLoad(ctx, n, 8, func(ctx context.Context, i int) error {
		ev := fmt.Sprintf("evt_bench_%d_%d_%d", now.UnixNano(), w.seq, i)
		d := webhooks.Delivery{
			ID: webhooks.DeliveryID(ev, sub), MerchantID: "m_demo", SubscriptionID: sub, EventID: ev,
			EventCode: upstream.EventAuthorisation, PSPReference: "QFQTPCQ8HXSKGK82", Payload: w.payload,
			Status: webhooks.StatusPending, Enqueued: true, CreatedAt: now, UpdatedAt: now,
		}
		if _, _, err := webhooks.CreateDelivery(ctx, w.st, d); err != nil {
			return err
		}
		ids[i] = d.ID
		return nil
	})
	w.seq++
	if s.Errors > 0 {
		return nil, fmt.Errorf("creating deliveries: %s", s.FirstErr)
	}
	return ids, nil
}

// batch runs one SQS batch of the deliveries ids and returns its duration
// and how many were reported failed.
func (w *webhookBench) batch(ctx context.Context, ids []string) (time.Duration, int, error) {
	ev := events.SQSEvent{}
	for i, id := range ids {
		body, err := queue.Job{DeliveryID: id, Attempt: 1}.Encode()
		if err != nil {
			return 0, 0, err
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: fmt.Sprintf("m-%d-%s", i, id), ReceiptHandle: "r-" + id, Body: body,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}, EventSource: "aws:sqs",
		})
	}
	start := time.Now()
	resp, err := w.handler(ctx, ev)
	return time.Since(start), len(resp.BatchItemFailures), err
}

// throughput sends n deliveries in batches of ten, one batch at a time
// (one dispatcher instance handles one SQS batch per invocation).
func (w *webhookBench) throughput(ctx context.Context, run *webhookRun, recv *receivers, n int) error {
	ids, err := w.create("sub_fast", n)
	if err != nil {
		return err
	}
	before := recv.fast.Load()
	var lat []time.Duration
	failed := 0 // deliveries not delivered on their attempt
	start := time.Now()
	for lo := 0; lo < len(ids); lo += batchSize {
		d, f, err := w.batch(ctx, ids[lo:min(lo+batchSize, len(ids))])
		if err != nil {
			return err
		}
		lat = append(lat, d)
		failed += f
	}
	run.Deliveries, run.PerSecond = n, float64(n)/time.Since(start).Seconds()
	st := sample{Latencies: lat}.stats()
	run.BatchP50, run.BatchP99 = st.P50, st.P99
	if got := recv.fast.Load() - before; got != int64(n) || failed > 0 {
		return fmt.Errorf("%s: receiver got %d of %d deliveries, %d reported failed", run.Store, got, n, failed)
	}
	return nil
}

// slowestOf returns the latest finish among ids, relative to start.
func (w *webhookBench) slowestOf(ids []string, start time.Time) (time.Duration, int) {
	var worst time.Duration
	n := 0
	for _, id := range ids {
		if v, ok := w.done.Load(id); ok {
			n++
			worst = max(worst, v.(time.Time).Sub(start))
		}
	}
	return worst, n
}

// hanging measures nine fast deliveries in a batch whose tenth receiver
// hangs, against batches of ten fast ones.
func (w *webhookBench) hanging(ctx context.Context, run *webhookRun, hang time.Duration) error {
	run.HangFor = hang
	var base []time.Duration
	for range 3 {
		ids, err := w.create("sub_fast", batchSize)
		if err != nil {
			return err
		}
		start := time.Now()
		if _, failed, err := w.batch(ctx, ids); err != nil || failed > 0 {
			return fmt.Errorf("baseline batch: %d failed, %v", failed, err)
		}
		worst, _ := w.slowestOf(ids[:batchSize-1], start)
		base = append(base, worst)
	}
	run.BaselineNine = median(base)
	fast, err := w.create("sub_fast", batchSize-1)
	if err != nil {
		return err
	}
	slow, err := w.create("sub_hang", 1)
	if err != nil {
		return err
	}
	// The hanging one first, so it is on its way before the others start.
	ids := append(slices.Clone(slow), fast...)
	start := time.Now()
	d, _, err := w.batch(ctx, ids)
	if err != nil {
		return err
	}
	run.HangBatch = d
	run.HangNine, run.HangDelivered = w.slowestOf(fast, start)
	return nil
}

// runWebhooks is item 4, on the embedded store and on DynamoDB (moto).
func runWebhooks(ctx context.Context, cfg *config) (*webhookResult, error) {
	res := &webhookResult{}
	err := runSection("webhooks", cfg.progress, func(t *section) error {
		recv := newReceivers(cfg.HangFor)
		defer recv.srv.Close()

		es, err := t.embeddedStore()
		if err != nil {
			return err
		}

		// a batch's deliveries run at once
		ddb, table, err := t.motoTable(ctx)
		if err != nil {
			return err
		}

		for _, s := range []struct {
			name string
			st   webhookStore
		}{
			{"DynamoDB (moto)", dynamo.New(ddb, table, clock.System{})},
			{"embedded (bbolt)", es},
		} {
			run := webhookRun{Store: s.name}
			wb, err := newWebhookBench(s.st, recv)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			cfg.logf("webhooks: %s: %d deliveries in batches of %d", s.name, cfg.Deliveries, batchSize)
			runCtx, cancel := context.WithTimeout(ctx, 5*time.Minute+cfg.HangFor)
			err = wb.throughput(runCtx, &run, recv, cfg.Deliveries)
			if err == nil {
				cfg.logf("webhooks: %s: a batch whose tenth receiver hangs %s", s.name, cfg.HangFor)
				err = wb.hanging(runCtx, &run, cfg.HangFor)
			}
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			res.Runs = append(res.Runs, run)
		}
		return nil
	})
	return res, err
}
