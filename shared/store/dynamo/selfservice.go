package dynamo

// Merchants' event histories and pages of their webhook deliveries
// (GET /v1/ecom/events, GET /v1/ecom/webhook-deliveries), following doc.go:
//
//	record          pk                              sk
//	merchant event  EVENTLOG#<merchant>#<shard>     <createdAt>#<eventId>
//
// A merchant's history is write-sharded over EventLogShards partitions
// (shard: a hash of the event id), so one merchant's notification traffic
// never concentrates on one partition. A page is one strongly consistent
// Query per shard, newest first (ScanIndexForward false) below the
// cursor's sort key, run in parallel and merged newest first
// (scatter-gather); filters are applied while reading. Delivery pages
// query the gsi1 delivery shards (MERCHANT#<m>#DELIVERIES#<n> /
// DELIVERY#<status>#<createdAt>#<id>) per shard and status below the
// cursor, newest first, and merge the same way.

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
// query's cursor, keeping up to q.Limit events that match it.
func (s *Store) queryEventShard(ctx context.Context, pk string, q notifications.EventQuery) ([]notifications.MerchantEvent, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(min(max(q.Limit, 1)*2, 200))),
	}
	if q.After != nil {
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk < :after")
		in.ExpressionAttributeNames["#sk"] = attrSK
		in.ExpressionAttributeValues[":after"] = str(eventLogSK(sortTime(q.After.CreatedAt), q.After.ID))
	}
	out := []notifications.MerchantEvent{}
	pages := dynamodb.NewQueryPaginator(s.client, in)
	for pages.HasMorePages() && len(out) < q.Limit {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			rec, err := decodeData[records.MerchantEvent](item)
			if err != nil {
				return nil, err
			}
			if e := rec.ToMerchantEvent(); q.Matches(e) && len(out) < q.Limit {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// ListDeliveryPage returns a page of the merchant's deliveries in q.Status
// (every status when ""), newest first, after q.After: one Query per gsi1
// shard and status, merged (listDeliveries).
func (s *Store) ListDeliveryPage(ctx context.Context, merchantID string, q webhooks.DeliveryQuery) ([]webhooks.Delivery, error) {
	ds, err := s.listDeliveries(ctx, merchantID, q.Status, q.After, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list deliveries of %q: %w", merchantID, err)
	}
	return ds, nil
}
