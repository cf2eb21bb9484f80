package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/store/storetest"
	"github.com/yp/paysvc/shared/testutil/moto"
)

func TestWebhookContract(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T, clk clock.Clock) storetest.WebhookStores {
		s := newTableStore(t, clk)
		return storetest.WebhookStores{Events: s, Deliveries: s, Payments: s}
	})
}

func TestSelfServiceContract(t *testing.T) {
	storetest.RunSelfService(t, func(t *testing.T, clk clock.Clock) storetest.SelfServiceStores {
		s := newTableStore(t, clk)
		return storetest.SelfServiceStores{History: s, Deliveries: s}
	})
}

// newTableStore is a store on a fresh table of moto's, dropped after t,
// with a few delivery and event-history shards (the scatter-gather of the
// full counts takes seconds per listing on moto; the merge is the same,
// and the contract's events and deliveries land in several shards).
func newTableStore(t *testing.T, clk clock.Clock) *dynamo.Store {
	client := moto.DynamoClient(t, moto.Endpoint(t))
	table := moto.TableName(t)
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return dynamo.New(client, table, clk, dynamo.WithDeliveryShards(8), dynamo.WithEventLogShards(4))
}
