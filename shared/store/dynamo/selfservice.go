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
// merged newest first (readPage, listing.go); filters are applied while
// reading. Delivery pages are listDeliveries (listing.go).

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

// PutMerchantEvent stores e in its merchant's history (an overwrite of the
// same event writes the same item).
func (s *Store) PutMerchantEvent(ctx context.Context, e notifications.MerchantEvent) error {
	shards, err := s.writeShards(ctx, e.MerchantID)
	if err != nil {
		return fmt.Errorf("dynamo: put merchant event %q: %w", e.ID, err)
	}
	item, err := sized(MerchantEventItem(e, shards.Events))
	if err != nil {
		return fmt.Errorf("dynamo: put merchant event %q: %w", e.ID, err)
	}
	return wrapErr(s.putItem(ctx, item), "put merchant event %q of %q", e.ID, e.MerchantID)
}

// ListMerchantEvents returns a page of the merchant's events, newest first:
// its shard count (shards.go), then one strongly consistent Query per
// shard below the cursor with Limit =
// q.Limit, merged (readPage). The filters (pspReference, eventCode) are
// fields inside the record, so they are applied while reading, not as a
// FilterExpression; a page they leave short reads on in the shards that
// have not read past it.
func (s *Store) ListMerchantEvents(ctx context.Context, merchantID string, q notifications.EventQuery) ([]notifications.MerchantEvent, error) {
	shards, err := s.ListingShards(ctx, merchantID)
	if err != nil {
		return nil, fmt.Errorf("dynamo: list events of %q: %w", merchantID, err)
	}
	below := ""
	if q.After != nil {
		below = listingSK(q.After.CreatedAt, q.After.ID)
	}
	l := listing{
		shards: shards.Events,
		query: func(shard int) *dynamodb.QueryInput {
			in := newestBelow(attrPK, attrSK, EventLogShardPartition(merchantID, shard), below)
			in.ConsistentRead = aws.Bool(true)
			return in
		},
		sortKey:     attrSK,
		newestFirst: true,
	}
	if q.PSPReference != "" || q.EventCode != "" {
		l.keep = func(item map[string]types.AttributeValue) (bool, error) {
			rec, err := decodeData[records.MerchantEvent](item)
			return err == nil && q.Matches(rec.ToMerchantEvent()), err
		}
	}
	page, err := s.readPage(ctx, l, max(q.Limit, 1))
	var out []notifications.MerchantEvent
	if err == nil {
		out, err = decodeAll(page, records.MerchantEvent.ToMerchantEvent)
	}
	if err != nil {
		return nil, wrapErr(err, "list events of %q", merchantID)
	}
	return notifications.NewestFirst(out, q.Limit), nil
}

// ListDeliveryPage returns a page of the merchant's deliveries in q.Status
// (every status when ""), newest first, after q.After: one gsi2 Query per
// shard, merged, and the page's items in one BatchGetItem
// (listDeliveries).
func (s *Store) ListDeliveryPage(ctx context.Context, merchantID string, q webhooks.DeliveryQuery) ([]webhooks.Delivery, error) {
	ds, err := s.listDeliveries(ctx, merchantID, q.Status, q.After, q.Limit)
	return ds, wrapErr(err, "list deliveries of %q", merchantID)
}
