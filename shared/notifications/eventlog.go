package notifications

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// MerchantEvent is one notification as the owning merchant's webhooks
// receive it, kept for the merchant's event history (GET /v1/ecom/events).
// It is written once the event is routed and never changes.
type MerchantEvent struct {
	ID         string `json:"id"` // the event's id (Event.ID)
	MerchantID string `json:"merchantId"`
	EventCode  string `json:"eventCode"`
	// PSPReference is the item's own pspReference (the modification's for
	// captures, refunds, …); PaymentPSP the payment's.
	PSPReference string `json:"pspReference"`
	PaymentPSP   string `json:"paymentPspReference"`
	// Payload is the exact webhook body (webhooks.BuildPayload).
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"` // the event's first arrival (Event.ReceivedAt)
}

// EventCursor is the position of a merchant event in its history
// (newest first: CreatedAt, then ID, both descending).
type EventCursor struct {
	CreatedAt time.Time
	ID        string
}

// Before reports whether e comes after the cursor position in the
// newest-first order (strictly older, or as old with a smaller id).
func (c EventCursor) Before(e MerchantEvent) bool {
	if d := e.CreatedAt.Compare(c.CreatedAt); d != 0 {
		return d < 0
	}
	return e.ID < c.ID
}

// EventQuery selects a page of a merchant's event history.
type EventQuery struct {
	Limit int          // at most this many (> 0)
	After *EventCursor // only events after this position (nil: from the newest)
	// PSPReference keeps events whose item or payment has this pspReference.
	PSPReference string
	EventCode    string // keeps events of this code
}

// Matches reports whether e passes the query's filters.
func (q EventQuery) Matches(e MerchantEvent) bool {
	if q.PSPReference != "" && e.PSPReference != q.PSPReference && e.PaymentPSP != q.PSPReference {
		return false
	}
	return q.EventCode == "" || e.EventCode == q.EventCode
}

// NewestFirst sorts es newest first (CreatedAt descending, then ID
// descending: the history's order) and keeps the first limit of them
// (limit <= 0: all).
func NewestFirst(es []MerchantEvent, limit int) []MerchantEvent {
	slices.SortStableFunc(es, func(a, b MerchantEvent) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if limit > 0 && len(es) > limit {
		es = es[:limit]
	}
	return es
}
