package dynamo

import (
	"context"
	"fmt"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// pfxSession starts a session's partition key (see doc.go).
const pfxSession = "SESSION#"

// PutSession writes a session, replacing one with the same id; DynamoDB's
// TTL deletes it some time after it expires.
func (s *Store) PutSession(ctx context.Context, sess payments.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("dynamo: put session: %w", errEmpty("id"))
	}
	item, err := SessionItem(sess)
	if err == nil {
		err = s.putItem(ctx, item)
	}
	return wrapErr(err, "put session %q", sess.ID)
}

// GetSession returns a session, or storeerr.ErrNotFound if it is unknown or
// expired by the store's clock.
func (s *Store) GetSession(ctx context.Context, id string) (payments.Session, error) {
	sess, err := getRecord(ctx, s, pfxSession+id, skMeta, records.Session.ToSession, "get session %q", id)
	if err == nil && !sess.ExpiresAt.After(s.clock.Now()) {
		return payments.Session{}, wrapErr(storeerr.ErrNotFound, "get session %q", id)
	}
	return sess, err
}
