package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/store/internal/records"
)

var _ notifications.EventStore = (*Store)(nil)

// GetEvent returns a notification event, or storeerr.ErrNotFound.
func (s *Store) GetEvent(ctx context.Context, id string) (notifications.Event, error) {
	return getRecord(ctx, s, bktEvents, []byte(id), records.Notification.ToEvent, "get event %q", id)
}

// SaveEvent writes e if the stored version is prevVersion (0: no event may
// exist); storeerr.ErrConflict otherwise. e.Version must be prevVersion+1.
func (s *Store) SaveEvent(ctx context.Context, e notifications.Event, prevVersion int64) error {
	switch {
	case e.ID == "":
		return fmt.Errorf("embedded: save event: %w", errEmpty("id"))
	case e.Version != prevVersion+1:
		return fmt.Errorf("embedded: save event %q: version %d must be previous version %d + 1", e.ID, e.Version, prevVersion)
	}
	err := s.update(ctx, func(tx *bolt.Tx) error { return saveEvent(tx, e, prevVersion) })
	return wrapErr(err, "save event %q (version %d)", e.ID, prevVersion)
}

// saveEvent is SaveEvent in tx (saveVersioned).
func saveEvent(tx *bolt.Tx, e notifications.Event, prevVersion int64) error {
	return saveVersioned(tx, bktEvents, bktEventsByPayment, e.ID, records.FromEvent(e), prevVersion, false,
		func(r records.Notification) int64 { return r.Version }, eventIndexKey)
}

// ListPaymentEvents returns the events of payment psp, oldest first.
func (s *Store) ListPaymentEvents(ctx context.Context, psp string) ([]notifications.Event, error) {
	prefix := compositeKey(psp, "")
	byID := func(tx *bolt.Tx) func(k, _ []byte) []byte {
		return func(k, _ []byte) []byte { return readBucket(tx, bktEvents).Get(k[len(prefix)+9:]) } // uvarint(8) + 8-byte time, then the id
	}
	return listRecords(ctx, s, bktEventsByPayment, prefix, byID, records.Notification.ToEvent, "list events of payment %q", psp)
}

// ListEvents returns the events in status, oldest first, at most limit
// (<= 0: all). It reads every event: the listed ones (unroutable,
// account-level) are rare, and the embedded store serves one developer's
// machine.
func (s *Store) ListEvents(ctx context.Context, status notifications.EventStatus, limit int) ([]notifications.Event, error) {
	out := []notifications.Event{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bktEvents)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var rec records.Notification
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("decode event %q: %w", k, err)
			}
			if rec.Status == string(status) {
				out = append(out, rec.ToEvent())
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list %s events: %w", status, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ReceivedAt.Equal(out[j].ReceivedAt) {
			return out[i].ReceivedAt.Before(out[j].ReceivedAt)
		}
		return out[i].ID < out[j].ID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// eventIndexKey is an event's entry in the by-payment index.
func eventIndexKey(r records.Notification) []byte {
	return compositeKey(r.PaymentPSP, timeKey(r.ReceivedAt), r.ID)
}
