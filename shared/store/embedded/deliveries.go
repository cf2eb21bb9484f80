package embedded

import (
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
	return getRecord(ctx, s, bktDeliveries, []byte(id), records.Delivery.ToDelivery, "get delivery %q", id)
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
	err := s.update(ctx, func(tx *bolt.Tx) error { return saveDelivery(tx, d, prevVersion, false) })
	return wrapErr(err, "save delivery %q (version %d)", d.ID, prevVersion)
}

// saveDelivery is SaveDelivery in tx (saveVersioned).
func saveDelivery(tx *bolt.Tx, d webhooks.Delivery, prevVersion int64, ifAbsent bool) error {
	return saveVersioned(tx, bktDeliveries, bktDeliveriesByMerch, d.ID, records.FromDelivery(d), prevVersion, ifAbsent,
		func(r records.Delivery) int64 { return r.Version }, deliveryIndexKey)
}

// saveVersioned puts rec, the stored form of record id of bucket bkt, if
// the stored version is prev (0: none may be stored; with ifAbsent a
// stored one is then no conflict and is left as it is), else
// storeerr.ErrConflict; its entry in index bucket idx (indexKey) moves
// with it.
func saveVersioned[R any](tx *bolt.Tx, bkt, idx, id string, rec R, prev int64, ifAbsent bool,
	version func(R) int64, indexKey func(R) []byte) error {
	b, err := writeBucket(tx, bkt)
	if err != nil {
		return err
	}
	ix, err := writeBucket(tx, idx)
	if err != nil {
		return err
	}
	var stored R
	found, err := getJSON(b, []byte(id), &stored)
	switch {
	case err != nil:
		return err
	case ifAbsent && prev == 0 && found:
		return nil
	case prev == 0 && found, prev != 0 && (!found || version(stored) != prev):
		return storeerr.ErrConflict
	}
	if found {
		if err := ix.Delete(indexKey(stored)); err != nil {
			return err
		}
	}
	if err := ix.Put(indexKey(rec), nil); err != nil {
		return err
	}
	return putJSON(b, []byte(id), rec)
}

// ListDeliveries returns the merchant's deliveries in status (all when
// ""), newest first, at most limit (limit <= 0: all).
func (s *Store) ListDeliveries(ctx context.Context, merchantID string, status webhooks.Status, limit int) ([]webhooks.Delivery, error) {
	return s.deliveries(ctx, merchantID, status, nil, limit)
}

// deliveries returns the merchant's deliveries in status (every status
// when ""), newest first below after (nil: from the newest), at most limit
// (<= 0: all): the per-merchant index read backwards, status by status.
func (s *Store) deliveries(ctx context.Context, merchantID string, status webhooks.Status, after *webhooks.DeliveryCursor, limit int) ([]webhooks.Delivery, error) {
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
			prefix := compositeKey(merchantID, string(st), "")
			var from []byte
			if after != nil {
				from = compositeKey(merchantID, string(st), timeKey(after.CreatedAt), after.ID)
			}
			n := 0
			err := scanBack(idx.Cursor(), prefix, from, func(k, _ []byte) (bool, error) {
				var rec records.Delivery
				if err := mustGet(b, k[len(prefix)+9:], &rec); err != nil { // uvarint(8) + 8-byte time, then the id
					return false, fmt.Errorf("index entry %q: %w", k, err)
				}
				out = append(out, rec.ToDelivery())
				n++
				return limit <= 0 || n < limit, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list deliveries of %q: %w", merchantID, err)
	}
	return webhooks.NewestFirst(out, limit), nil
}

// deliveryIndexKey is a delivery's entry in the per-merchant index.
func deliveryIndexKey(r records.Delivery) []byte {
	return compositeKey(r.MerchantID, r.Status, timeKey(r.CreatedAt), r.ID)
}
