package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

var _ notifications.EventStore = (*Store)(nil)

// GetEvent returns a notification event, or storeerr.ErrNotFound.
func (s *Store) GetEvent(ctx context.Context, id string) (notifications.Event, error) {
	var rec records.Notification
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bktEvents)
		if b == nil {
			return storeerr.ErrNotFound
		}
		return mustGet(b, []byte(id), &rec)
	})
	if err != nil {
		return notifications.Event{}, fmt.Errorf("embedded: get event %q: %w", id, err)
	}
	return rec.ToEvent(), nil
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
	e = utcEvent(e)
	err := s.update(ctx, func(tx *bolt.Tx) error { return saveEvent(tx, e, prevVersion) })
	if err != nil {
		return fmt.Errorf("embedded: save event %q (version %d): %w", e.ID, prevVersion, err)
	}
	return nil
}

// saveEvent is SaveEvent in tx (e in UTC).
func saveEvent(tx *bolt.Tx, e notifications.Event, prevVersion int64) error {
	b, err := writeBucket(tx, bktEvents)
	if err != nil {
		return err
	}
	idx, err := writeBucket(tx, bktEventsByPayment)
	if err != nil {
		return err
	}
	var stored records.Notification
	found, err := getJSON(b, []byte(e.ID), &stored)
	if err != nil {
		return err
	}
	cur := stored.ToEvent()
	if (prevVersion == 0 && found) || (prevVersion != 0 && (!found || cur.Version != prevVersion)) {
		return storeerr.ErrConflict
	}
	if found {
		if err := idx.Delete(eventIndexKey(cur)); err != nil {
			return err
		}
	}
	if err := idx.Put(eventIndexKey(e), nil); err != nil {
		return err
	}
	return putJSON(b, []byte(e.ID), records.FromEvent(e))
}

// utcEvent returns e with every time in UTC, as it is stored.
func utcEvent(e notifications.Event) notifications.Event { return records.FromEvent(e).ToEvent() }

// ListPaymentEvents returns the events of payment psp, oldest first.
func (s *Store) ListPaymentEvents(ctx context.Context, psp string) ([]notifications.Event, error) {
	out := []notifications.Event{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		idx, b := readBucket(tx, bktEventsByPayment), readBucket(tx, bktEvents)
		if idx == nil || b == nil {
			return nil
		}
		prefix := indexKey(psp, "")
		c := idx.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			id := k[len(prefix)+9:] // uvarint(8) + 8-byte time, then the id
			var rec records.Notification
			if err := mustGet(b, id, &rec); err != nil {
				return fmt.Errorf("index entry %q: %w", k, err)
			}
			out = append(out, rec.ToEvent())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: list events of payment %q: %w", psp, err)
	}
	return out, nil
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

// eventIndexKey is e's entry in the by-payment index.
func eventIndexKey(e notifications.Event) []byte {
	return indexKey(e.PaymentPSP, timeKey(e.ReceivedAt), e.ID)
}
