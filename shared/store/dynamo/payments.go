package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// Key parts of session and payment items (see doc.go).
const (
	pfxSession = "SESSION#"
	pfxPayment = "PAYMENT#"
)

// PutSession writes a session, replacing one with the same id; DynamoDB's
// TTL deletes it some time after it expires.
func (s *Store) PutSession(ctx context.Context, sess payments.Session) error {
	if sess.ID == "" {
		return fmt.Errorf("dynamo: put session: %w", errEmpty("id"))
	}
	rec := records.FromSession(sess)
	item, err := dataItem(pfxSession+sess.ID, skMeta, rec)
	if err == nil {
		item[attrTTL] = ttlOf(rec.ExpiresAt)
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

// GetPayment returns a payment (strongly consistent), or storeerr.ErrNotFound.
func (s *Store) GetPayment(ctx context.Context, pspReference string) (payments.Payment, error) {
	rec, err := getData[records.Payment](ctx, s, pfxPayment+pspReference, skMeta)
	if err != nil {
		return payments.Payment{}, fmt.Errorf("dynamo: get payment %q: %w", pspReference, err)
	}
	return rec.ToPayment(), nil
}

// SavePayment writes p if the stored version is prevVersion (0: no record
// may exist): one PutItem conditional on the version; storeerr.ErrConflict if
// the condition fails. p.Version must be prevVersion+1.
func (s *Store) SavePayment(ctx context.Context, p payments.Payment, prevVersion int64) error {
	switch {
	case p.PSPReference == "":
		return fmt.Errorf("dynamo: save payment: %w", errEmpty("pspReference"))
	case p.Version != prevVersion+1:
		return fmt.Errorf("dynamo: save payment %q: version %d must be previous version %d + 1", p.PSPReference, p.Version, prevVersion)
	}
	item, err := dataItem(pfxPayment+p.PSPReference, skMeta, records.FromPayment(p))
	if err != nil {
		return fmt.Errorf("dynamo: save payment %q: %w", p.PSPReference, err)
	}
	item[attrVersion] = num(p.Version)
	in := &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if prevVersion != 0 {
		in.ConditionExpression = aws.String("#version = :prev")
		in.ExpressionAttributeNames = map[string]string{"#version": attrVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(prevVersion)}
	}
	_, err = s.client.PutItem(ctx, in)
	if _, failed := conditionFailed(err); failed {
		err = storeerr.ErrConflict
	}
	if err != nil {
		return fmt.Errorf("dynamo: save payment %q (version %d): %w", p.PSPReference, prevVersion, err)
	}
	return nil
}
