package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// EventTest is the eventCode of the test webhook (POST /v1/ecom/webhooks/test).
const EventTest = "paysvc.webhook.test"

// Subscriptions is the port to merchants' webhook subscriptions.
type Subscriptions interface {
	GetSubscription(ctx context.Context, merchantID, id string) (tenant.Subscription, error)
	ListSubscriptions(ctx context.Context, merchantID string) ([]tenant.Subscription, error)
}

// SelfService is what merchants do with their webhooks themselves: retry a
// delivery and send a test event to their endpoints.
type SelfService struct {
	Deliveries    DeliveryStore
	Subscriptions Subscriptions
	Queue         queue.Queue
	Sender        Poster
	Clock         clock.Clock
	// Live is the deployment's environment (the payload's "live").
	Live bool
}

// Retried is what a retry did: the delivery as it is now and the number
// of the attempt queued.
type Retried struct {
	Delivery    Delivery
	NextAttempt int
}

// retryable reports whether a merchant may retry d: it ended failed or
// disabled, or it is pending without a queued job.
func retryable(d Delivery) bool {
	return d.Status == StatusFailed || d.Status == StatusDisabled || (d.Status == StatusPending && !d.Enqueued)
}

// Retry queues one more attempt of merchantID's delivery id now, with the
// same X-Webhook-Id and the next attempt number (attempts are not reset:
// after the tenth, a failed retry ends failed again at once). Another
// merchant's delivery is 404 yp_3007 like an unknown one; a delivered one,
// or one still being retried by the schedule, is 400.
func (s *SelfService) Retry(ctx context.Context, merchantID, id string) (Retried, error) {
	notFound := apperr.New(apperr.WebhookNotFound, "webhook delivery not found")
	d, err := s.Deliveries.GetDelivery(ctx, id)
	switch {
	case errors.Is(err, storeerr.ErrNotFound):
		return Retried{}, notFound
	case err != nil:
		return Retried{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read delivery %s: %w", id, err))
	case d.MerchantID != merchantID:
		return Retried{}, notFound
	case !retryable(d):
		return Retried{}, apperr.Newf(apperr.Invalid, "webhook delivery is %s; only failed or disabled deliveries can be retried", d.Status)
	}
	now := s.Clock.Now()
	var prev Status
	d, err = mutateFrom(ctx, s.Deliveries, d, func(d *Delivery) error { // from the read above
		prev = d.Status
		if !retryable(*d) {
			return apperr.Newf(apperr.Invalid, "webhook delivery is %s; only failed or disabled deliveries can be retried", d.Status)
		}
		d.Status, d.Enqueued, d.NextAttemptAt, d.UpdatedAt = StatusPending, false, &now, now
		d.Redrives++
		return nil
	})
	if err != nil {
		var e *apperr.Error
		if errors.As(err, &e) {
			return Retried{}, e
		}
		return Retried{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("reset delivery %s: %w", id, err))
	}
	next := d.Attempts + 1
	if err := s.Queue.Enqueue(ctx, queue.Job{DeliveryID: id, Attempt: next}, 0); err != nil {
		(&Admin{Deliveries: s.Deliveries}).restore(ctx, id, prev)
		return Retried{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("enqueue delivery %s: %w", id, err))
	}
	d, err = mutateFrom(ctx, s.Deliveries, d, markEnqueued) // from the save above
	if err != nil {
		// The job is queued: the attempt is made; only the flag is missing.
		return Retried{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("mark delivery %s enqueued: %w", id, err))
	}
	return Retried{Delivery: d, NextAttempt: next}, nil
}

// TestResult is what one subscription's endpoint answered to the test event.
type TestResult struct {
	SubscriptionID string `json:"subscriptionId"`
	URL            string `json:"url"`
	WebhookID      string `json:"webhookId"` // the X-Webhook-Id sent
	Delivered      bool   `json:"delivered"` // a 2xx answer
	StatusCode     int    `json:"statusCode,omitempty"`
	LatencyMs      int64  `json:"latencyMs"`
	Error          string `json:"error,omitempty"`
}

// TestReport is the answer of a webhook test.
type TestReport struct {
	EventCode string       `json:"eventCode"`
	Results   []TestResult `json:"results"`
}

// SendTest sends a signed test event (paysvc.webhook.test) now to the merchant's subscription
// subscriptionID, or to each of its enabled subscriptions when it is "",
// under the same target rules (SSRF) as every delivery, and reports each
// answer. Nothing is stored or retried. A subscription of another merchant
// is 404 yp_3007 like an unknown one, and so is having none to test.
func (s *SelfService) SendTest(ctx context.Context, m tenant.Merchant, subscriptionID string) (TestReport, error) {
	var subs []tenant.Subscription
	if subscriptionID != "" {
		sub, err := s.Subscriptions.GetSubscription(ctx, m.ID, subscriptionID)
		if errors.Is(err, storeerr.ErrNotFound) {
			return TestReport{}, apperr.New(apperr.WebhookNotFound, "webhook subscription not found")
		}
		if err != nil {
			return TestReport{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("read subscription %s: %w", subscriptionID, err))
		}
		subs = []tenant.Subscription{sub}
	} else {
		all, err := s.Subscriptions.ListSubscriptions(ctx, m.ID)
		if err != nil {
			return TestReport{}, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("list subscriptions of %s: %w", m.ID, err))
		}
		for _, sub := range all {
			if sub.Enabled {
				subs = append(subs, sub)
			}
		}
		if len(subs) == 0 {
			return TestReport{}, apperr.New(apperr.WebhookNotFound, "no enabled webhook subscription to test")
		}
	}
	now := s.Clock.Now()
	report := TestReport{EventCode: EventTest, Results: make([]TestResult, len(subs))}
	var wg sync.WaitGroup
	for i, sub := range subs {
		wg.Go(func() { report.Results[i] = s.test(ctx, m, sub, now) })
	}
	wg.Wait()
	return report, nil
}

// test sends one test event to sub.
func (s *SelfService) test(ctx context.Context, m tenant.Merchant, sub tenant.Subscription, now time.Time) TestResult {
	id := testID()
	out := TestResult{SubscriptionID: sub.ID, URL: sub.URL, WebhookID: id}
	item := payments.Notification{
		EventCode: EventTest, Success: "true", PSPReference: "TEST" + strings.ToUpper(id[len(id)-12:]),
		MerchantReference: "webhook-test", MerchantAccountCode: m.UpstreamAccount,
		Amount: money.Amount{Value: 0, Currency: "EUR"}, EventDate: now.UTC().Format(time.RFC3339),
	}
	body, err := BuildPayload(s.Live, item, "", 0)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	sig, err := signFor(sub, id, now, body)
	if err != nil {
		out.Error = "cannot sign: " + err.Error()
		return out
	}
	res := s.Sender.Send(ctx, Request{URL: sub.URL, ID: id, Attempt: 1, Timestamp: now, Signature: sig, Body: body})
	out.Delivered, out.StatusCode, out.LatencyMs, out.Error = res.Delivered(), res.StatusCode, res.Duration.Milliseconds(), res.Describe()
	return out
}

// testID is the X-Webhook-Id of one test event: "msg_test_" and 24 hex digits.
func testID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "msg_test_" + hex.EncodeToString(b)
}
