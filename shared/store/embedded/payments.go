package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// PutSession writes a session, replacing one with the same id.
func (s *Store) PutSession(ctx context.Context, sess payments.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("embedded: put session: %w", errEmpty("id"))
	}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		return putJSON(bucket(tx, bktSessions), []byte(sess.ID), records.FromSession(sess))
	})
	if err != nil {
		return fmt.Errorf("embedded: put session %q: %w", sess.ID, err)
	}
	return nil
}

// GetSession returns a session, or storeerr.ErrNotFound if it is unknown or
// expired by the store's clock.
func (s *Store) GetSession(ctx context.Context, id string) (payments.Session, error) {
	var rec records.Session
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return mustGet(bucket(tx, bktSessions), []byte(id), &rec)
	})
	sess := rec.ToSession()
	if err == nil && !sess.ExpiresAt.After(s.clock.Now()) {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Session{}, fmt.Errorf("embedded: get session %q: %w", id, err)
	}
	return sess, nil
}

// GetPayment returns a payment, or storeerr.ErrNotFound (also once it is
// past its retention, before a sweep deletes it).
func (s *Store) GetPayment(ctx context.Context, pspReference string) (payments.Payment, error) {
	var rec records.Payment
	err := ctx.Err()
	if err == nil {
		err = s.storedPayment([]byte(pspReference), func(raw []byte) error {
			if raw == nil {
				return storeerr.ErrNotFound
			}
			return json.Unmarshal(raw, &rec)
		})
	}
	if err == nil && paymentExpired(rec.CreatedAt, s.clock.Now()) {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Payment{}, fmt.Errorf("embedded: get payment %q: %w", pspReference, err)
	}
	return rec.ToPayment(), nil
}

// SavePayment writes p if the stored version is prevVersion (0: no record
// may exist); storeerr.ErrConflict otherwise. p.Version must be prevVersion+1.
func (s *Store) SavePayment(ctx context.Context, p payments.Payment, prevVersion int64) error {
	switch {
	case p.PSPReference == "":
		return fmt.Errorf("embedded: save payment: %w", errEmpty("pspReference"))
	case p.Version != prevVersion+1:
		return fmt.Errorf("embedded: save payment %q: version %d must be previous version %d + 1", p.PSPReference, p.Version, prevVersion)
	}
	rec, err := encodePayment(p)
	if err == nil {
		err = s.savePayment(ctx, rec, prevVersion)
	}
	if err != nil {
		return fmt.Errorf("embedded: save payment %q (version %d): %w", p.PSPReference, prevVersion, err)
	}
	return nil
}

// encodedPayment is a payment record encoded before its write transaction:
// the commit, which every writer waits for, runs only the version check and
// the put.
type encodedPayment struct {
	key, raw []byte
}

func encodePayment(p payments.Payment) (encodedPayment, error) {
	raw, err := json.Marshal(records.FromPayment(p))
	if err != nil {
		return encodedPayment{}, fmt.Errorf("encode payment %q: %w", p.PSPReference, err)
	}
	return encodedPayment{key: []byte(p.PSPReference), raw: raw}, nil
}

// savePayment writes rec if the stored version is prevVersion: in the
// request's write group if ctx has one; otherwise a save that commits
// alone goes to the payment journal (one fdatasync instead of a bbolt
// commit's two, journal.go).
func (s *Store) savePayment(ctx context.Context, rec encodedPayment, prevVersion int64) error {
	return s.updateOr(ctx, func(tx *bolt.Tx) error { return rec.save(tx, prevVersion, s.clock.Now()) },
		func() (bool, error) { return s.journalPayment(rec, prevVersion) })
}

// storedPayment calls fn with the newest stored bytes of payment key (nil:
// none): the journal's pending record if there is one, else the file's
// (valid only during fn).
func (s *Store) storedPayment(key []byte, fn func(raw []byte) error) error {
	if raw, ok := s.journal.get(key); ok {
		return fn(raw)
	}
	return s.db.View(func(tx *bolt.Tx) error { return fn(bucket(tx, bktPayments).Get(key)) })
}

// journalPayment is savePayment through the journal, run by the
// committer's leader; handled false: the bbolt commit takes the save.
func (s *Store) journalPayment(rec encodedPayment, prevVersion int64) (handled bool, err error) {
	if !s.journal.usable() {
		return false, nil
	}
	now := s.clock.Now()
	if err := s.storedPayment(rec.key, func(cur []byte) error { return rec.check(cur, prevVersion, now) }); err != nil {
		return true, err
	}
	if err := s.journal.append(rec.key, rec.raw); errors.Is(err, errJournalFull) {
		return false, nil
	} else if err != nil {
		return true, err
	}
	return true, nil
}

// save is SavePayment in tx, at now (a record past its retention counts
// as absent).
func (e encodedPayment) save(tx *bolt.Tx, prevVersion int64, now time.Time) error {
	b := bucket(tx, bktPayments)
	if err := e.check(b.Get(e.key), prevVersion, now); err != nil {
		return err
	}
	return b.Put(e.key, e.raw)
}

// check returns storeerr.ErrConflict unless the stored record cur (nil:
// none) is at prevVersion (0: none, or one past its retention at now).
func (e encodedPayment) check(cur []byte, prevVersion int64, now time.Time) error {
	found := cur != nil
	head, err := decodeHead(e.key, cur)
	if err != nil {
		return err
	}
	if found && prevVersion == 0 && paymentExpired(head.CreatedAt, now) {
		found = false // past its retention: a new record may take its place
	}
	if (prevVersion == 0 && found) || (prevVersion != 0 && (!found || head.Version != prevVersion)) {
		return storeerr.ErrConflict
	}
	return nil
}

// paymentHead is what a version check reads of a stored record.
type paymentHead struct {
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
}

// decodeHead decodes the head of key's encoded record raw (nil: the zero
// head, version 0).
func decodeHead(key, raw []byte) (paymentHead, error) {
	var head paymentHead
	if raw == nil {
		return head, nil
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return head, fmt.Errorf("decode payment %q: %w", key, err)
	}
	return head, nil
}

// paymentExpired reports whether a record created at created is past its
// retention at now.
func paymentExpired(created, now time.Time) bool { return !paymentExpiry(created).After(now) }

// paymentExpiry is when the retention of a record created at created ends
// (never for a record without CreatedAt).
func paymentExpiry(created time.Time) time.Time {
	if created.IsZero() {
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return created.Add(store.PaymentRetention)
}
