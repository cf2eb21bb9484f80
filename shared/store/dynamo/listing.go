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
//	account-level events         table ACCOUNT#EVENT#<n>                  <receivedAt>#<id>   UnroutableShards
//	expiring authorisations      gsi2 DUE#EXPIRY#<n>                      <expiresAt>#<psp>   ExpiryShards (oldest first: expiring.go)
//
// A page queries every shard once, in parallel, with Limit = the page
// size (the caller asks for one more than it shows, to know whether there
// is a next page) below the cursor's sort key, merges the shards' items by
// sort key and keeps the page size (readPage): an unfiltered page is the
// shard count of Queries, plus for deliveries the BatchGetItem of the
// page's items (gsi2 projects keys and the status only, not the record).
// A filter (a delivery status: a FilterExpression on the projected st; the
// event history's fields: applied to the records read) can leave the
// first round short: then only the shards that have neither ended nor
// read past the page's last item so far are read on, with a growing
// Limit. Every shard contributes what it read below the cursor in order,
// so the merged page is exactly the first matching items below the
// cursor.

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

// listing is one page read of a sharded listing.
type listing struct {
	shards int
	// query is shard number shard's Query (key condition below the
	// cursor, order, index, filter); readPage sets Limit and the start key.
	query       func(shard int) *dynamodb.QueryInput
	sortKey     string // the sort key attribute the shards are ordered by
	newestFirst bool   // descending sort keys (else ascending)
	// keep reports whether an item read belongs in the page (nil: every
	// item): filters applied while reading.
	keep func(item map[string]types.AttributeValue) (bool, error)
}

// readPage reads a page of at most limit items (<= 0: all) of a sharded
// listing, merged in sort key order. The first round queries every shard
// with Limit = limit. A page is complete once every shard has either ended
// or read past the page's last item (the limit-th kept item of all those
// read): without a filter, the first round always completes it. With a
// filter, the shards that have not are read on, each next Query with
// twice the Limit (at most maxQueryLimit), until it is complete.
func (s *Store) readPage(ctx context.Context, l listing, limit int) ([]map[string]types.AttributeValue, error) {
	type shard struct {
		in     *dynamodb.QueryInput
		n      int    // the next Query's Limit
		last   string // the sort key of the last item evaluated
		done   bool   // ended
		active bool   // to be queried in this round
	}
	order := func(a, b string) int { // < 0: a comes first in the listing
		if l.newestFirst {
			return strings.Compare(b, a)
		}
		return strings.Compare(a, b)
	}
	shards := make([]shard, l.shards)
	for i := range shards {
		shards[i] = shard{in: l.query(i), n: limit, active: true}
		shards[i].in.TableName = aws.String(s.table)
	}
	var kept []map[string]types.AttributeValue
	var mu sync.Mutex
	for {
		var round []int
		for i := range shards {
			if shards[i].active {
				round = append(round, i)
			}
		}
		err := scatter(ctx, len(round), func(ctx context.Context, k int) error {
			sh := &shards[round[k]]
			if limit > 0 {
				sh.in.Limit = aws.Int32(int32(min(sh.n, maxQueryLimit)))
			}
			for {
				page, err := s.client.Query(ctx, sh.in)
				if err != nil {
					return err
				}
				var mine []map[string]types.AttributeValue
				for _, it := range page.Items {
					if l.keep != nil {
						ok, err := l.keep(it)
						if err != nil {
							return err
						}
						if !ok {
							continue
						}
					}
					mine = append(mine, it)
				}
				mu.Lock()
				kept = append(kept, mine...)
				mu.Unlock()
				sh.in.ExclusiveStartKey = page.LastEvaluatedKey
				sh.done = len(page.LastEvaluatedKey) == 0
				if !sh.done {
					sh.last = getS(page.LastEvaluatedKey, l.sortKey)
				}
				if sh.done || limit > 0 {
					return nil
				}
			}
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(kept, func(a, b map[string]types.AttributeValue) int {
			return order(getS(a, l.sortKey), getS(b, l.sortKey))
		})
		if limit <= 0 {
			return kept, nil
		}
		more := false
		for i := range shards {
			sh := &shards[i]
			// Read on a shard that has not ended and has not read past
			// the page's last item (there are fewer than limit: every
			// shard that has not ended).
			sh.active = !sh.done && (len(kept) < limit || order(sh.last, getS(kept[limit-1], l.sortKey)) < 0)
			if sh.active {
				sh.n = min(2*sh.n, maxQueryLimit)
				more = true
			}
		}
		if !more {
			if len(kept) > limit {
				kept = kept[:limit]
			}
			return kept, nil
		}
	}
}

// listDeliveries reads a page of the merchant's deliveries in status (""
// every status), newest first below after (nil: from the newest), at most
// limit (<= 0: all): the merchant's shard count (shards.go), then one gsi2
// Query per shard in parallel (readPage),
// merged, then one strongly consistent BatchGetItem of the page (one per
// 100 deliveries). A delivery whose status moved out of the filter since
// gsi2 saw it, or that expired, is left out, and a page that leaves short
// is completed by reading on below its last entry.
func (s *Store) listDeliveries(ctx context.Context, merchantID string, status webhooks.Status, after *webhooks.DeliveryCursor, limit int) ([]webhooks.Delivery, error) {
	below := ""
	if after != nil {
		below = listingSK(after.CreatedAt, after.ID)
	}
	shards, err := s.ListingShards(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	out := []webhooks.Delivery{}
	for {
		need := 0
		if limit > 0 {
			need = limit - len(out)
		}
		page, err := s.deliveryEntries(ctx, merchantID, shards.Deliveries, status, below, need)
		if err != nil {
			return nil, err
		}
		items, err := s.batchGet(ctx, page)
		if err != nil {
			return nil, err
		}
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
		if limit <= 0 || len(out) >= limit || len(page) < need {
			return webhooks.NewestFirst(out, limit), nil
		}
		below = getS(page[len(page)-1], attrGSI2SK)
	}
}

// deliveryEntries reads a page of gsi2 entries of the merchant's
// deliveries in its shards in status ("" every status), newest first below the sort key
// below ("" from the newest), at most limit (<= 0: all).
func (s *Store) deliveryEntries(ctx context.Context, merchantID string, shards int, status webhooks.Status, below string, limit int) ([]map[string]types.AttributeValue, error) {
	return s.readPage(ctx, listing{
		shards: shards,
		query: func(shard int) *dynamodb.QueryInput {
			in := newestBelow(attrGSI2PK, attrGSI2SK, DeliveryShardPartition(merchantID, shard), below)
			in.IndexName = aws.String(indexGSI2)
			if status != "" {
				in.FilterExpression = aws.String("#st = :st")
				in.ExpressionAttributeNames["#st"] = attrStatus
				in.ExpressionAttributeValues[":st"] = str(string(status))
			}
			return in
		},
		sortKey:     attrGSI2SK,
		newestFirst: true,
	}, limit)
}

// newestBelow queries partition pk (attribute pkAttr) newest first below
// the sort key below (attribute skAttr; "": from the newest); oldest first
// with ScanIndexForward unset.
func newestBelow(pkAttr, skAttr, pk, below string) *dynamodb.QueryInput {
	in := &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": pkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ScanIndexForward:          aws.Bool(false),
	}
	if below != "" {
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk < :below")
		in.ExpressionAttributeNames["#sk"] = skAttr
		in.ExpressionAttributeValues[":below"] = str(below)
	}
	return in
}

// batchGet reads the table items of index entries (strongly consistent),
// by partition key: one BatchGetItem per 100 keys, in parallel, each sent
// again for its unprocessed keys.
func (s *Store) batchGet(ctx context.Context, entries []map[string]types.AttributeValue) (map[string]map[string]types.AttributeValue, error) {
	keys := make([]Item, 0, len(entries))
	for _, e := range entries {
		keys = append(keys, Item{attrPK: e[attrPK], attrSK: e[attrSK]})
	}
	chunks := slices.Collect(slices.Chunk(keys, batchGetMax))
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
