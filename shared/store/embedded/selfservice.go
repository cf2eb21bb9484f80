package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/webhooks"
)

// bktMerchantEvents keeps merchants' event histories:
// compositeKey(merchant, timeKey(createdAt), id) → records.MerchantEvent; the
// sweep deletes an entry store.EventRetention after its creation.
const bktMerchantEvents = "merchant_events"

// PutMerchantEvent stores e in its merchant's history.
func (s *Store) PutMerchantEvent(ctx context.Context, e notifications.MerchantEvent) error {
	switch {
	case e.ID == "":
		return fmt.Errorf("embedded: put merchant event: %w", errEmpty("id"))
	case e.MerchantID == "":
		return fmt.Errorf("embedded: put merchant event %q: %w", e.ID, errEmpty("merchantId"))
	}
	err := s.update(ctx, func(tx *bolt.Tx) error { return putMerchantEvent(tx, e) })
	return wrapErr(err, "put merchant event %q of %q", e.ID, e.MerchantID)
}

// putMerchantEvent is PutMerchantEvent in tx: e in its stored form.
func putMerchantEvent(tx *bolt.Tx, e notifications.MerchantEvent) error {
	rec := records.FromMerchantEvent(e)
	b, err := writeBucket(tx, bktMerchantEvents)
	if err != nil {
		return err
	}
	return putJSON(b, merchantEventKey(rec), rec)
}

// merchantEventKey is the key of a stored merchant event.
func merchantEventKey(r records.MerchantEvent) []byte {
	return compositeKey(r.MerchantID, timeKey(r.CreatedAt), r.ID)
}

// ListMerchantEvents returns a page of the merchant's events, newest first.
func (s *Store) ListMerchantEvents(ctx context.Context, merchantID string, q notifications.EventQuery) ([]notifications.MerchantEvent, error) {
	out := []notifications.MerchantEvent{}
	prefix := compositeKey(merchantID, "")
	var from []byte
	if q.After != nil {
		from = compositeKey(merchantID, timeKey(q.After.CreatedAt), q.After.ID)
	}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bktMerchantEvents)
		if b == nil {
			return nil
		}
		return scanBack(b.Cursor(), prefix, from, func(_, v []byte) (bool, error) {
			var rec records.MerchantEvent
			if err := json.Unmarshal(v, &rec); err != nil {
				return false, err
			}
			if e := rec.ToMerchantEvent(); q.Matches(e) {
				out = append(out, e)
			}
			return len(out) < q.Limit, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list events of %q: %w", merchantID, err)
	}
	return out, nil
}

// ListDeliveryPage returns a page of the merchant's deliveries in q.Status
// (every status when ""), newest first, after q.After.
func (s *Store) ListDeliveryPage(ctx context.Context, merchantID string, q webhooks.DeliveryQuery) ([]webhooks.Delivery, error) {
	return s.deliveries(ctx, merchantID, q.Status, q.After, q.Limit)
}

// scanBack visits the keys starting with prefix in descending order, from
// the last one below from (nil: the last one of the prefix), while fn
// returns true.
func scanBack(c *bolt.Cursor, prefix, from []byte, fn func(k, v []byte) (bool, error)) error {
	if from == nil {
		from = append(bytes.Clone(prefix), 0xff)
	}
	k, v := c.Seek(from)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}
