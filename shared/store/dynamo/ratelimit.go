package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Key parts of rate-limit items (see doc.go).
const (
	pfxRate  = "RATE#"
	skWindow = "WINDOW"
)

func rateKey(bucket string) map[string]types.AttributeValue { return itemKey(pfxRate+bucket, skWindow) }

// Hit counts one request in bucket if its live count is below limit and
// reports whether it did: one UpdateItem ADD conditional on the count. A
// window that expired (by the store's clock; TTL deletion lags) counts as
// empty and is restarted by a second conditional write. A full window is not
// an error and is not written. Each write names the call (attrWriteToken),
// and the count's condition refuses the call's own token: a write DynamoDB
// applied whose answer was lost, sent again by the SDK, is not counted
// twice but found (the window holds the call's token) and reported counted.
func (s *Store) Hit(ctx context.Context, bucket string, limit int, expiresAt time.Time) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	wrap := func(err error) error { return fmt.Errorf("dynamo: rate-limit hit %q: %w", bucket, err) }
	now := s.clock.Now()
	token := writeToken()
	names := map[string]string{"#c": attrCount, "#exp": attrExpiresN, "#exp_at": attrExpiresAt, "#ttl": attrTTL, "#wt": attrWriteToken}
	values := map[string]types.AttributeValue{
		":one": num(1), ":limit": num(int64(limit)), ":now": instant(now),
		":exp": instant(expiresAt), ":exp_at": rfc3339(expiresAt), ":ttl": ttlOf(expiresAt), ":wt": str(token),
	}
	count := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 rateKey(bucket),
		UpdateExpression:                    aws.String("ADD #c :one SET #exp = :exp, #exp_at = :exp_at, #ttl = :ttl, #wt = :wt"),
		ConditionExpression:                 aws.String("(attribute_not_exists(#c) OR (#c < :limit AND #exp > :now)) AND (attribute_not_exists(#wt) OR #wt <> :wt)"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	restart := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       rateKey(bucket),
		UpdateExpression:          aws.String("SET #c = :one, #exp = :exp, #exp_at = :exp_at, #ttl = :ttl, #wt = :wt"),
		ConditionExpression:       aws.String("#exp <= :now"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: maps.Clone(values),
	}
	delete(restart.ExpressionAttributeValues, ":limit") // unused values are refused
	const attempts = 3
	for range attempts {
		_, err := s.client.UpdateItem(ctx, count)
		if err == nil {
			return true, nil
		}
		old, failed := conditionFailed(err)
		if !failed {
			return false, wrap(err)
		}
		if old, err = s.failedOn(ctx, old, pfxRate+bucket, skWindow); err != nil {
			return false, wrap(err)
		} else if old == nil {
			continue // deleted meanwhile: count again
		}
		if getS(old, attrWriteToken) == token {
			return true, nil // this call's count (or restart) had landed
		}
		oldExpiry, err := getTime(old, attrExpiresAt)
		if err != nil {
			return false, wrap(err)
		}
		if oldExpiry.After(now) {
			return false, nil // a live, full window
		}
		_, err = s.client.UpdateItem(ctx, restart)
		if err == nil {
			return true, nil
		}
		if _, failed := conditionFailed(err); !failed {
			return false, wrap(err)
		}
		// Someone else restarted the window first: count in theirs.
	}
	return false, wrap(errors.New("window kept changing; not counted"))
}
