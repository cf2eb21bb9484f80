package idempotency

import (
	"context"
	"time"
)

// Status of an idempotency record.
type Status string

// Statuses.
const (
	StatusInProgress Status = "in_progress"
	StatusCompleted  Status = "completed"
)

// Response is a stored result, replayed byte-for-byte.
type Response struct {
	Status int
	Header map[string]string
	Body   []byte
}

// Record is one claimed Idempotency-Key, scoped to a merchant.
type Record struct {
	Scope       string // merchant id
	Key         string
	Fingerprint string // hash of method, path and canonical body
	Status      Status
	LeaseToken  string
	LeaseUntil  time.Time // an in-progress claim is abandoned after this
	ExpiresAt   time.Time // the record is gone after this (TTL)
	Response    *Response
}

// Store is the port that keeps idempotency records. Each method is one
// atomic, conditional write (one round trip on DynamoDB).
type Store interface {
	// Claim writes rec (Status in_progress) if no record exists for
	// (rec.Scope, rec.Key), or the existing one has expired (ExpiresAt <= now),
	// or it is in progress with an ended lease (LeaseUntil <= now). Otherwise
	// it writes nothing and returns the existing record with storeerr.ErrConflict.
	Claim(ctx context.Context, rec Record, now time.Time) (Record, error)
	// Complete stores resp and marks the record completed until expiresAt,
	// provided the record still holds leaseToken; storeerr.ErrConflict otherwise.
	Complete(ctx context.Context, scope, key, leaseToken string, resp Response, expiresAt time.Time) error
	// Release deletes the record if it still holds leaseToken. Releasing a
	// record that is gone or was re-claimed by another lease is not an error.
	Release(ctx context.Context, scope, key, leaseToken string) error
}
