package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/config"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/testutil/moto"
)

// TestLocalDynamoKeepsConcurrentWrites: against a local endpoint (moto),
// concurrent transactions on one table lose nothing. moto restores a
// table as it was when a transaction began once that transaction's
// condition fails, so a write committed meanwhile by a concurrent request
// vanished — a payment acknowledged, then not found. The store's client
// sends one request at a time there (oneAtATime); each round here mixes
// payments created with writes whose condition fails.
func TestLocalDynamoKeepsConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	endpoint := onMoto(t)
	table := moto.TableName(t)
	dc := moto.DynamoClient(t, endpoint)
	if err := dynamo.CreateTable(ctx, dc, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = dc.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	stores, err := OpenStores(ctx, config.Config{Store: config.StoreDynamo, Table: table}, clock.NewFake(at))
	if err != nil {
		t.Fatal(err)
	}
	st := stores.Payments
	head := func(psp string) payments.Write {
		h := payments.Head{PSPReference: psp, MerchantID: "m_a", SiteID: "site_a", Version: 1, CreatedAt: at, UpdatedAt: at}
		return payments.Write{PSP: psp, Put: &h, Facts: []payments.Fact{{ID: psp + "#created", At: at, Kind: "created", Origin: payments.OriginAPI}}}
	}
	taken := "PSPTAKEN00000001"
	if err := st.Write(ctx, head(taken)); err != nil {
		t.Fatal(err)
	}
	const rounds, writers = 4, 12
	for round := range rounds {
		var wg sync.WaitGroup
		for i := range writers {
			psp := fmt.Sprintf("PSPR%02dW%02d00000000", round, i)
			wg.Go(func() {
				if err := st.Write(ctx, head(psp)); err != nil {
					t.Errorf("create %s: %v", psp, err)
				}
			})
			wg.Go(func() { // its condition fails: the payment exists
				if err := st.Write(ctx, head(taken)); !errors.Is(err, storeerr.ErrConflict) {
					t.Errorf("create %s again: %v, want a conflict", taken, err)
				}
			})
		}
		wg.Wait()
		for i := range writers {
			psp := fmt.Sprintf("PSPR%02dW%02d00000000", round, i)
			if _, err := st.GetPayment(ctx, psp); err != nil {
				t.Errorf("round %d: payment %s acknowledged, then: %v", round, psp, err)
			}
		}
	}
}
