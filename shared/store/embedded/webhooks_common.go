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
	bktEventsByPayment   = "notification_events_by_payment" // indexKey(psp, timeKey(receivedAt), id) → ""
	bktDeliveries        = "webhook_deliveries"             // id → webhooks.Delivery
	bktDeliveriesByMerch = "webhook_deliveries_by_merchant" // indexKey(merchant, status, timeKey(createdAt), id) → ""
	bktQueueJobs         = "queue_jobs"                     // indexKey(timeKey(due), id) → localqueue.StoredJob (live jobs)
	bktQueueDead         = "queue_dead"                     // id → localqueue.StoredJob (dead letters)
	bktQueueJobIndex     = "queue_job_index"                // id → key in queue_jobs, or deadMarker
	deadMarker           = "\x00dead"
)

// writeBucket returns the named bucket, creating it if needed.
func writeBucket(tx *bolt.Tx, name string) (*bolt.Bucket, error) {
	return tx.CreateBucketIfNotExists([]byte(name))
}

// readBucket returns the named bucket or nil when it was never written.
func readBucket(tx *bolt.Tx, name string) *bolt.Bucket { return tx.Bucket([]byte(name)) }

// indexKey joins parts so that distinct tuples never collide and keys
// sharing leading parts are contiguous and ordered by the following parts:
// every part but the last is prefixed by its uvarint length.
func indexKey(parts ...string) []byte {
	var out []byte
	for i, p := range parts {
		if i < len(parts)-1 {
			out = binary.AppendUvarint(out, uint64(len(p)))
		}
		out = append(out, p...)
	}
	return out
}

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
