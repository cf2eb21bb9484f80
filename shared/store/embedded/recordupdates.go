package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/recordupdates"
)

// Record updates deferred by the local server (package recordupdates)
// live in bktRecordUpdates, id → message body, until they are applied:
// kept in the same file as the records they update, so a crash between
// deferring and applying loses nothing. They are not swept: each is
// removed once it landed.

const bktRecordUpdates = "record_updates" // id → recordupdates message

var _ recordupdates.Store = (*Store)(nil)

// PutRecordUpdate keeps body under id.
func (s *Store) PutRecordUpdate(ctx context.Context, id string, body []byte) error {
	if id == "" {
		return fmt.Errorf("embedded: put record update: %w", errEmpty("id"))
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b, err := writeBucket(tx, bktRecordUpdates)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), body)
	})
	if err != nil {
		return fmt.Errorf("embedded: put record update %q: %w", id, err)
	}
	return nil
}

// DeleteRecordUpdate removes update id.
func (s *Store) DeleteRecordUpdate(ctx context.Context, id string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bktRecordUpdates)
		if b == nil {
			return nil
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("embedded: delete record update %q: %w", id, err)
	}
	return nil
}

// RecordUpdates returns every kept update in id order.
func (s *Store) RecordUpdates(ctx context.Context) ([]recordupdates.Stored, error) {
	out := []recordupdates.Stored{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bktRecordUpdates)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			out = append(out, recordupdates.Stored{ID: string(k), Body: append([]byte(nil), v...)})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: record updates: %w", err)
	}
	return out, nil
}
