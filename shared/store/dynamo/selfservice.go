package dynamo

// Merchants' event histories and pages of their webhook deliveries
// (GET /v1/ecom/events, GET /v1/ecom/webhook-deliveries), following doc.go:
//
//	record          pk                     sk
//	merchant event  EVENTLOG#<merchant>    <createdAt>#<eventId>
//
// A merchant's history is one partition read newest first by a strongly
// consistent Query (ScanIndexForward false), continuing below the cursor's
// sort key; filters are applied while reading. Delivery pages query each
// of the merchant's delivery shards in gsi1
// (MERCHANT#<m>#DELIVERIES#<shard> / DELIVERY#<status>#<createdAt>#<id>)
// per status below the cursor, newest first, in parallel, and merge.

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/webhooks"
)

var _ notifications.EventLog = (*Store)(nil)

const pfxEventLog = "EVENTLOG#"

// eventLogSK is the sort key of a merchant event (or of a cursor).
func eventLogSK(createdAt string, id string) string { return createdAt + "#" + id }

// PutMerchantEvent stores e in its merchant's history (an overwrite of the
// same event writes the same item).
func (s *Store) PutMerchantEvent(ctx context.Context, e notifications.MerchantEvent) error {
	switch {
	case e.ID == "":
		return fmt.Errorf("dynamo: put merchant event: %w", errEmpty("id"))
	case e.MerchantID == "":
		return fmt.Errorf("dynamo: put merchant event %q: %w", e.ID, errEmpty("merchantId"))
	}
	e.CreatedAt = e.CreatedAt.UTC()
	item, err := dataItem(pfxEventLog+e.MerchantID, eventLogSK(sortTime(e.CreatedAt), e.ID), e)
	if err != nil {
		return fmt.Errorf("dynamo: put merchant event %q: %w", e.ID, err)
	}
	if err := s.putItem(ctx, item); err != nil {
		return fmt.Errorf("dynamo: put merchant event %q of %q: %w", e.ID, e.MerchantID, err)
	}
	return nil
}

// ListMerchantEvents returns a page of the merchant's events, newest first.
func (s *Store) ListMerchantEvents(ctx context.Context, merchantID string, q notifications.EventQuery) ([]notifications.MerchantEvent, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pfxEventLog + merchantID)},
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
			return nil, fmt.Errorf("dynamo: list events of %q: %w", merchantID, err)
		}
		for _, item := range page.Items {
			e, err := decodeData[notifications.MerchantEvent](item)
			if err != nil {
				return nil, fmt.Errorf("dynamo: list events of %q: %w", merchantID, err)
			}
			if q.Matches(e) && len(out) < q.Limit {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// ListDeliveryPage returns a page of the merchant's deliveries in q.Status
// (every status when ""), newest first, after q.After: the scatter-gather
// of ListDeliveries below the cursor.
func (s *Store) ListDeliveryPage(ctx context.Context, merchantID string, q webhooks.DeliveryQuery) ([]webhooks.Delivery, error) {
	out, err := s.newestDeliveries(ctx, merchantID, q.Status, q.After, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list deliveries of %q: %w", merchantID, err)
	}
	return out, nil
}
