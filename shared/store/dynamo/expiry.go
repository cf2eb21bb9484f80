package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/storeerr"
)

// purgeExpired deletes payment psp when it is past its retention but its
// HEAD is still stored (DynamoDB's TTL deletes items some time after they
// expire), so that a new payment under the same pspReference starts
// clean: its entries and facts, then its HEAD, conditional on being the
// one read. No write lands on an expired head (condLive), so the entries
// and facts listed are all there are. again is false when there is no
// expired head.
func (s *Store) purgeExpired(ctx context.Context, psp string) (again bool, _ error) {
	pk := pfxPayment + psp
	it, err := s.getItem(ctx, pk, skHead)
	if errors.Is(err, storeerr.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	h, err := decodeHeadItem(it)
	if err != nil {
		return false, err
	}
	if h.CreatedAt.IsZero() || h.CreatedAt.Add(store.PaymentRetention).After(s.clock.Now()) {
		return false, nil // live: a conflict
	}
	if err := s.deleteItems(ctx, pk, skEntry, skFact); err != nil {
		return false, fmt.Errorf("delete expired payment: %w", err)
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: itemKey(pk, skHead),
		ConditionExpression:      aws.String("#v = :v AND #wt = :wt"),
		ExpressionAttributeNames: map[string]string{"#v": attrVersion, "#wt": attrWriteToken},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": num(getN(it, attrVersion)),
			":wt": str(getS(it, attrWriteToken))}})
	if _, failed := conditionFailed(err); failed {
		return true, nil // deleted (and maybe created again) meanwhile: the write is tried again either way
	}
	if err != nil {
		return false, fmt.Errorf("delete expired payment: %w", err)
	}
	return true, nil
}

// deleteItems deletes the items of partition pk whose sort keys start
// with one of prefixes.
func (s *Store) deleteItems(ctx context.Context, pk string, prefixes ...string) error {
	for _, prefix := range prefixes {
		in := partitionQuery(pk, prefix)
		in.TableName, in.ProjectionExpression = aws.String(s.table), aws.String("#pk, #sk")
		pages := dynamodb.NewQueryPaginator(s.client, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, it := range page.Items {
				_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table),
					Key: itemKey(pk, getS(it, attrSK))})
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}
