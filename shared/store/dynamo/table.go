package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// tableWaitTimeout bounds CreateTable's wait for ACTIVE when ctx has no deadline.
const tableWaitTimeout = 5 * time.Minute

// CreateTable creates the table with the schema this package expects (see
// doc.go), waits until it and its index are ACTIVE, and enables TTL on ttl.
// It is idempotent: an existing table is left as it is (TTL is enabled if it
// is not). Production tables come from the SAM template; this is for tests
// and local use.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	wrap := func(err error) error { return fmt.Errorf("dynamo: create table %q: %w", table, err) }
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
		}
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:              aws.String(table),
		AttributeDefinitions:   []types.AttributeDefinition{s(attrPK), s(attrSK), s(attrGSI1PK), s(attrGSI1SK), s(attrGSI2PK), s(attrGSI2SK)},
		KeySchema:              keys(attrPK, attrSK),
		GlobalSecondaryIndexes: indexes(keys),
		BillingMode:            types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return wrap(err)
	}
	if err := waitActive(ctx, client, table); err != nil {
		return wrap(err)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return wrap(err)
	}
	if d := ttl.TimeToLiveDescription; d != nil &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return wrap(fmt.Errorf("enable ttl: %w", err))
	}
	return nil
}

// indexes are the GlobalSecondaryIndexes of Indexes.
func indexes(keys func(hash, rng string) []types.KeySchemaElement) []types.GlobalSecondaryIndex {
	out := make([]types.GlobalSecondaryIndex, 0, len(Indexes))
	for _, ix := range Indexes {
		p := &types.Projection{ProjectionType: types.ProjectionTypeAll}
		switch {
		case !ix.All && len(ix.Include) > 0:
			p = &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: ix.Include}
		case !ix.All:
			p = &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
		}
		out = append(out, types.GlobalSecondaryIndex{IndexName: aws.String(ix.Name), KeySchema: keys(ix.PK, ix.SK), Projection: p})
	}
	return out
}

// waitActive polls until the table and all its indexes are ACTIVE.
func waitActive(ctx context.Context, client *dynamodb.Client, table string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, tableWaitTimeout)
		defer cancel()
	}
	delay := 50 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		if active(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for ACTIVE: %w", ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func active(t *types.TableDescription) bool {
	if t == nil || t.TableStatus != types.TableStatusActive {
		return false
	}
	for _, gsi := range t.GlobalSecondaryIndexes {
		if gsi.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
