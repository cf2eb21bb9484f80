package embedded

import (
	"context"
	"encoding/json"
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
	err := s.view(ctx, func(tx *bolt.Tx) error {
		return mustGet(bucket(tx, bktPayments), []byte(pspReference), &rec)
	})
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
		err = s.update(ctx, func(tx *bolt.Tx) error { return rec.save(tx, prevVersion, s.clock.Now()) })
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

// save is SavePayment in tx, at now (a record past its retention counts
// as absent).
func (e encodedPayment) save(tx *bolt.Tx, prevVersion int64, now time.Time) error {
	b := bucket(tx, bktPayments)
	// Of the stored record only what the check needs.
	var cur struct {
		Version   int64     `json:"version"`
		CreatedAt time.Time `json:"createdAt"`
	}
	found, err := getJSON(b, e.key, &cur)
	if err != nil {
		return err
	}
	if found && prevVersion == 0 && paymentExpired(cur.CreatedAt, now) {
		found = false // past its retention: a new record may take its place
	}
	if (prevVersion == 0 && found) || (prevVersion != 0 && (!found || cur.Version != prevVersion)) {
		return storeerr.ErrConflict
	}
	return b.Put(e.key, e.raw)
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
