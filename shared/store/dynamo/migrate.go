package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/webhooks"
)

// MigrationReport counts what MigrateKeys did.
type MigrationReport struct {
	IdempotencyMoved   int // records moved to IDEM#<merchant>#<key> / KEY
	IdempotencyKept    int // old records dropped: a record under the new key exists
	DeliveriesIndexed  int // deliveries moved to their gsi1 shard
	DeliveriesChanged  int // deliveries saved meanwhile (already in the new layout)
	ItemsScanned       int
	ScanPagesProcessed int
}

// MigrateKeys brings items written under the previous key layout to the
// current one (docs/scale.md, "Migration"):
//
//   - idempotency records IDEM#<merchant> / KEY#<key> are copied to
//     IDEM#<merchant>#<key> / KEY (unless a record exists there: a claim
//     made since the deploy wins) and deleted;
//   - deliveries whose gsi1pk is not their shard under this Store's shard
//     count (the unsharded MERCHANT#<merchant>, or another count) get it,
//     conditional on their version (a delivery saved meanwhile already has).
//
// It scans the table once, can run while the service runs and can run
// again (a second run finds nothing to do).
func (s *Store) MigrateKeys(ctx context.Context) (MigrationReport, error) {
	var rep MigrationReport
	pages := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{
		TableName:        aws.String(s.table),
		FilterExpression: aws.String("(begins_with(#pk, :idem) AND begins_with(#sk, :legacy)) OR begins_with(#pk, :delivery)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#sk": attrSK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":idem": str(pfxIdem), ":legacy": str(pfxLegacyIdem), ":delivery": str(pfxDelivery),
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
			if strings.HasPrefix(pk, pfxDelivery) {
				err = s.migrateDelivery(ctx, it, &rep)
			} else {
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

// migrateDelivery moves one delivery to its gsi1 shard.
func (s *Store) migrateDelivery(ctx context.Context, it map[string]types.AttributeValue, rep *MigrationReport) error {
	d, err := decodeData[webhooks.Delivery](it)
	if err != nil {
		return err
	}
	want := DeliveryIndexPartition(d.MerchantID, d.ID, s.shards)
	if getS(it, attrGSI1PK) == want {
		return nil
	}
	version, ok := it[attrVersion]
	if !ok {
		return fmt.Errorf("no %s attribute", attrVersion)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       map[string]types.AttributeValue{attrPK: it[attrPK], attrSK: it[attrSK]},
		UpdateExpression:          aws.String("SET #gsi1pk = :shard"),
		ConditionExpression:       aws.String("#version = :version"),
		ExpressionAttributeNames:  map[string]string{"#gsi1pk": attrGSI1PK, "#version": attrVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(want), ":version": version},
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
