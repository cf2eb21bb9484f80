package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RefundParams refunds (part of) a captured payment.
type RefundParams struct {
	Amount    Amount     `json:"amount"`
	Reference string     `json:"reference,omitempty"`
	LineItems []LineItem `json:"lineItems,omitempty"`
}

// Refund refunds part or all of a captured payment; several partial
// refunds are allowed up to the captured amount. The outcome arrives as a
// REFUND (or REFUND_FAILED) webhook.
func (c *Client) Refund(ctx context.Context, siteID, pspReference string, p RefundParams, opts ...CallOption) (Modification, error) {
	var out Modification
	err := c.do(ctx, http.MethodPost, sitePath(siteID, "payments", pspReference, "refunds"), p, &out, &out.Meta, opts)
	return out, err
}

// Payment is a payment as its merchant sees it (GetPayment).
type Payment struct {
	PSPReference      string `json:"pspReference"`
	MerchantReference string `json:"merchantReference,omitempty"`
	SiteID            string `json:"siteId"`
	Amount            Amount `json:"amount"`
	AuthorisedAmount  Amount `json:"authorisedAmount"`
	CapturedAmount    Amount `json:"capturedAmount"`
	RefundedAmount    Amount `json:"refundedAmount"`
	CapturesInFlight  Amount `json:"capturesInFlight"`
	RefundsInFlight   Amount `json:"refundsInFlight"`
	RefundableAmount  Amount `json:"refundableAmount"`
	CapturableAmount  Amount `json:"capturableAmount"`
	// AuthorisationExpiresAt is when the platform expires the uncaptured
	// remainder (nil when nothing can expire), and
	// AuthorisationExpirySource where the time comes from.
	AuthorisationExpiresAt    *time.Time      `json:"authorisationExpiresAt,omitempty"`
	AuthorisationExpirySource string          `json:"authorisationExpirySource,omitempty"`
	State                     string          `json:"state"`
	RefusalReason             string          `json:"refusalReason,omitempty"`
	PaymentMethod             *PaymentMethod  `json:"paymentMethod,omitempty"`
	PaymentSource             string          `json:"paymentSource,omitempty"`
	CreatedAt                 time.Time       `json:"createdAt"`
	UpdatedAt                 time.Time       `json:"updatedAt"`
	Timeline                  []TimelineEntry `json:"timeline"`
	Meta                      Meta            `json:"-"`
}

// PaymentMethod is a payment's method.
type PaymentMethod struct {
	Brand string `json:"brand"`
}

// TimelineEntry is one API operation or notification of a payment.
type TimelineEntry struct {
	Time         time.Time `json:"time"`
	Kind         string    `json:"kind"`
	Source       string    `json:"source"` // "api" or "notification"
	Amount       *Amount   `json:"amount,omitempty"`
	Success      *bool     `json:"success,omitempty"`
	PSPReference string    `json:"pspReference,omitempty"`
	Reason       string    `json:"reason,omitempty"`
}

// GetPayment returns a payment of the site.
func (c *Client) GetPayment(ctx context.Context, siteID, pspReference string) (Payment, error) {
	var out Payment
	err := c.do(ctx, http.MethodGet, sitePath(siteID, "payments", pspReference), nil, &out, &out.Meta, nil)
	return out, err
}

// Event is one event of the merchant's history: the webhook body as delivered.
type Event struct {
	ID                  string          `json:"id"`
	EventCode           string          `json:"eventCode"`
	PSPReference        string          `json:"pspReference"`
	PaymentPSPReference string          `json:"paymentPspReference"`
	CreatedAt           time.Time       `json:"createdAt"`
	Payload             json.RawMessage `json:"payload"`
}

// EventPage is a page of events, newest first.
type EventPage struct {
	Data    []Event `json:"data"`
	HasMore bool    `json:"hasMore"`
	Meta    Meta    `json:"-"`
}

// ListParams pages a list: Limit 1–100 (0: the default 10), StartingAfter
// the id of the last item of the previous page.
type ListParams struct {
	Limit         int
	StartingAfter string
}

func (p ListParams) query(q url.Values) url.Values {
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.StartingAfter != "" {
		q.Set("startingAfter", p.StartingAfter)
	}
	return q
}

// EventFilter narrows ListEvents.
type EventFilter struct {
	ListParams
	PSPReference string // the event's own or its payment's
	EventCode    string
}

// ListEvents returns a page of the merchant's event history.
func (c *Client) ListEvents(ctx context.Context, f EventFilter) (EventPage, error) {
	q := f.query(url.Values{})
	if f.PSPReference != "" {
		q.Set("pspReference", f.PSPReference)
	}
	if f.EventCode != "" {
		q.Set("eventCode", f.EventCode)
	}
	var out EventPage
	err := c.do(ctx, http.MethodGet, withQuery("/v1/ecom/events", q), nil, &out, &out.Meta, nil)
	return out, err
}

// AllEvents iterates over every event of the merchant's history that f
// selects, newest first, from f.StartingAfter on, fetching f.Limit events
// a page (0: the API's default) as the loop goes on. A failed page ends
// the loop with its error:
//
//	for ev, err := range c.AllEvents(ctx, client.EventFilter{PSPReference: psp}) {
//		if err != nil {
//			return err
//		}
//		…
//	}
func (c *Client) AllEvents(ctx context.Context, f EventFilter) iter.Seq2[Event, error] {
	return pages(f.StartingAfter, func(after string) ([]Event, bool, error) {
		f.StartingAfter = after
		p, err := c.ListEvents(ctx, f)
		return p.Data, p.HasMore, err
	}, func(e Event) string { return e.ID })
}

// WebhookDelivery is one delivery of a notification to one subscription.
type WebhookDelivery struct {
	ID             string     `json:"id"`
	SubscriptionID string     `json:"subscriptionId"`
	EventID        string     `json:"eventId"`
	EventCode      string     `json:"eventCode"`
	PSPReference   string     `json:"pspReference"`
	Status         string     `json:"status"` // pending, failed, disabled, delivered
	Attempts       int        `json:"attempts"`
	LastStatusCode int        `json:"lastStatusCode,omitempty"`
	LastError      string     `json:"lastError,omitempty"`
	LastAttemptAt  *time.Time `json:"lastAttemptAt,omitempty"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt,omitempty"`
	DeliveredAt    *time.Time `json:"deliveredAt,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	// NextAttempt is set by RetryWebhookDelivery: the attempt number queued.
	NextAttempt int  `json:"nextAttempt,omitempty"`
	Meta        Meta `json:"-"`
}

// WebhookDeliveryPage is a page of deliveries, newest first.
type WebhookDeliveryPage struct {
	Data    []WebhookDelivery `json:"data"`
	HasMore bool              `json:"hasMore"`
	Meta    Meta              `json:"-"`
}

// DeliveryFilter narrows ListWebhookDeliveries.
type DeliveryFilter struct {
	ListParams
	Status string
}

// ListWebhookDeliveries returns a page of the merchant's webhook deliveries.
func (c *Client) ListWebhookDeliveries(ctx context.Context, f DeliveryFilter) (WebhookDeliveryPage, error) {
	q := f.query(url.Values{})
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	var out WebhookDeliveryPage
	err := c.do(ctx, http.MethodGet, withQuery("/v1/ecom/webhook-deliveries", q), nil, &out, &out.Meta, nil)
	return out, err
}

// AllWebhookDeliveries iterates over every delivery f selects, newest
// first, as AllEvents does over events.
func (c *Client) AllWebhookDeliveries(ctx context.Context, f DeliveryFilter) iter.Seq2[WebhookDelivery, error] {
	return pages(f.StartingAfter, func(after string) ([]WebhookDelivery, bool, error) {
		f.StartingAfter = after
		p, err := c.ListWebhookDeliveries(ctx, f)
		return p.Data, p.HasMore, err
	}, func(d WebhookDelivery) string { return d.ID })
}

// pages iterates over the items of a listing's pages: page fetches the
// page after an item id ("" = the first), id names an item.
func pages[T any](after string, page func(after string) ([]T, bool, error), id func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, more, err := page(after)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if !more || len(items) == 0 {
				return
			}
			after = id(items[len(items)-1])
		}
	}
}

// RetryWebhookDelivery queues one more attempt of a failed delivery now
// (same X-Webhook-Id, the next attempt number).
func (c *Client) RetryWebhookDelivery(ctx context.Context, deliveryID string, opts ...CallOption) (WebhookDelivery, error) {
	var out WebhookDelivery
	err := c.do(ctx, http.MethodPost, "/v1/ecom/webhook-deliveries/"+url.PathEscape(deliveryID)+"/retry", struct{}{}, &out, &out.Meta, opts)
	return out, err
}

// WebhookTestResult is one endpoint's answer to the test event.
type WebhookTestResult struct {
	SubscriptionID string `json:"subscriptionId"`
	URL            string `json:"url"`
	WebhookID      string `json:"webhookId"`
	Delivered      bool   `json:"delivered"`
	StatusCode     int    `json:"statusCode,omitempty"`
	LatencyMs      int64  `json:"latencyMs"`
	Error          string `json:"error,omitempty"`
}

// WebhookTestReport is TestWebhooks' answer.
type WebhookTestReport struct {
	EventCode string              `json:"eventCode"`
	Results   []WebhookTestResult `json:"results"`
	Meta      Meta                `json:"-"`
}

// TestWebhooks sends a signed test event (eventCode paysvc.webhook.test) now to subscriptionID, or to every
// enabled subscription when it is "", and reports each endpoint's answer.
func (c *Client) TestWebhooks(ctx context.Context, subscriptionID string, opts ...CallOption) (WebhookTestReport, error) {
	body := struct {
		SubscriptionID string `json:"subscriptionId,omitempty"`
	}{subscriptionID}
	var out WebhookTestReport
	err := c.do(ctx, http.MethodPost, "/v1/ecom/webhooks/test", body, &out, &out.Meta, opts)
	return out, err
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
