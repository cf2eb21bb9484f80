package dynamo

// Notification events and webhook deliveries (docs/webhooks.md) in the single
// table, following doc.go's conventions (record as JSON in data, version
// for conditional writes, strongly consistent base-table reads, lists
// through gsi1):
//
//	record     pk                          sk                  gsi1pk / gsi2pk                                gsi1sk / gsi2sk
//	event      EVENT#<id>                  META                gsi1 PAYMENT#<pspReference>                    EVENT#<receivedAt>#<id>
//	delivery   DELIVERY#<id>               META                gsi2 MERCHANT#<merchant>#DELIVERIES#<shard>    <createdAt>#<id>
//	unroutable UNROUTABLE#EVENT#<shard>    <receivedAt>#<id>   (a copy of an unroutable event, see SaveEvent)
//
// Times in sort keys are fixed-width UTC (2006-01-02T15:04:05.000000000Z)
// so they sort as strings. SaveEvent and SaveDelivery are one PutItem
// conditional on the stored version (absence for version 0). A merchant's
// deliveries are write-sharded over DeliveryShards gsi2 partitions (shard:
// a hash of the delivery id), time-ordered; the delivery's status is the
// attribute st, projected into gsi2 (keys and st only), so a status move
// rewrites the entry in place and a listing filters on it. The unroutable
// list is write-sharded over UnroutableShards partitions (shard: a hash of
// the event id). Listings are in listing.go.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/store/internal/records"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

var (
	_ notifications.EventStore = (*Store)(nil)
	_ webhooks.DeliveryStore   = (*Store)(nil)
)

// Key parts of event and delivery items.
const (
	pfxEvent         = "EVENT#"
	pfxDelivery      = "DELIVERY#"
	pfxDeliveryShard = "#DELIVERIES#"
	sortTimeLayout   = "2006-01-02T15:04:05.000000000Z"
)

// sortTime renders t for a sort key.
func sortTime(t time.Time) string { return t.UTC().Format(sortTimeLayout) }

// GetEvent returns a notification event (strongly consistent), or
// storeerr.ErrNotFound.
func (s *Store) GetEvent(ctx context.Context, id string) (notifications.Event, error) {
	return getRecord(ctx, s, pfxEvent+id, skMeta, records.Notification.ToEvent, "get event %q", id)
}

// SaveEvent writes e if the stored version is prevVersion (0: absent).
// An event that is, or once was, unroutable (UnroutableAt set) is written
// in one transaction with its entry in the unroutable list
// (UNROUTABLE#EVENT#<shard> / <receivedAt>#<id>, a copy of the event): put
// while it is unroutable, deleted once it is routed. An account-level
// event is written with its entry in the account-level list
// (ACCOUNT#EVENT#<shard>, the same shape), which it never leaves.
func (s *Store) SaveEvent(ctx context.Context, e notifications.Event, prevVersion int64) error {
	switch {
	case e.ID == "":
		return fmt.Errorf("dynamo: save event: %w", errEmpty("id"))
	case e.Version != prevVersion+1:
		return fmt.Errorf("dynamo: save event %q: version %d must be previous version %d + 1", e.ID, e.Version, prevVersion)
	}
	item, err := sized(EventItem(e))
	if err != nil {
		return fmt.Errorf("dynamo: save event %q: %w", e.ID, err)
	}
	if e.UnroutableAt == nil && e.Status != notifications.EventAccount {
		err = s.putVersioned(ctx, item, prevVersion)
	} else {
		err = s.saveListed(ctx, e, item, prevVersion)
	}
	return wrapErr(err, "save event %q (version %d)", e.ID, prevVersion)
}

// CommitItem writes a processed notification item (notifications.ItemCommit)
// as concurrent independent writes, one round trip deep: the event and
// the payment record conditionally on their versions (SaveEvent,
// SavePayment), each delivery unless stored, and the merchant's history
// entry. Each is idempotent and the receiver marks the event processed only
// afterwards, so a commit that stopped part way is completed when the
// item is processed again; storeerr.ErrConflict when a version moved.
func (s *Store) CommitItem(ctx context.Context, c notifications.ItemCommit) error {
	writes := []func() error{func() error { return s.SaveEvent(ctx, c.Event, c.PrevEventVersion) }}
	if c.Payment != nil {
		writes = append(writes, func() error { return s.Write(ctx, *c.Payment) })
	}
	if c.MerchantEvent != nil {
		writes = append(writes, func() error { return s.PutMerchantEvent(ctx, *c.MerchantEvent) })
	}
	for _, d := range c.Deliveries {
		writes = append(writes, func() error {
			if err := s.SaveDelivery(ctx, d, 0); err != nil && !errors.Is(err, storeerr.ErrConflict) {
				return err // a conflict: stored before
			}
			return nil
		})
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() { errs[i] = w() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dynamo: commit item %q: %w", c.Event.ID, err)
	}
	return nil
}

// Keys of the listed events' entries (their partitions: ListedPartition):
// the unroutable list and the account-level one.
const (
	pkUnroutable = "UNROUTABLE#EVENT"
	pkAccount    = "ACCOUNT#EVENT"
)

func unroutableSK(e notifications.Event) string { return listingSK(e.ReceivedAt, e.ID) }

// saveListed writes an event's item and its list entries in one
// transaction, the item conditional on its version: the unroutable list's
// (put while unroutable, deleted once not) for an event that was ever
// unroutable, the account-level list's for an account-level one.
func (s *Store) saveListed(ctx context.Context, e notifications.Event, item map[string]types.AttributeValue, prev int64) error {
	token := writeToken()
	writes := []types.TransactWriteItem{versionedWrite(s.table, item, prev, token)}
	if e.UnroutableAt != nil && e.Status != notifications.EventUnroutable {
		writes = append(writes, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table),
			Key: itemKey(ListedPartition(notifications.EventUnroutable, shardOf(e.ID, s.unroutable)), unroutableSK(e))}})
	}
	if e.Status == notifications.EventUnroutable || e.Status == notifications.EventAccount {
		listed, err := ListedItem(e, s.unroutable)
		if err != nil {
			return err
		}
		writes = append(writes, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: listed}})
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes})
	if transactionConditionFailed(err) {
		// Applied before, its answer lost (see versionSlots)? The stored
		// item came back with the failure, or is read now.
		if old, _ := s.failedOn(ctx, cancelledItem(err), pfxEvent+e.ID, skMeta); wroteVersion(old, e.Version, token) {
			return nil
		}
		return storeerr.ErrConflict
	}
	if transactionConflict(err) {
		return storeerr.ErrConflict
	}
	return err
}

// ListEvents returns the events in status (unroutable or account-level),
// oldest first, at most limit (<= 0: all): one Query per shard of the
// status's list with Limit = limit, in parallel, merged oldest first
// (listing.go).
func (s *Store) ListEvents(ctx context.Context, status notifications.EventStatus, limit int) ([]notifications.Event, error) {
	if status != notifications.EventUnroutable && status != notifications.EventAccount {
		return nil, fmt.Errorf("dynamo: list %s events: only unroutable and account-level events are listed", status)
	}
	page, err := s.readPage(ctx, listing{
		shards: s.unroutable,
		query: func(shard int) *dynamodb.QueryInput {
			in := newestBelow(attrPK, attrSK, ListedPartition(status, shard), "")
			in.ScanIndexForward, in.ConsistentRead = nil, aws.Bool(true) // oldest first
			return in
		},
		sortKey: attrSK,
	}, limit)
	var out []notifications.Event
	if err == nil {
		out, err = decodeAll(page, records.Notification.ToEvent)
	}
	return out, wrapErr(err, "list %s events", status)
}

// ListPaymentEvents returns the events of payment psp, oldest first
// (gsi1, eventually consistent).
func (s *Store) ListPaymentEvents(ctx context.Context, psp string) ([]notifications.Event, error) {
	return listRecords(ctx, s, indexQuery(pfxPayment+psp, pfxEvent), records.Notification.ToEvent, nil,
		"list events of payment %q", psp)
}

// GetDelivery returns a webhook delivery (strongly consistent), or
// storeerr.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id string) (webhooks.Delivery, error) {
	return getRecord(ctx, s, pfxDelivery+id, skMeta, records.Delivery.ToDelivery, "get delivery %q", id)
}

// SaveDelivery writes d if the stored version is prevVersion (0: absent).
func (s *Store) SaveDelivery(ctx context.Context, d webhooks.Delivery, prevVersion int64) error {
	switch {
	case d.ID == "":
		return fmt.Errorf("dynamo: save delivery: %w", errEmpty("id"))
	case d.MerchantID == "":
		return fmt.Errorf("dynamo: save delivery %q: %w", d.ID, errEmpty("merchantId"))
	case d.Version != prevVersion+1:
		return fmt.Errorf("dynamo: save delivery %q: version %d must be previous version %d + 1", d.ID, d.Version, prevVersion)
	}
	shards, err := s.writeShards(ctx, d.MerchantID)
	if err != nil {
		return fmt.Errorf("dynamo: save delivery %q: %w", d.ID, err)
	}
	item, err := sized(DeliveryItem(d, shards.Deliveries))
	if err != nil {
		return fmt.Errorf("dynamo: save delivery %q: %w", d.ID, err)
	}
	return wrapErr(s.putVersioned(ctx, item, prevVersion), "save delivery %q (version %d)", d.ID, prevVersion)
}

// ListDeliveries returns the merchant's deliveries in status (all when
// ""), newest first, at most limit (<= 0: all): one page of
// listDeliveries (gsi2, eventually consistent, then the items strongly
// consistent).
func (s *Store) ListDeliveries(ctx context.Context, merchantID string, status webhooks.Status, limit int) ([]webhooks.Delivery, error) {
	ds, err := s.listDeliveries(ctx, merchantID, status, nil, limit)
	return ds, wrapErr(err, "list deliveries of %q", merchantID)
}

// scatterParallel bounds the concurrent requests of one listing page: every
// shard of the largest listing at once.
const scatterParallel = DeliveryShards

// scatter runs fn(0..n-1) with at most scatterParallel at a time and
// returns the first error (the others are cancelled).
func scatter(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, scatterParallel) {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return ctx.Err()
}

// condPut is the transaction's put of item conditional on cond, the
// stored item sent back when cond fails.
func condPut(table string, item map[string]types.AttributeValue, cond *string, names map[string]string, values map[string]types.AttributeValue) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: item, ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
}

// versionCondition is the condition of a versioned write: the item is
// absent (prev 0) or its stored version is prev.
func versionCondition(prev int64) (expr *string, names map[string]string, values map[string]types.AttributeValue) {
	if prev == 0 {
		return aws.String("attribute_not_exists(#pk)"), map[string]string{"#pk": attrPK}, nil
	}
	return aws.String("#version = :prev"), map[string]string{"#version": attrVersion}, map[string]types.AttributeValue{":prev": num(prev)}
}
