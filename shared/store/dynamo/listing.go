package dynamo

// Listings of a merchant's items, newest first, read page by page
// (docs/scale.md, "Listings"). Every listing is write-sharded over a small
// number of partitions sized by the capacity model, each time-ordered by
// <createdAt>#<id> (fixed-width UTC, so strings sort as times):
//
//	listing                      partition                                sort key            shards
//	a merchant's deliveries      gsi2 MERCHANT#<m>#DELIVERIES#<n>         <createdAt>#<id>    DeliveryShards
//	a merchant's event history   table EVENTLOG#<m>#<n>                   <createdAt>#<id>    EventLogShards
//	unroutable events            table UNROUTABLE#EVENT#<n>               <receivedAt>#<id>   UnroutableShards
//
// A page queries every shard once, in parallel, with Limit = the page
// size (the caller asks for one more than it shows, to know whether there
// is a next page) below the cursor's sort key, merges the shards' items by
// sort key and keeps the page size: a page is never more than the shard
// count of Queries, plus for deliveries the BatchGetItem of the page's
// items (gsi2 projects keys and the status only, not the record). A status
// filter is a FilterExpression on the projected st: a shard whose first
// Query leaves it short of the page (a rare status) is read on with a
// growing Limit until it fills its share of the page or ends. Every shard
// contributes what it read below the cursor in order, so the merged page
// is exactly the newest matching items below the cursor.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/webhooks"
)

// listingSK is the sort key of an item in a time-ordered listing, and of a
// cursor position in it.
func listingSK(t time.Time, id string) string { return sortTime(t) + "#" + id }

// maxQueryLimit bounds the Limit of one Query of a listing shard.
const maxQueryLimit = 1000

// batchGetMax is BatchGetItem's limit of keys per call.
const batchGetMax = 100

// queryShard reads one shard of a listing in the order in sets, keeping up
// to limit items (limit <= 0: all): one Query with Limit = limit, more
// only when a filter left it short and the shard goes on (each next
// Limit twice the last, at most maxQueryLimit).
func (s *Store) queryShard(ctx context.Context, in *dynamodb.QueryInput, limit int) ([]map[string]types.AttributeValue, error) {
	in.TableName = aws.String(s.table)
	n := limit
	var out []map[string]types.AttributeValue
	for {
		if limit > 0 {
			in.Limit = aws.Int32(int32(min(n, maxQueryLimit)))
		}
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 || (limit > 0 && len(out) >= limit) {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
		n = min(2*n, maxQueryLimit)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// mergeShards merges the shards' items by the sort key attribute sk
// (descending when newestFirst) and keeps the first limit (<= 0: all).
func mergeShards(shards [][]map[string]types.AttributeValue, sk string, newestFirst bool, limit int) []map[string]types.AttributeValue {
	var all []map[string]types.AttributeValue
	for _, its := range shards {
		all = append(all, its...)
	}
	slices.SortFunc(all, func(a, b map[string]types.AttributeValue) int {
		c := strings.Compare(getS(a, sk), getS(b, sk))
		if newestFirst {
			return -c
		}
		return c
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all
}

// listDeliveries reads a page of the merchant's deliveries in status (""
// every status), newest first below after (nil: from the newest), at most
// limit (<= 0: all): one gsi2 Query per shard in parallel (see the top of
// this file), merged, then one strongly consistent BatchGetItem of the
// page (one per 100 deliveries). A delivery whose status moved since gsi2
// saw it, or that expired, is left out.
func (s *Store) listDeliveries(ctx context.Context, merchantID string, status webhooks.Status, after *webhooks.DeliveryCursor, limit int) ([]webhooks.Delivery, error) {
	shards := make([][]map[string]types.AttributeValue, s.shards)
	err := scatter(ctx, s.shards, func(ctx context.Context, shard int) error {
		in := &dynamodb.QueryInput{
			IndexName:                 aws.String(indexGSI2),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrGSI2PK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(DeliveryShardPartition(merchantID, shard))},
			ScanIndexForward:          aws.Bool(false),
		}
		if after != nil {
			in.KeyConditionExpression = aws.String("#pk = :pk AND #sk < :after")
			in.ExpressionAttributeNames["#sk"] = attrGSI2SK
			in.ExpressionAttributeValues[":after"] = str(listingSK(after.CreatedAt, after.ID))
		}
		if status != "" {
			in.FilterExpression = aws.String("#st = :st")
			in.ExpressionAttributeNames["#st"] = attrStatus
			in.ExpressionAttributeValues[":st"] = str(string(status))
		}
		its, err := s.queryShard(ctx, in, limit)
		shards[shard] = its
		return err
	})
	if err != nil {
		return nil, err
	}
	page := mergeShards(shards, attrGSI2SK, true, limit)
	items, err := s.batchGet(ctx, page)
	if err != nil {
		return nil, err
	}
	out := make([]webhooks.Delivery, 0, len(page))
	for _, entry := range page {
		it, ok := items[getS(entry, attrPK)]
		if !ok {
			continue // expired since it was indexed
		}
		rec, err := decodeData[records.Delivery](it)
		if err != nil {
			return nil, err
		}
		if d := rec.ToDelivery(); status == "" || d.Status == status {
			out = append(out, d)
		}
	}
	return webhooks.NewestFirst(out, limit), nil
}

// batchGet reads the table items of index entries (strongly consistent),
// by partition key: one BatchGetItem per 100 keys, in parallel, each sent
// again for its unprocessed keys.
func (s *Store) batchGet(ctx context.Context, entries []map[string]types.AttributeValue) (map[string]map[string]types.AttributeValue, error) {
	var chunks [][]map[string]types.AttributeValue
	for i := 0; i < len(entries); i += batchGetMax {
		keys := make([]map[string]types.AttributeValue, 0, batchGetMax)
		for _, e := range entries[i:min(i+batchGetMax, len(entries))] {
			keys = append(keys, map[string]types.AttributeValue{attrPK: e[attrPK], attrSK: e[attrSK]})
		}
		chunks = append(chunks, keys)
	}
	out := map[string]map[string]types.AttributeValue{}
	var mu sync.Mutex
	err := scatter(ctx, len(chunks), func(ctx context.Context, i int) error {
		req := map[string]types.KeysAndAttributes{s.table: {Keys: chunks[i], ConsistentRead: aws.Bool(true)}}
		for try := 0; len(req) > 0; try++ {
			if try > 0 { // unprocessed keys: the partitions were busy
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(min(try, 10)) * 20 * time.Millisecond):
				}
			}
			res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return err
			}
			mu.Lock()
			for _, it := range res.Responses[s.table] {
				out[getS(it, attrPK)] = it
			}
			mu.Unlock()
			req = res.UnprocessedKeys
		}
		return nil
	})
	return out, err
}
