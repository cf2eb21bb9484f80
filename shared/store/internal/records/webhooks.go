package records

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/upstream"
	"github.com/yp/paysvc/shared/upstream/connector"
	"github.com/yp/paysvc/shared/webhooks"
)

// Delivery is a stored webhook delivery.
type Delivery struct {
	Format         Format          `json:"format"`
	ID             string          `json:"id"`
	MerchantID     string          `json:"merchantId"`
	SubscriptionID string          `json:"subscriptionId"`
	EventID        string          `json:"eventId"`
	EventCode      string          `json:"eventCode"`
	PSPReference   string          `json:"pspReference"`
	Payload        json.RawMessage `json:"payload"`
	Status         string          `json:"status"`
	Enqueued       bool            `json:"enqueued"`
	Attempts       int             `json:"attempts"`
	LastStatusCode int             `json:"lastStatusCode,omitempty"`
	LastError      string          `json:"lastError,omitempty"`
	LastAttemptAt  *time.Time      `json:"lastAttemptAt,omitempty"`
	NextAttemptAt  *time.Time      `json:"nextAttemptAt,omitempty"`
	DeliveredAt    *time.Time      `json:"deliveredAt,omitempty"`
	Redrives       int             `json:"redrives,omitempty"`
	History        []Attempt       `json:"history,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
	UpdatedAt      time.Time       `json:"updatedAt"`
	Version        int64           `json:"version"`
}

// Attempt is a stored attempt of a delivery (webhooks.AttemptRecord).
type Attempt struct {
	Number     int       `json:"n"`
	At         time.Time `json:"at"`
	Signature  string    `json:"sig,omitempty"`
	StatusCode int       `json:"status,omitempty"`
	Body       string    `json:"body,omitempty"`
	Truncated  bool      `json:"trunc,omitempty"`
	Error      string    `json:"err,omitempty"`
	DurationMS int64     `json:"ms,omitempty"`
}

func fromAttempts(h []webhooks.AttemptRecord) []Attempt {
	if len(h) == 0 {
		return nil
	}
	out := make([]Attempt, len(h))
	for i, a := range h {
		out[i] = Attempt(a)
		out[i].At = a.At.UTC()
	}
	return out
}

func toAttempts(h []Attempt) []webhooks.AttemptRecord {
	if len(h) == 0 {
		return nil
	}
	out := make([]webhooks.AttemptRecord, len(h))
	for i, a := range h {
		out[i] = webhooks.AttemptRecord(a)
	}
	return out
}

// FromDelivery converts a delivery to its stored form.
func FromDelivery(d webhooks.Delivery) Delivery {
	return Delivery{
		ID: d.ID, MerchantID: d.MerchantID, SubscriptionID: d.SubscriptionID, EventID: d.EventID, EventCode: d.EventCode,
		PSPReference: d.PSPReference, Payload: d.Payload, Status: string(d.Status), Enqueued: d.Enqueued, Attempts: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, LastAttemptAt: utcPtr(d.LastAttemptAt),
		NextAttemptAt: utcPtr(d.NextAttemptAt), DeliveredAt: utcPtr(d.DeliveredAt), Redrives: d.Redrives,
		History: fromAttempts(d.History), CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), Version: d.Version,
	}
}

// ToDelivery converts a stored delivery to the domain's.
func (r Delivery) ToDelivery() webhooks.Delivery {
	return webhooks.Delivery{
		ID: r.ID, MerchantID: r.MerchantID, SubscriptionID: r.SubscriptionID, EventID: r.EventID, EventCode: r.EventCode,
		PSPReference: r.PSPReference, Payload: r.Payload, Status: webhooks.Status(r.Status), Enqueued: r.Enqueued, Attempts: r.Attempts,
		LastStatusCode: r.LastStatusCode, LastError: r.LastError, LastAttemptAt: r.LastAttemptAt,
		NextAttemptAt: r.NextAttemptAt, DeliveredAt: r.DeliveredAt, Redrives: r.Redrives,
		History: toAttempts(r.History), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version,
	}
}

// Notification is a stored inbound notification item (notifications.Event);
// the item itself is kept in the upstream's own format.
type Notification struct {
	Format      Format                           `json:"format"`
	ID          string                           `json:"id"`
	Key         string                           `json:"key"`
	Live        string                           `json:"live"`
	Item        upstream.NotificationRequestItem `json:"item"`
	PaymentPSP  string                           `json:"paymentPspReference"`
	Status      string                           `json:"status"`
	MerchantID  string                           `json:"merchantId,omitempty"`
	DeliveryIDs []string                         `json:"deliveryIds,omitempty"`
	Received    int                              `json:"received"`
	ReceivedAt  time.Time                        `json:"receivedAt"`
	ProcessedAt *time.Time                       `json:"processedAt,omitempty"`
	// UnroutableAt and UnroutableReason: see notifications.Event.
	UnroutableAt     *time.Time `json:"unroutableAt,omitempty"`
	UnroutableReason string     `json:"unroutableReason,omitempty"`
	UpdatedAt        time.Time  `json:"updatedAt"`
	Version          int64      `json:"version"`
}

// FromEvent converts a notification event to its stored form.
func FromEvent(e notifications.Event) Notification {
	return Notification{
		ID: e.ID, Key: e.Key, Live: e.Live, Item: connector.Item(e.Item), PaymentPSP: e.PaymentPSP, Status: string(e.Status),
		MerchantID: e.MerchantID, DeliveryIDs: slices.Clone(e.DeliveryIDs), Received: e.Received,
		ReceivedAt: e.ReceivedAt.UTC(), ProcessedAt: utcPtr(e.ProcessedAt), UnroutableAt: utcPtr(e.UnroutableAt),
		UnroutableReason: e.UnroutableReason, UpdatedAt: e.UpdatedAt.UTC(), Version: e.Version,
	}
}

// ToEvent converts a stored notification event to the domain's.
func (r Notification) ToEvent() notifications.Event {
	return notifications.Event{
		ID: r.ID, Key: r.Key, Live: r.Live, Item: connector.Notification(r.Item), PaymentPSP: r.PaymentPSP, Status: notifications.EventStatus(r.Status),
		MerchantID: r.MerchantID, DeliveryIDs: r.DeliveryIDs, Received: r.Received,
		ReceivedAt: r.ReceivedAt, ProcessedAt: r.ProcessedAt, UnroutableAt: r.UnroutableAt,
		UnroutableReason: r.UnroutableReason, UpdatedAt: r.UpdatedAt, Version: r.Version,
	}
}

// MerchantEvent is a stored entry of a merchant's event history
// (notifications.MerchantEvent): the webhook body kept byte for byte.
type MerchantEvent struct {
	Format       Format          `json:"format"`
	ID           string          `json:"id"`
	MerchantID   string          `json:"merchantId"`
	EventCode    string          `json:"eventCode"`
	PSPReference string          `json:"pspReference"`
	PaymentPSP   string          `json:"paymentPspReference"`
	Payload      json.RawMessage `json:"payload"`
	CreatedAt    time.Time       `json:"createdAt"`
}

// FromMerchantEvent converts a merchant event to its stored form.
func FromMerchantEvent(e notifications.MerchantEvent) MerchantEvent {
	return MerchantEvent{
		ID: e.ID, MerchantID: e.MerchantID, EventCode: e.EventCode, PSPReference: e.PSPReference,
		PaymentPSP: e.PaymentPSP, Payload: e.Payload, CreatedAt: e.CreatedAt.UTC(),
	}
}

// ToMerchantEvent converts a stored merchant event to the domain's.
func (r MerchantEvent) ToMerchantEvent() notifications.MerchantEvent {
	return notifications.MerchantEvent{
		ID: r.ID, MerchantID: r.MerchantID, EventCode: r.EventCode, PSPReference: r.PSPReference,
		PaymentPSP: r.PaymentPSP, Payload: r.Payload, CreatedAt: r.CreatedAt,
	}
}
