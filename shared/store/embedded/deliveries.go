package embedded

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

var _ webhooks.DeliveryStore = (*Store)(nil)

// GetDelivery returns a webhook delivery, or storeerr.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error) {
	var rec records.Delivery
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bktDeliveries)
		if b == nil {
			return storeerr.ErrNotFound
		}
		return mustGet(b, []byte(id), &rec)
	})
	if err != nil {
		return webhooks.Delivery{}, fmt.Errorf("embedded: get delivery %q: %w", id, err)
	}
	return rec.ToDelivery(), nil
}

// SaveDelivery writes d if the stored version is prevVersion (0: no
// delivery may exist); storeerr.ErrConflict otherwise. d.Version must be
// prevVersion+1. The per-merchant index moves with the status.
func (s *Store) SaveDelivery(ctx context.Context, d webhooks.Delivery, prevVersion int64) error {
	switch {
	case d.ID == "":
		return fmt.Errorf("embedded: save delivery: %w", errEmpty("id"))
	case d.MerchantID == "":
		return fmt.Errorf("embedded: save delivery %q: %w", d.ID, errEmpty("merchantId"))
	case d.Version != prevVersion+1:
		return fmt.Errorf("embedded: save delivery %q: version %d must be previous version %d + 1", d.ID, d.Version, prevVersion)
	}
	d = records.FromDelivery(d).ToDelivery() // times in UTC
	err := s.update(ctx, func(tx *bolt.Tx) error {
		_, _, err := saveDelivery(tx, d, prevVersion, false)
		return err
	})
	if err != nil {
		return fmt.Errorf("embedded: save delivery %q (version %d): %w", d.ID, prevVersion, err)
	}
	return nil
}

// saveDelivery is SaveDelivery in tx (d in UTC). With ifAbsent, a stored
// delivery when prevVersion is 0 is no conflict: nothing is written and
// the stored record is returned (found true).
func saveDelivery(tx *bolt.Tx, d webhooks.Delivery, prevVersion int64, ifAbsent bool) (cur webhooks.Delivery, found bool, _ error) {
	b, err := writeBucket(tx, bktDeliveries)
	if err != nil {
		return cur, false, err
	}
	idx, err := writeBucket(tx, bktDeliveriesByMerch)
	if err != nil {
		return cur, false, err
	}
	var stored records.Delivery
	found, err = getJSON(b, []byte(d.ID), &stored)
	if err != nil {
		return cur, found, err
	}
	cur = stored.ToDelivery()
	if ifAbsent && prevVersion == 0 && found {
		return cur, true, nil
	}
	if (prevVersion == 0 && found) || (prevVersion != 0 && (!found || cur.Version != prevVersion)) {
		return cur, found, storeerr.ErrConflict
	}
	if found {
		if err := idx.Delete(deliveryIndexKey(cur)); err != nil {
			return cur, found, err
		}
	}
	if err := idx.Put(deliveryIndexKey(d), nil); err != nil {
		return cur, found, err
	}
	return cur, found, putJSON(b, []byte(d.ID), records.FromDelivery(d))
}

// utcDelivery returns d with every time in UTC, as it is stored.
func utcDelivery(d webhooks.Delivery) webhooks.Delivery { return records.FromDelivery(d).ToDelivery() }

// ListDeliveries returns the merchant's deliveries in status (all when
// ""), newest first, at most limit (limit <= 0: all).
func (s *Store) ListDeliveries(ctx context.Context, merchantID string, status webhooks.Status, limit int) ([]webhooks.Delivery, error) {
	statuses := []webhooks.Status{status}
	if status == "" {
		statuses = webhooks.Statuses
	}
	out := []webhooks.Delivery{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		idx, b := readBucket(tx, bktDeliveriesByMerch), readBucket(tx, bktDeliveries)
		if idx == nil || b == nil {
			return nil
		}
		for _, st := range statuses {
			prefix := indexKey(merchantID, string(st), "")
			c := idx.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				id := k[len(prefix)+9:] // uvarint(8) + 8-byte time, then the id
				var rec records.Delivery
				if err := mustGet(b, id, &rec); err != nil {
					return fmt.Errorf("index entry %q: %w", k, err)
				}
				out = append(out, rec.ToDelivery())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list deliveries of %q: %w", merchantID, err)
	}
	return webhooks.NewestFirst(out, limit), nil
}

// deliveryIndexKey is d's entry in the per-merchant index.
func deliveryIndexKey(d webhooks.Delivery) []byte {
	return indexKey(d.MerchantID, string(d.Status), timeKey(d.CreatedAt), d.ID)
}
