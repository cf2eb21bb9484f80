// Package webhooks delivers notifications to merchants (docs/webhooks.md): the
// delivery records and their store port, the payload sent, Standard
// Webhooks signing, the HTTP sender with its SSRF guard, the retry
// schedule, the dispatcher that runs one attempt per queue job (and its SQS
// Lambda handler), and the operator functions that list and redrive
// deliveries.
package webhooks

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/yp/paysvc/shared/storeerr"
)

// Status of a delivery.
type Status string

// Delivery statuses.
const (
	// StatusPending: attempts are still being made.
	StatusPending Status = "pending"
	// StatusDelivered: the receiver answered 2xx.
	StatusDelivered Status = "delivered"
	// StatusFailed: every attempt failed; the job is in the dead-letter queue.
	StatusFailed Status = "failed"
	// StatusDisabled: not delivered because the subscription is disabled or
	// gone (410 Gone disables it).
	StatusDisabled Status = "disabled"
)

// Statuses lists every status, in the order lists report them.
var Statuses = []Status{StatusPending, StatusFailed, StatusDisabled, StatusDelivered}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, x := range Statuses {
		if s == x {
			return true
		}
	}
	return false
}

// Delivery is one notification item on its way to one subscription. Its ID
// is the X-Webhook-Id, the same on every attempt.
type Delivery struct {
	ID             string `json:"id"`
	MerchantID     string `json:"merchantId"`
	SubscriptionID string `json:"subscriptionId"`
	EventID        string `json:"eventId"`
	EventCode      string `json:"eventCode"`
	PSPReference   string `json:"pspReference"`
	// Payload is the exact request body sent on every attempt.
	Payload json.RawMessage `json:"payload"`
	Status  Status          `json:"status"`
	// Enqueued is true once a job for this delivery is in the queue.
	Enqueued bool `json:"enqueued"`
	// Attempts counts the attempts made since creation or the last redrive.
	Attempts       int        `json:"attempts"`
	LastStatusCode int        `json:"lastStatusCode,omitempty"` // HTTP status of the last attempt (0: none)
	LastError      string     `json:"lastError,omitempty"`      // why the last attempt failed
	LastAttemptAt  *time.Time `json:"lastAttemptAt,omitempty"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt,omitempty"`
	DeliveredAt    *time.Time `json:"deliveredAt,omitempty"`
	Redrives       int        `json:"redrives,omitempty"`
	// History is the delivery's last MaxHistory attempts, oldest first,
	// each written with its result (docs/webhooks.md).
	History   []AttemptRecord `json:"history,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Version   int64           `json:"version"`
}

// MaxHistory is how many attempts a delivery keeps (its latest).
const MaxHistory = 10

// MaxBodyPrefix is how much of a receiver's answer an attempt keeps, in bytes.
const MaxBodyPrefix = 2048

// AttemptRecord is one attempt as its delivery keeps it. Its headers are
// sender.Headers of the delivery's id, Number, At and Signature (the
// signature is not a secret; the key is never kept).
type AttemptRecord struct {
	Number     int       `json:"number"`
	At         time.Time `json:"at"`
	Signature  string    `json:"signature,omitempty"`
	StatusCode int       `json:"statusCode,omitempty"` // 0: no answer came
	// Body is the first MaxBodyPrefix bytes of the answer (invalid UTF-8
	// replaced); Truncated says the answer was longer.
	Body       string `json:"body,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Error      string `json:"error,omitempty"` // Result.Describe
	DurationMS int64  `json:"durationMs,omitempty"`
}

// DeliveryStore is the port that keeps delivery records.
type DeliveryStore interface {
	// GetDelivery returns storeerr.ErrNotFound for an unknown id.
	GetDelivery(ctx context.Context, id string) (Delivery, error)
	// SaveDelivery writes d if the stored record's version is prevVersion
	// (prevVersion 0: no record with d.ID may exist). d.Version must be
	// prevVersion+1. storeerr.ErrConflict when the condition fails.
	SaveDelivery(ctx context.Context, d Delivery, prevVersion int64) error
	// ListDeliveries returns the merchant's deliveries in status (every
	// status when status is ""), newest first (CreatedAt, then ID), at most
	// limit of them (limit <= 0: all). The list may lag a write briefly.
	ListDeliveries(ctx context.Context, merchantID string, status Status, limit int) ([]Delivery, error)
}

// DeliveryID returns the stable id of the delivery of event eventID to
// subscription subID: "msg_" and 26 base32 characters of a SHA-256, so the
// same notification routed again (the upstream's retry) finds the same
// delivery.
func DeliveryID(eventID, subID string) string {
	sum := sha256.Sum256([]byte(eventID + "\x00" + subID))
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
	return "msg_" + strings.ToLower(enc[:26])
}

// maxMutateAttempts bounds optimistic-concurrency retries of one update.
const maxMutateAttempts = 16

// errSkip tells MutateDelivery that fn decided to change nothing.
var errSkip = errors.New("webhooks: no change")

// MutateDelivery applies fn to delivery id and saves it conditionally on
// its version, re-reading and re-applying on a concurrent change. fn
// returning errSkip saves nothing and returns the current record.
func MutateDelivery(ctx context.Context, st DeliveryStore, id string, fn func(*Delivery) error) (Delivery, error) {
	return mutateDelivery(ctx, st, id, nil, fn)
}

// mutateFrom is MutateDelivery whose first attempt starts from start, the
// delivery as the caller last read or saved it, instead of reading it.
func mutateFrom(ctx context.Context, st DeliveryStore, start Delivery, fn func(*Delivery) error) (Delivery, error) {
	return mutateDelivery(ctx, st, start.ID, &start, fn)
}

func mutateDelivery(ctx context.Context, st DeliveryStore, id string, start *Delivery, fn func(*Delivery) error) (Delivery, error) {
	for range maxMutateAttempts {
		var d Delivery
		var err error
		if start != nil {
			d, start = *start, nil
		} else if d, err = st.GetDelivery(ctx, id); err != nil {
			return Delivery{}, err
		}
		prev := d.Version
		if err := fn(&d); err != nil {
			if errors.Is(err, errSkip) {
				return d, nil
			}
			return d, err
		}
		d.Version = prev + 1
		err = st.SaveDelivery(ctx, d, prev)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, storeerr.ErrConflict) {
			return Delivery{}, fmt.Errorf("save delivery %s: %w", id, err)
		}
	}
	return Delivery{}, fmt.Errorf("save delivery %s: too many concurrent updates: %w", id, storeerr.ErrConflict)
}

// CreateDelivery stores d (a new delivery, Version 1) unless a delivery with
// its id exists, and returns the stored record either way; created reports
// which.
func CreateDelivery(ctx context.Context, st DeliveryStore, d Delivery) (stored Delivery, created bool, err error) {
	d.Version = 1
	err = st.SaveDelivery(ctx, d, 0)
	if err == nil {
		return d, true, nil
	}
	if !errors.Is(err, storeerr.ErrConflict) {
		return Delivery{}, false, err
	}
	stored, err = st.GetDelivery(ctx, d.ID)
	return stored, false, err
}
