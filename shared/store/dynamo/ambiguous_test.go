package dynamo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// loseAnswer makes the next TransactWriteItems that succeeds look failed
// to the SDK (its answer lost on the way back), so the SDK sends it again:
// the ambiguous success of a write whose connection broke after DynamoDB
// applied it.
func loseAnswer(armed *atomic.Bool) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("loseAnswer",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				if err == nil && awsmiddleware.GetOperationName(ctx) == "TransactWriteItems" && armed.CompareAndSwap(true, false) {
					return out, md, &smithyhttp.RequestSendError{Err: errors.New("connection reset after the request was applied")}
				}
				return out, md, err
			}), middleware.After)
	}
}

// TestSaveWhoseAnswerWasLost: a payment save that DynamoDB applied but whose
// answer was lost, then sent again by the SDK, is reported saved (not a
// conflict, which would make the caller apply its change a second time),
// for a new record and for an update alike.
func TestSaveWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	base, table := newTable(t)
	var armed atomic.Bool
	client := dynamodb.New(base.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, loseAnswer(&armed)) })
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s := dynamo.New(client, table, clock.NewFake(at))

	p := payments.Payment{PSPReference: "PSP_LOST", MerchantID: "m_a", SiteID: "site_1", Amount: money.Amount{Value: 100, Currency: "EUR"},
		State: payments.StateAuthorised, Version: 1, CreatedAt: at, UpdatedAt: at,
		History: []payments.Event{{At: at, Kind: "payment", Origin: "api"}}}
	armed.Store(true)
	if err := s.SavePayment(ctx, p, 0); err != nil {
		t.Fatalf("create whose answer was lost: %v", err)
	}
	if armed.Load() {
		t.Fatal("no answer was lost: the test did not run its case")
	}
	p.History = append(p.History, payments.Event{At: at.Add(time.Second), Kind: "capture-requested", Origin: "api"})
	p.Version = 2
	armed.Store(true)
	if err := s.SavePayment(ctx, p, 1); err != nil {
		t.Fatalf("update whose answer was lost: %v", err)
	}
	got, err := s.GetPayment(ctx, "PSP_LOST")
	if err != nil || got.Version != 2 || len(got.History) != 2 {
		t.Fatalf("stored: version %d, %d history entries, %v; want 2 and 2", got.Version, len(got.History), err)
	}
	// A save that really conflicts still does.
	p.Version = 2
	if err := s.SavePayment(ctx, p, 1); err == nil {
		t.Fatal("a save from a stale version succeeded")
	}
}
