// Package notifications receives the upstream's standard notifications
// (docs/webhooks.md): it verifies each item's HMAC signature, stores the item
// once (de-duplicated), applies it to the payment record, routes it to the
// owning merchant and creates and enqueues one webhook delivery per
// matching subscription. The upstream is answered "[accepted]" only once
// all of that is durable.
package notifications

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

// EventStatus is how far an event's processing got.
type EventStatus string

// Event statuses.
const (
	// EventReceived: stored; its deliveries are not (all) enqueued yet.
	EventReceived EventStatus = "received"
	// EventProcessed: the payment record is updated and every delivery is
	// created and enqueued.
	EventProcessed EventStatus = "processed"
	// EventUnroutable: no owning merchant was found (yet). Kept; processed
	// again when its payment's AUTHORISATION creates the record.
	EventUnroutable EventStatus = "unroutable"
	// EventAccount: an account-level item (payments.Code.AccountLevel:
	// about no payment, e.g. REPORT_AVAILABLE), kept for operations. Final:
	// never routed, applied or forwarded.
	EventAccount EventStatus = "account"
)

// Event is one stored notification item.
type Event struct {
	ID  string `json:"id"`  // "evt_" + hex SHA-256 of Key (first 32 digits)
	Key string `json:"key"` // eventCode|pspReference|success|originalReference
	// Live is the notification's live field as sent ("true"/"false") by
	// the last arrival processed: one of the other environment is kept
	// with it, unroutable (Receiver.Live).
	Live string                `json:"live"`
	Item payments.Notification `json:"item"`
	// PaymentPSP is the payment the item is about (payments.Notification.Payment).
	PaymentPSP  string      `json:"paymentPspReference"`
	Status      EventStatus `json:"status"`
	MerchantID  string      `json:"merchantId,omitempty"` // the owner, once routed
	DeliveryIDs []string    `json:"deliveryIds,omitempty"`
	// Received counts how many times the upstream sent this item.
	Received    int        `json:"received"`
	ReceivedAt  time.Time  `json:"receivedAt"` // first arrival
	ProcessedAt *time.Time `json:"processedAt,omitempty"`
	// UnroutableAt is when the event was first kept unroutable (kept once
	// it is routed); UnroutableReason why no owner was found last.
	UnroutableAt     *time.Time `json:"unroutableAt,omitempty"`
	UnroutableReason string     `json:"unroutableReason,omitempty"`
	UpdatedAt        time.Time  `json:"updatedAt"`
	Version          int64      `json:"version"`
}

// DeliveriesEnqueued reports whether the event's deliveries were all
// created and enqueued (an account-level event has none: it is done).
func (e Event) DeliveriesEnqueued() bool {
	return e.Status == EventProcessed || e.Status == EventAccount
}

// EventStore is the port that keeps notification events.
type EventStore interface {
	// GetEvent returns storeerr.ErrNotFound for an unknown id.
	GetEvent(ctx context.Context, id string) (Event, error)
	// SaveEvent writes e if the stored version is prevVersion (0: no event
	// with e.ID may exist); e.Version must be prevVersion+1.
	// storeerr.ErrConflict when the condition fails.
	SaveEvent(ctx context.Context, e Event, prevVersion int64) error
	// ListPaymentEvents returns the events of payment psp (their
	// PaymentPSP), oldest first (ReceivedAt, then ID). The list may lag a
	// write briefly.
	ListPaymentEvents(ctx context.Context, psp string) ([]Event, error)
	// ListEvents returns the events in status (EventUnroutable or
	// EventAccount: the listed ones), oldest first (ReceivedAt, then ID),
	// at most limit (<= 0: all). The list may lag a write briefly.
	ListEvents(ctx context.Context, status EventStatus, limit int) ([]Event, error)
	// CommitItem writes what processing one item decided (see ItemCommit).
	// storeerr.ErrConflict when the event's stored version is not the one
	// given or a condition of the payment's write fails. A store may write the parts in one
	// transaction (the embedded store) or as concurrent independent writes
	// (DynamoDB): each part is idempotent, and the event is marked
	// processed only afterwards, so a commit that stopped part way is
	// completed by processing the item again.
	CommitItem(ctx context.Context, c ItemCommit) error
}

// ItemCommit is what processing one notification item writes at once.
type ItemCommit struct {
	// Event is the event as processed (Version PrevEventVersion+1;
	// PrevEventVersion 0: new).
	Event            Event
	PrevEventVersion int64
	// Payment is the write of the payment's ledger (nil: none changed):
	// made with the rest, its own conditions (payments.Write) as much the
	// commit's as the event's version.
	Payment *payments.Write
	// Deliveries are the event's deliveries (Version 1): each is created
	// unless one with its id is stored.
	Deliveries []webhooks.Delivery
	// MerchantEvent is the event as its merchant's history keeps it;
	// storing it again overwrites it with the same content.
	MerchantEvent *MerchantEvent
}

// DedupKey is the identity of a notification item: the upstream sends the
// same item again (same eventCode, pspReference, success and
// originalReference) until it is accepted. A recapture (a CAPTURE after
// its CAPTURE_FAILED, payments.Notification.Recapture) is an item of its
// own beside the first CAPTURE.
func DedupKey(item payments.Notification) string {
	key := item.EventCode + "|" + item.PSPReference + "|" + item.Success + "|" + item.OriginalReference
	if item.Recapture() {
		key += "|recaptured"
	}
	return key
}

// EventID returns the id of the event with key.
func EventID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "evt_" + hex.EncodeToString(sum[:16])
}

// newEvent is the record of an item arriving for the first time.
func newEvent(live string, item payments.Notification, now time.Time) Event {
	key := DedupKey(item)
	return Event{
		ID: EventID(key), Key: key, Live: live, Item: item, PaymentPSP: item.Payment(),
		Status: EventReceived, Received: 1, ReceivedAt: now, UpdatedAt: now, Version: 1,
	}
}

// maxMutateAttempts bounds optimistic-concurrency retries of one update.
const maxMutateAttempts = 16

// errSkip tells mutateEvent that fn decided to change nothing.
var errSkip = errors.New("notifications: no change")

// mutateEvent applies fn to event id and saves it conditionally on its
// version, re-reading and re-applying on a concurrent change.
func mutateEvent(ctx context.Context, st EventStore, id string, fn func(*Event) error) (Event, error) {
	for range maxMutateAttempts {
		e, err := st.GetEvent(ctx, id)
		if err != nil {
			return Event{}, err
		}
		prev := e.Version
		if err := fn(&e); err != nil {
			if errors.Is(err, errSkip) {
				return e, nil
			}
			return e, err
		}
		e.Version = prev + 1
		err = st.SaveEvent(ctx, e, prev)
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, storeerr.ErrConflict) {
			return Event{}, fmt.Errorf("save event %s: %w", id, err)
		}
	}
	return Event{}, fmt.Errorf("save event %s: too many concurrent updates: %w", id, storeerr.ErrConflict)
}
