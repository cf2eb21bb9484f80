package dynamo

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/store/internal/records"
)

// MigrationReport counts what MigrateKeys did.
type MigrationReport struct {
	IdempotencyMoved   int // records moved to IDEM#<merchant>#<key> / KEY
	IdempotencyKept    int // old records dropped: a record under the new key exists
	DeliveriesIndexed  int // deliveries moved to their gsi2 shard
	DeliveriesChanged  int // deliveries saved meanwhile (already in the new layout)
	EventsMoved        int // event history entries moved to their shard
	UnroutableMoved    int // unroutable-list entries moved to their shard
	UnroutableDropped  int // entries of events saved meanwhile (the save keeps the list)
	ItemsScanned       int
	ScanPagesProcessed int
}

// MigrateKeys brings items written under the previous key layout to the
// current one (docs/scale.md, "Migration"):
//
//   - idempotency records IDEM#<merchant> / KEY#<key> are copied to
//     IDEM#<merchant>#<key> / KEY (unless a record exists there: a claim
//     made since the deploy wins) and deleted;
//   - deliveries not indexed in their gsi2 shard under this Store's shard
//     count (indexed in gsi1 by status, or under another count) get their
//     gsi2 key and st and leave gsi1, conditional on their version (a
//     delivery saved meanwhile already has);
//   - event history entries not in their shard under this Store's count
//     (EVENTLOG#<merchant>#<n> of another count) are copied to it and
//     deleted;
//   - unroutable-list entries not in their shard (the unsharded
//     UNROUTABLE#EVENT, or another count) are moved to it in one
//     transaction conditional on their event's version; an event saved
//     meanwhile has its entry in the new layout (or none, once routed), and
//     the old entry is deleted.
//
// It scans the table once, can run while the service runs and can run
// again (a second run finds nothing to do).
func (s *Store) MigrateKeys(ctx context.Context) (MigrationReport, error) {
	var rep MigrationReport
	pages := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{
		TableName: aws.String(s.table),
		FilterExpression: aws.String("(begins_with(#pk, :idem) AND begins_with(#sk, :legacy)) OR begins_with(#pk, :delivery) OR " +
			"begins_with(#pk, :eventlog) OR begins_with(#pk, :unroutable)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#sk": attrSK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":idem": str(pfxIdem), ":legacy": str(pfxLegacyIdem), ":delivery": str(pfxDelivery),
			":eventlog": str(pfxEventLog), ":unroutable": str(pkUnroutable),
		},
		ConsistentRead: aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return rep, fmt.Errorf("dynamo: migrate keys: scan: %w", err)
		}
		rep.ScanPagesProcessed++
		for _, it := range page.Items {
			rep.ItemsScanned++
			pk, sk := Keys(it)
			var err error
			switch {
			case strings.HasPrefix(pk, pfxDelivery):
				err = s.migrateDelivery(ctx, it, &rep)
			case strings.HasPrefix(pk, pfxEventLog):
				err = s.migrateEventLog(ctx, it, &rep)
			case strings.HasPrefix(pk, pkUnroutable):
				err = s.migrateUnroutable(ctx, it, &rep)
			default:
				err = s.migrateIdempotency(ctx, it, &rep)
			}
			if err != nil {
				return rep, fmt.Errorf("dynamo: migrate keys: item %s / %s: %w", pk, sk, err)
			}
		}
	}
	return rep, nil
}

// migrateIdempotency moves one old-layout idempotency record.
func (s *Store) migrateIdempotency(ctx context.Context, old map[string]types.AttributeValue, rep *MigrationReport) error {
	scope, key := getS(old, attrScope), getS(old, attrKey)
	if scope == "" || key == "" {
		return fmt.Errorf("no %s or %s attribute", attrScope, attrKey)
	}
	moved := make(map[string]types.AttributeValue, len(old))
	for k, v := range old {
		moved[k] = v
	}
	moved[attrPK], moved[attrSK] = str(idemPK(scope, key)), str(skIdem)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     moved,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	switch _, exists := conditionFailed(err); {
	case exists:
		rep.IdempotencyKept++
	case err != nil:
		return err
	default:
		rep.IdempotencyMoved++
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table),
		Key:       map[string]types.AttributeValue{attrPK: old[attrPK], attrSK: old[attrSK]},
	})
	return err
}

// migrateDelivery moves one delivery to its gsi2 shard.
func (s *Store) migrateDelivery(ctx context.Context, it map[string]types.AttributeValue, rep *MigrationReport) error {
	rec, err := decodeData[records.Delivery](it)
	if err != nil {
		return err
	}
	d := rec.ToDelivery()
	shards, err := s.writeShards(ctx, d.MerchantID)
	if err != nil {
		return err
	}
	want, err := DeliveryItem(d, shards.Deliveries)
	if err != nil {
		return err
	}
	_, inGSI1 := it[attrGSI1PK]
	if !inGSI1 && getS(it, attrGSI2PK) == getS(want, attrGSI2PK) && getS(it, attrGSI2SK) == getS(want, attrGSI2SK) &&
		getS(it, attrStatus) == getS(want, attrStatus) {
		return nil
	}
	version, ok := it[attrVersion]
	if !ok {
		return fmt.Errorf("no %s attribute", attrVersion)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 map[string]types.AttributeValue{attrPK: it[attrPK], attrSK: it[attrSK]},
		UpdateExpression:    aws.String("SET #gsi2pk = :pk, #gsi2sk = :sk, #st = :st REMOVE #gsi1pk, #gsi1sk"),
		ConditionExpression: aws.String("#version = :version"),
		ExpressionAttributeNames: map[string]string{"#gsi2pk": attrGSI2PK, "#gsi2sk": attrGSI2SK, "#st": attrStatus,
			"#gsi1pk": attrGSI1PK, "#gsi1sk": attrGSI1SK, "#version": attrVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": want[attrGSI2PK], ":sk": want[attrGSI2SK],
			":st": want[attrStatus], ":version": version},
	})
	if _, changed := conditionFailed(err); changed {
		rep.DeliveriesChanged++
		return nil
	}
	if err != nil {
		return err
	}
	rep.DeliveriesIndexed++
	return nil
}

// migrateEventLog moves one event history entry to its shard: a copy
// (what PutMerchantEvent writes for the event) then a delete.
func (s *Store) migrateEventLog(ctx context.Context, it map[string]types.AttributeValue, rep *MigrationReport) error {
	rec, err := decodeData[records.MerchantEvent](it)
	if err != nil {
		return err
	}
	e := rec.ToMerchantEvent()
	shards, err := s.writeShards(ctx, e.MerchantID)
	if err != nil {
		return err
	}
	pk, sk := Keys(it)
	want := EventLogPartition(e.MerchantID, e.ID, shards.Events)
	if pk == want {
		return nil
	}
	moved := maps.Clone(it)
	moved[attrPK] = str(want)
	if err := s.putItem(ctx, moved); err != nil {
		return err
	}
	if _, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: itemKey(pk, sk)}); err != nil {
		return err
	}
	rep.EventsMoved++
	return nil
}

// migrateUnroutable moves one unroutable-list entry to its shard, in one
// transaction with a check that its event's version is the entry's.
func (s *Store) migrateUnroutable(ctx context.Context, it map[string]types.AttributeValue, rep *MigrationReport) error {
	rec, err := decodeData[records.Notification](it)
	if err != nil {
		return err
	}
	e := rec.ToEvent()
	pk, sk := Keys(it)
	if pk == UnroutablePartition(e.ID, s.unroutable) {
		return nil
	}
	moved := maps.Clone(it)
	moved[attrPK] = str(UnroutablePartition(e.ID, s.unroutable))
	del := types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: itemKey(pk, sk)}}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.table), Key: itemKey(pfxEvent+e.ID, skRecord),
			ConditionExpression:       aws.String("#version = :version"),
			ExpressionAttributeNames:  map[string]string{"#version": attrVersion},
			ExpressionAttributeValues: map[string]types.AttributeValue{":version": num(e.Version)}}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: moved}},
		del,
	}})
	if transactionConditionFailed(err) {
		_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{del}})
		if err == nil {
			rep.UnroutableDropped++
		}
		return err
	}
	if err != nil {
		return err
	}
	rep.UnroutableMoved++
	return nil
}
