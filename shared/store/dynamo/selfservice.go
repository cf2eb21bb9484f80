package dynamo

// Merchants' event histories and pages of their webhook deliveries
// (GET /v1/ecom/events, GET /v1/ecom/webhook-deliveries), following doc.go
// and listing.go:
//
//	record          pk                              sk
//	merchant event  EVENTLOG#<merchant>#<shard>     <createdAt>#<eventId>
//
// A merchant's history is write-sharded over EventLogShards partitions
// (shard: a hash of the event id), so one merchant's notification traffic
// never concentrates on one partition. A page is one strongly consistent
// Query per shard with Limit = the page size, newest first
// (ScanIndexForward false) below the cursor's sort key, in parallel,
// merged newest first; filters are applied while reading. Delivery pages
// are listDeliveries (listing.go).

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/webhooks"
)

const pfxEventLog = "EVENTLOG#"

// eventLogSK is the sort key of a merchant event (or of a cursor).
func eventLogSK(createdAt string, id string) string { return createdAt + "#" + id }

// PutMerchantEvent stores e in its merchant's history (an overwrite of the
// same event writes the same item).
func (s *Store) PutMerchantEvent(ctx context.Context, e notifications.MerchantEvent) error {
	item, err := MerchantEventItem(e, s.eventShards)
	if err == nil {
		err = checkSize(item)
	}
	if err != nil {
		return fmt.Errorf("dynamo: put merchant event %q: %w", e.ID, err)
	}
	if err := s.putItem(ctx, item); err != nil {
		return fmt.Errorf("dynamo: put merchant event %q of %q: %w", e.ID, e.MerchantID, err)
	}
	return nil
}

// ListMerchantEvents returns a page of the merchant's events, newest first:
// up to q.Limit matching events of every shard below the cursor, merged.
func (s *Store) ListMerchantEvents(ctx context.Context, merchantID string, q notifications.EventQuery) ([]notifications.MerchantEvent, error) {
	results := make([][]notifications.MerchantEvent, s.eventShards)
	err := scatter(ctx, s.eventShards, func(ctx context.Context, shard int) error {
		es, err := s.queryEventShard(ctx, EventLogShardPartition(merchantID, shard), q)
		results[shard] = es
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: list events of %q: %w", merchantID, err)
	}
	out := []notifications.MerchantEvent{}
	for _, es := range results {
		out = append(out, es...)
	}
	return notifications.NewestFirst(out, q.Limit), nil
}

// queryEventShard reads one shard of a history newest first below the
// query's cursor, keeping up to q.Limit events that match it: one Query
// with Limit = q.Limit, more only when a filter left it short (queryShard
// reads on with a growing Limit; the filters are on fields inside the
// record, so they are applied here, not as a FilterExpression).
func (s *Store) queryEventShard(ctx context.Context, pk string, q notifications.EventQuery) ([]notifications.MerchantEvent, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}
	if q.After != nil {
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk < :after")
		in.ExpressionAttributeNames["#sk"] = attrSK
		in.ExpressionAttributeValues[":after"] = str(eventLogSK(sortTime(q.After.CreatedAt), q.After.ID))
	}
	limit := max(q.Limit, 1)
	out := []notifications.MerchantEvent{}
	for n := limit; ; n = min(2*n, maxQueryLimit) {
		in.Limit = aws.Int32(int32(min(n, maxQueryLimit)))
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			rec, err := decodeData[records.MerchantEvent](item)
			if err != nil {
				return nil, err
			}
			if e := rec.ToMerchantEvent(); q.Matches(e) && len(out) < limit {
				out = append(out, e)
			}
		}
		if len(page.LastEvaluatedKey) == 0 || len(out) >= limit {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// ListDeliveryPage returns a page of the merchant's deliveries in q.Status
// (every status when ""), newest first, after q.After: one gsi2 Query per
// shard, merged, and the page's items in one BatchGetItem
// (listDeliveries).
func (s *Store) ListDeliveryPage(ctx context.Context, merchantID string, q webhooks.DeliveryQuery) ([]webhooks.Delivery, error) {
	ds, err := s.listDeliveries(ctx, merchantID, q.Status, q.After, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list deliveries of %q: %w", merchantID, err)
	}
	return ds, nil
}
