package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/notifications"
)

// CommitItem writes a processed notification item in one transaction: the
// event and the payment record conditionally on their versions, the
// merchant's history entry, and each delivery not stored yet.
func (s *Store) CommitItem(ctx context.Context, c notifications.ItemCommit) error {
	e := c.Event
	switch {
	case e.ID == "":
		return fmt.Errorf("embedded: commit item: %w", errEmpty("event id"))
	case e.Version != c.PrevEventVersion+1:
		return fmt.Errorf("embedded: commit item %q: version %d must be previous version %d + 1", e.ID, e.Version, c.PrevEventVersion)
	}
	for _, d := range c.Deliveries {
		switch {
		case d.ID == "" || d.MerchantID == "":
			return fmt.Errorf("embedded: commit item %q: delivery without id or merchant", e.ID)
		case d.Version != 1:
			return fmt.Errorf("embedded: commit item %q: new delivery %q must have version 1", e.ID, d.ID)
		}
	}
	now := s.clock.Now()
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if err := saveEvent(tx, e, c.PrevEventVersion); err != nil {
			return err
		}
		if c.Payment != nil {
			if err := writeLedger(tx, *c.Payment, now); err != nil {
				return err
			}
		}
		if c.MerchantEvent != nil {
			if err := putMerchantEvent(tx, *c.MerchantEvent); err != nil {
				return err
			}
		}
		for _, d := range c.Deliveries {
			if err := saveDelivery(tx, d, 0, true); err != nil {
				return err
			}
		}
		return nil
	})
	return wrapErr(err, "commit item %q (version %d)", e.ID, c.PrevEventVersion)
}
