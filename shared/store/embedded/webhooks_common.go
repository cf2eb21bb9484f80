package embedded

import (
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Buckets of notification events, webhook deliveries and the local
// delivery queue. They are created on first write (Open predates them), so
// readers treat a missing bucket as empty.
const (
	bktEvents            = "notification_events"            // id → notifications.Event
	bktEventsByPayment   = "notification_events_by_payment" // compositeKey(psp, timeKey(receivedAt), id) → ""
	bktDeliveries        = "webhook_deliveries"             // id → webhooks.Delivery
	bktDeliveriesByMerch = "webhook_deliveries_by_merchant" // compositeKey(merchant, status, timeKey(createdAt), id) → ""
	bktQueueJobs         = "queue_jobs"                     // compositeKey(timeKey(due), id) → localqueue.StoredJob (live jobs)
	bktQueueDead         = "queue_dead"                     // id → localqueue.StoredJob (dead letters)
	bktQueueJobIndex     = "queue_job_index"                // id → key in queue_jobs, or deadMarker
	deadMarker           = "\x00dead"
)

// writeBucket returns the named bucket, creating it if needed.
func writeBucket(tx *bolt.Tx, name string) (*bolt.Bucket, error) {
	return tx.CreateBucketIfNotExists([]byte(name))
}

// readBucket returns the named bucket, nil when it was never written
// (Open creates those of bucketNames).
func readBucket(tx *bolt.Tx, name string) *bolt.Bucket { return tx.Bucket([]byte(name)) }

// timeKey encodes t as 8 big-endian bytes of Unix nanoseconds, so keys sort
// by time (instants before 1970 sort first, as 0).
func timeKey(t time.Time) string {
	ns := t.UnixNano()
	if ns < 0 {
		ns = 0
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ns))
	return string(b[:])
}
