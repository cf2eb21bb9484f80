package dynamo_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/store/storetest"
	"github.com/yp/paysvc/shared/testutil/moto"
)

func TestMain(m *testing.M) { os.Exit(moto.Run(m)) }

// newTable creates a fresh table for t on moto and deletes it afterwards.
func newTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	client := moto.DynamoClient(t, moto.Endpoint(t))
	table := moto.TableName(t)
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		// A table already gone is deleted: the SDK retries a DeleteTable
		// whose answer it did not get (a 5xx, a dropped connection), and the
		// retry of one that took effect answers ResourceNotFound (seen once
		// in CI, after every call of the test had passed).
		var gone *types.ResourceNotFoundException
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil && !errors.As(err, &gone) {
			t.Errorf("DeleteTable %s: %v", table, err)
		}
	})
	return client, table
}

func TestContract(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T, clk clock.Clock) storetest.Stores {
		client, table := newTable(t)
		s := dynamo.New(client, table, clk)
		return storetest.Stores{Tenant: s, Idempotency: s, RateLimit: s, Payments: s}
	})
}

func TestCreateTableIdempotent(t *testing.T) {
	client, table := newTable(t)
	if err := dynamo.CreateTable(context.Background(), client, table); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
	ttl, err := client.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive: %v", err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "ttl" || d.TimeToLiveStatus != "ENABLED" {
		t.Fatalf("TTL: %+v, want enabled on ttl", d)
	}
}
