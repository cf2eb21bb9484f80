package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/queue"
	"github.com/yp/paysvc/shared/queue/localqueue"
	"github.com/yp/paysvc/shared/webhooks"
)

var _ notifications.Outbox = (*Store)(nil)

// CommitItem writes a processed notification item in one transaction (one
// fsync, shared with concurrent writers by group commit): the event and the
// payment record conditionally on their versions, the merchant's history
// entry, each delivery not stored
// yet, and a local-queue job for each delivery that needs one. The jobs
// are due at the event's UpdatedAt; the caller wakes the queue.
func (s *Store) CommitItem(ctx context.Context, c notifications.ItemCommit) error {
	e := c.Event
	switch {
	case e.ID == "":
		return fmt.Errorf("embedded: commit item: %w", errEmpty("event id"))
	case e.Version != c.PrevEventVersion+1:
		return fmt.Errorf("embedded: commit item %q: version %d must be previous version %d + 1", e.ID, e.Version, c.PrevEventVersion)
	case c.Payment != nil && c.Payment.Version != c.PrevPaymentVersion+1:
		return fmt.Errorf("embedded: commit item %q: payment version %d must be previous version %d + 1", e.ID, c.Payment.Version, c.PrevPaymentVersion)
	}
	e = utcEvent(e)
	due := e.UpdatedAt
	// Job ids are random: made once, outside the transaction function (it
	// may run twice under group commit).
	jobs := make([]localqueue.StoredJob, len(c.Deliveries))
	for i, d := range c.Deliveries {
		switch {
		case d.ID == "" || d.MerchantID == "":
			return fmt.Errorf("embedded: commit item %q: delivery without id or merchant", e.ID)
		case d.Version != 1:
			return fmt.Errorf("embedded: commit item %q: new delivery %q must have version 1", e.ID, d.ID)
		}
		j, err := localqueue.NewJob(queue.Job{DeliveryID: d.ID, Attempt: 1}, due, due)
		if err != nil {
			return err
		}
		jobs[i] = j
	}
	now := s.clock.Now()
	var payment encodedPayment
	if c.Payment != nil {
		var err error
		if payment, err = encodePayment(*c.Payment); err != nil {
			return fmt.Errorf("embedded: commit item %q: %w", e.ID, err)
		}
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		if err := saveEvent(tx, e, c.PrevEventVersion); err != nil {
			return err
		}
		if c.Payment != nil {
			if err := payment.save(tx, c.PrevPaymentVersion, now); err != nil {
				return err
			}
		}
		if c.MerchantEvent != nil {
			if err := putMerchantEvent(tx, *c.MerchantEvent); err != nil {
				return err
			}
		}
		for i, d := range c.Deliveries {
			d.Enqueued = true
			cur, found, err := saveDelivery(tx, utcDelivery(d), 0, true)
			switch {
			case err != nil:
				return err
			case found && (cur.Status != webhooks.StatusPending || cur.Enqueued):
				continue // stored before, with its job or ended
			case found: // pending without a job (an earlier, step-by-step processing)
				upd := cur
				upd.Enqueued, upd.UpdatedAt, upd.Version = true, d.UpdatedAt, cur.Version+1
				if _, _, err := saveDelivery(tx, utcDelivery(upd), cur.Version, false); err != nil {
					return err
				}
			}
			if err := putJob(tx, jobs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("embedded: commit item %q (version %d): %w", e.ID, c.PrevEventVersion, err)
	}
	return nil
}
