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
	if err != nil {
		return fmt.Errorf("dynamo: put session %q: %w", sess.ID, err)
	}
	return nil
}

// GetSession returns a session, or storeerr.ErrNotFound if it is unknown or
// expired by the store's clock.
func (s *Store) GetSession(ctx context.Context, id string) (payments.Session, error) {
	rec, err := getData[records.Session](ctx, s, pfxSession+id, skMeta)
	sess := rec.ToSession()
	if err == nil && !sess.ExpiresAt.After(s.clock.Now()) {
		err = storeerr.ErrNotFound
	}
	if err != nil {
		return payments.Session{}, fmt.Errorf("dynamo: get session %q: %w", id, err)
	}
	return sess, nil
}
