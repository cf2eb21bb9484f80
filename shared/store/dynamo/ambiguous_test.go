package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

// loseAnswer makes the next TransactWriteItems, PutItem or UpdateItem that succeeds
// look failed to the SDK (its answer lost on the way back), so the SDK
// sends it again: the ambiguous success of a write whose connection broke
// after DynamoDB applied it.
func loseAnswer(armed *atomic.Bool) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("loseAnswer",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				op := awsmiddleware.GetOperationName(ctx)
				if err == nil && (op == "TransactWriteItems" || op == "PutItem" || op == "UpdateItem") && armed.CompareAndSwap(true, false) {
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
	s, armed, at := losingStore(t)

	p := payments.Payment{PSPReference: "PSP_LOST", MerchantID: "m_a", SiteID: "site_1", Amount: money.Amount{Value: 100, Currency: "EUR"},
		State: payments.StateAuthorised, Version: 1, CreatedAt: at, UpdatedAt: at,
		History: []payments.Event{{At: at, Kind: "payment", Origin: "api"}}}
	lose(t, armed, "create whose answer was lost", func() error { return s.SavePayment(ctx, p, 0) })
	p.History = append(p.History, payments.Event{At: at.Add(time.Second), Kind: "capture-requested", Origin: "api"})
	p.Version = 2
	lose(t, armed, "update whose answer was lost", func() error { return s.SavePayment(ctx, p, 1) })
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

// losingStore is a store on a fresh table whose client loses the answer
// of the next write once armed.
func losingStore(t *testing.T) (*dynamo.Store, *atomic.Bool, time.Time) {
	t.Helper()
	base, table := newTable(t)
	armed := new(atomic.Bool)
	client := dynamodb.New(base.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, loseAnswer(armed)) })
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	return dynamo.New(client, table, clock.NewFake(at)), armed, at
}

// lose runs write with the next answer lost; write must succeed.
func lose(t *testing.T, armed *atomic.Bool, what string, write func() error) {
	t.Helper()
	armed.Store(true)
	if err := write(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if armed.Load() {
		t.Fatalf("%s: no answer was lost: the test did not run its case", what)
	}
}

// TestVersionedWriteWhoseAnswerWasLost: an event or delivery write that
// DynamoDB applied but whose answer was lost, sent again by the SDK, is
// reported done — not a conflict, on which the caller would re-read and
// apply its change again (an attempt counted twice, an arrival counted
// twice) — while a write that really conflicts still does.
func TestVersionedWriteWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	s, armed, at := losingStore(t)

	d := webhooks.Delivery{ID: "msg_lost", MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "AUTHORISATION",
		Payload: []byte(`{}`), Status: webhooks.StatusPending, CreatedAt: at, UpdatedAt: at, Version: 1}
	lose(t, armed, "delivery create", func() error { return s.SaveDelivery(ctx, d, 0) })
	d.Attempts, d.Version = 1, 2
	lose(t, armed, "delivery update", func() error { return s.SaveDelivery(ctx, d, 1) })
	if got, err := s.GetDelivery(ctx, d.ID); err != nil || got.Version != 2 || got.Attempts != 1 {
		t.Fatalf("stored delivery: version %d, %d attempts, %v; want 2 and 1", got.Version, got.Attempts, err)
	}
	if err := s.SaveDelivery(ctx, d, 1); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("delivery save from a stale version = %v, want a conflict", err)
	}

	e := notifications.Event{ID: "evt_lost", Key: "k", PaymentPSP: "PSP1", Status: notifications.EventReceived, Received: 1,
		ReceivedAt: at, UpdatedAt: at, Version: 1}
	lose(t, armed, "event create", func() error { return s.SaveEvent(ctx, e, 0) })
	// Kept unroutable: the item and the unroutable list in one transaction.
	e.Status, e.UnroutableAt, e.Version = notifications.EventUnroutable, &at, 2
	lose(t, armed, "unroutable event update", func() error { return s.SaveEvent(ctx, e, 1) })
	if got, err := s.GetEvent(ctx, e.ID); err != nil || got.Version != 2 || got.Status != notifications.EventUnroutable {
		t.Fatalf("stored event: version %d, status %s, %v; want 2, unroutable", got.Version, got.Status, err)
	}
	if err := s.SaveEvent(ctx, e, 1); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("event save from a stale version = %v, want a conflict", err)
	}
}

// TestClaimWhoseAnswerWasLost: an idempotency claim DynamoDB applied but
// whose answer was lost, sent again by the SDK, meets its own record (its
// lease token): the claim holds, instead of answering the request 409
// "in progress" and locking its key until the lease ends.
func TestClaimWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	s, armed, at := losingStore(t)
	rec := idempotency.Record{Scope: "m_a", Key: "k-lost", Fingerprint: "fp", LeaseToken: "token-1",
		LeaseUntil: at.Add(time.Minute), ExpiresAt: at.Add(time.Hour)}
	var got idempotency.Record
	lose(t, armed, "claim", func() (err error) { got, err = s.Claim(ctx, rec, at); return err })
	if got.LeaseToken != "token-1" || got.Status != idempotency.StatusInProgress {
		t.Fatalf("claim whose answer was lost = %+v, want the claim itself", got)
	}
	if err := s.Complete(ctx, rec.Scope, rec.Key, "token-1", idempotency.Response{Status: 200, Body: []byte(`{}`)}, at.Add(time.Hour)); err != nil {
		t.Fatalf("Complete with the claim's lease: %v", err)
	}
	// Another request's claim of the key still conflicts.
	other := rec
	other.LeaseToken = "token-2"
	if _, err := s.Claim(ctx, other, at); !errors.Is(err, storeerr.ErrConflict) {
		t.Fatalf("second claim = %v, want a conflict", err)
	}
}

// TestHitWhoseAnswerWasLost: a rate-limit hit DynamoDB counted but whose
// answer was lost, sent again by the SDK, counts once — the window's
// limit stays the limit — for a hit that counts and one that restarts
// an ended window alike.
func TestHitWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	s, armed, at := losingStore(t)
	hit := func(exp time.Time) bool {
		t.Helper()
		ok, err := s.Hit(ctx, "rl#lost", 2, exp)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	exp := at.Add(time.Second)
	lose(t, armed, "hit", func() error {
		if !hit(exp) {
			return errors.New("first hit refused")
		}
		return nil
	})
	if !hit(exp) {
		t.Fatal("second hit of a window of 2 refused: the first was counted twice")
	}
	if hit(exp) {
		t.Fatal("third hit of a window of 2 allowed")
	}

	// A window that ended (at the store's clock) is restarted by the hit.
	ended, next := "rl#ended", at.Add(time.Second)
	if ok, err := s.Hit(ctx, ended, 2, at); err != nil || !ok {
		t.Fatalf("hit of a window ending at once: %v %v", ok, err)
	}
	lose(t, armed, "restarting hit", func() error {
		if ok, err := s.Hit(ctx, ended, 2, next); err != nil || !ok {
			return fmt.Errorf("restarting hit: %v %v", ok, err)
		}
		return nil
	})
	if ok, err := s.Hit(ctx, ended, 2, next); err != nil || !ok {
		t.Fatalf("second hit of the restarted window: %v %v; the restart was counted twice", ok, err)
	}
}
