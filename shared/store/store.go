// Package store holds what the storage adapters (store/dynamo,
// store/embedded) share: how long each kind of record is kept. Their
// contract suite lives in store/storetest; the sentinel errors the ports
// promise in shared/storeerr.
package store

import "time"

// Retention of the records that do not expire by themselves
// (docs/limits.md): how long after the instant named each is deleted —
// by DynamoDB's TTL (the ttl attribute) or by the embedded store's sweep.
// Idempotency records, rate-limit windows and sessions carry their own
// expiry.
const (
	// PaymentRetention: a payment record (and its history), from its creation.
	PaymentRetention = 2 * 365 * 24 * time.Hour
	// EventRetention: a notification event (routed or not), from its first arrival.
	EventRetention = 180 * 24 * time.Hour
	// DeliveryRetention: a webhook delivery, from its creation.
	DeliveryRetention = 180 * 24 * time.Hour
	// DeadJobRetention: a dead letter of the local delivery queue, from
	// its creation (as SQS keeps the dead-letter queue's messages).
	DeadJobRetention = 14 * 24 * time.Hour
)
