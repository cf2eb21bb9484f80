package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
)

// Key parts of idempotency items (see doc.go). Each record is its own
// partition, IDEM#<merchant>#<key> / KEY, so one merchant's claims spread
// over the whole table. Merchant ids have no '#', so the key is unambiguous.
const (
	pfxIdem = "IDEM#"
	skIdem  = "KEY"
)

func idemPK(scope, key string) string { return pfxIdem + scope + "#" + key }

func idemKey(scope, key string) map[string]types.AttributeValue {
	return itemKey(idemPK(scope, key), skIdem)
}

// claimCondition accepts a claim over nothing, an expired record, or an
// in-progress record whose lease ended.
const claimCondition = "attribute_not_exists(#pk) OR #exp <= :now OR (#st = :inprogress AND #lease_until <= :now)"

// Claim writes rec as an in-progress record unless a live one exists for
// (rec.Scope, rec.Key): one conditional PutItem. On conflict it returns the
// existing record with storeerr.ErrConflict; a record holding rec's own
// lease token is this claim, applied once already.
func (s *Store) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, error) {
	if rec.Scope == "" || rec.Key == "" {
		return idempotency.Record{}, fmt.Errorf("dynamo: claim idempotency key: %w", errEmpty("scope or key"))
	}
	wrap := func(err error) error {
		return fmt.Errorf("dynamo: claim idempotency key %q of %q: %w", rec.Key, rec.Scope, err)
	}
	rec = records.FromIdempotency(rec).ToIdempotency() // times in UTC
	rec.Status, rec.Response = idempotency.StatusInProgress, nil
	item, err := IdempotencyItem(rec)
	if err != nil {
		return idempotency.Record{}, wrap(err)
	}
	in := &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String(claimCondition),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#exp": attrExpiresN, "#st": attrStatus, "#lease_until": attrLeaseN,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": instant(now), ":inprogress": str(string(idempotency.StatusInProgress)),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	const attempts = 3
	for range attempts {
		_, err := s.client.PutItem(ctx, in)
		if err == nil {
			return rec, nil
		}
		old, failed := conditionFailed(err)
		if !failed {
			return idempotency.Record{}, wrap(err)
		}
		if old, err = s.failedOn(ctx, old, idemPK(rec.Scope, rec.Key), skIdem); err != nil {
			return idempotency.Record{}, wrap(err)
		} else if old == nil {
			continue // released meanwhile: claim again
		}
		existing, err := decodeRecord(old)
		if err != nil {
			return idempotency.Record{}, wrap(err)
		}
		if existing.Status == idempotency.StatusInProgress && existing.LeaseToken == rec.LeaseToken {
			// This claim, applied before: its answer was lost and the SDK
			// sent it again (lease tokens are random per claim).
			return rec, nil
		}
		return existing, wrap(storeerr.ErrConflict)
	}
	return idempotency.Record{}, wrap(fmt.Errorf("%w: record kept changing", storeerr.ErrConflict))
}

// decodeRecord rebuilds a record from an idempotency item.
func decodeRecord(item map[string]types.AttributeValue) (idempotency.Record, error) {
	if err := checkFormat(item); err != nil {
		return idempotency.Record{}, err
	}
	rec := idempotency.Record{
		Scope:       getS(item, attrScope),
		Key:         getS(item, attrKey),
		Fingerprint: getS(item, attrFP),
		Status:      idempotency.Status(getS(item, attrStatus)),
		LeaseToken:  getS(item, attrLease),
	}
	var err error
	if rec.LeaseUntil, err = getTime(item, attrLeaseTill); err != nil {
		return idempotency.Record{}, err
	}
	if rec.ExpiresAt, err = getTime(item, attrExpiresAt); err != nil {
		return idempotency.Record{}, err
	}
	if raw := getS(item, attrResponse); raw != "" {
		var resp records.Response
		if err := json.Unmarshal([]byte(raw), &resp); err != nil {
			return idempotency.Record{}, fmt.Errorf("attribute %s: %w", attrResponse, err)
		}
		rec.Response = resp.ToResponse()
	}
	return rec, nil
}

// Complete stores resp and marks the record completed until expiresAt,
// dropping its lease: one UpdateItem conditional on the lease token;
// storeerr.ErrConflict if the record does not hold leaseToken.
func (s *Store) Complete(ctx context.Context, scope, key, leaseToken string, resp idempotency.Response, expiresAt time.Time) error {
	wrap := func(err error) error {
		return fmt.Errorf("dynamo: complete idempotency key %q of %q: %w", key, scope, err)
	}
	if leaseToken == "" {
		return wrap(storeerr.ErrConflict)
	}
	raw, err := json.Marshal(records.FromResponse(&resp))
	if err != nil {
		return wrap(err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 idemKey(scope, key),
		UpdateExpression:    aws.String("SET #st = :completed, #resp = :resp, #exp_at = :exp_at, #exp = :exp, #ttl = :ttl REMOVE #lease"),
		ConditionExpression: aws.String("#lease = :token"),
		ExpressionAttributeNames: map[string]string{
			"#st": attrStatus, "#resp": attrResponse, "#exp_at": attrExpiresAt, "#exp": attrExpiresN,
			"#ttl": attrTTL, "#lease": attrLease,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":completed": str(string(idempotency.StatusCompleted)), ":resp": str(string(raw)),
			":exp_at": rfc3339(expiresAt), ":exp": instant(expiresAt), ":ttl": ttlOf(expiresAt),
			":token": str(leaseToken),
		},
	})
	if _, failed := conditionFailed(err); failed {
		return wrap(storeerr.ErrConflict)
	}
	if err != nil {
		return wrap(err)
	}
	return nil
}

// Release deletes the record if it holds leaseToken (one conditional
// DeleteItem); otherwise it does nothing.
func (s *Store) Release(ctx context.Context, scope, key, leaseToken string) error {
	if leaseToken == "" {
		return nil
	}
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       idemKey(scope, key),
		ConditionExpression:       aws.String("#lease = :token"),
		ExpressionAttributeNames:  map[string]string{"#lease": attrLease},
		ExpressionAttributeValues: map[string]types.AttributeValue{":token": str(leaseToken)},
	})
	if _, failed := conditionFailed(err); failed || err == nil {
		return nil // released, or not ours (gone, completed or re-claimed)
	}
	return fmt.Errorf("dynamo: release idempotency key %q of %q: %w", key, scope, err)
}
