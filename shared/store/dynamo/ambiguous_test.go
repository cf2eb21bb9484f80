package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
)

// loseAnswer makes the next TransactWriteItems, PutItem or UpdateItem that
// succeeds look failed to the SDK (its answer lost on the way back), so the
// SDK sends it again: the ambiguous success of a write whose connection
// broke after DynamoDB applied it. (A write whose answer a broken
// connection to the server lost already is that case too: it disarms.)
// meanwhile, when set, runs once the lost write landed and before the SDK
// sends it again (another writer's change landing in between).
func loseAnswer(armed *atomic.Bool, meanwhile *func()) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("loseAnswer",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				switch awsmiddleware.GetOperationName(ctx) {
				case "TransactWriteItems", "PutItem", "UpdateItem":
				default:
					return out, md, err
				}
				var answered smithy.APIError // DynamoDB's answer (a failed condition): not lost
				if errors.As(err, &answered) || !armed.CompareAndSwap(true, false) {
					return out, md, err
				}
				if f := *meanwhile; f != nil {
					*meanwhile = nil
					f()
				}
				if err != nil {
					return out, md, err // lost on the way already
				}
				return out, md, &smithyhttp.RequestSendError{Err: errors.New("connection reset after the request was applied")}
			}), middleware.After)
	}
}

// TestPaymentWriteWhoseAnswerWasLost: a payment write that DynamoDB
// applied but whose answer was lost, then sent again by the SDK, is
// reported done — not a conflict, on which the domain would re-read and
// write its change a second time — and applied once: a head put (new and
// from a version), a delta write moving money (a capture's request and
// its answer), one moving the head alone, and one whose head another
// writer changed before the SDK sent it again. The head's Totals stay the
// fold of its entries, each fact is in the timeline once, and a write that
// really conflicts still does.
func TestPaymentWriteWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	l := newLosing(t)
	s, at, psp := l.store, l.at, "PSP_LOST"

	h := authorised(psp, at)
	lose(t, &l.armed, "head created", func() error { return s.Write(ctx, created(h)) })
	op1 := capture("op_1", 1200, at.Add(time.Second))
	lose(t, &l.armed, "capture requested", func() error { return s.Write(ctx, request(psp, op1)) })
	answered, op1a := answer(psp, op1, payments.Received, at.Add(2*time.Second))
	lose(t, &l.armed, "capture answered", func() error { return s.Write(ctx, answered) })

	// Another capture lands between the write and the SDK's second send:
	// the head then carries the other writer's token, the entry this
	// write's.
	op2, op3 := capture("op_2", 300, at.Add(4*time.Second)), capture("op_3", 100, at.Add(3*time.Second))
	l.meanwhile = func() {
		if err := l.plain.Write(ctx, request(psp, op3)); err != nil {
			t.Errorf("the other writer's capture: %v", err)
		}
	}
	lose(t, &l.armed, "capture requested while another landed", func() error { return s.Write(ctx, request(psp, op2)) })

	got, _ := ledger(t, s, psp, "op_1", "op_2", "op_3")
	seq := got.Seq
	lose(t, &l.armed, "sequence step", func() error {
		return s.Write(ctx, payments.Write{PSP: psp, SeqStep: 1, Expect: payments.Expect{Seq: &seq}, At: at.Add(5 * time.Second)})
	})
	got, _ = ledger(t, s, psp, "op_1", "op_2", "op_3")
	put := got
	put.Reference, put.Version, put.UpdatedAt = "order-changed", got.Version+1, at.Add(6*time.Second)
	putFact := payments.Fact{ID: "changed", At: put.UpdatedAt, Kind: "reference", Origin: payments.OriginAPI}
	lose(t, &l.armed, "head put from a version", func() error {
		return s.Write(ctx, payments.Write{PSP: psp, Put: &put, At: put.UpdatedAt, Facts: []payments.Fact{putFact}})
	})

	got, es := ledger(t, s, psp, "op_1", "op_2", "op_3")
	want := payments.Totals{Captured: 1200, CapturesInFlight: 400, Capturable: 1999 - 1200 - 400, Refundable: 1200}
	if got.Totals != want {
		t.Fatalf("Totals %+v, want %+v: a capture counted twice or not at all", got.Totals, want)
	}
	// created, 4 delta writes (op_1 twice, op_3, op_2), the step, the put.
	if got.Version != 7 || got.Seq != 2 || got.Reference != "order-changed" {
		t.Fatalf("head version %d, seq %d, reference %q; want 7, 2, order-changed", got.Version, got.Seq, got.Reference)
	}
	if e := byRef(es); len(e) != 3 || e["op_1"].Version != 2 || e["op_2"].Version != 1 || e["op_3"].Version != 1 {
		t.Fatalf("entries %+v, want op_1 (version 2), op_2 and op_3", es)
	}
	wantFacts := []string{"payment", "op_1#requested", "op_1#answered", "op_3#requested", "op_2#requested", "changed"}
	sameValue(t, "timeline", ids(timeline(t, s, psp, 4)), wantFacts)

	// Writes that really conflict still do.
	for name, w := range map[string]payments.Write{
		"the request again":         request(psp, op1),
		"the answer again":          answered,
		"the put again":             {PSP: psp, Put: &put, At: put.UpdatedAt},
		"the answer from before":    func() payments.Write { w, _ := answer(psp, op1, payments.Refused, at); return w }(),
		"the step from a stale seq": {PSP: psp, SeqStep: 1, Expect: payments.Expect{Seq: &seq}, At: at},
	} {
		if err := s.Write(ctx, w); !errors.Is(err, storeerr.ErrConflict) {
			t.Fatalf("%s: %v, want a conflict", name, err)
		}
	}
	if after, _ := ledger(t, s, psp, "op_1", "op_2", "op_3"); after.Version != 7 || after.Totals != want {
		t.Fatalf("after the conflicts: version %d, Totals %+v", after.Version, after.Totals)
	}
	if got, err := s.GetEntries(ctx, psp, "op_1"); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], op1a) {
		t.Fatalf("op_1 after the conflicts: %+v, %v; want %+v", got, err, op1a)
	}
}

// losing is a store on a fresh table whose client loses the answer of its
// next write once armed, and a plain store on the same table.
type losing struct {
	store, plain *dynamo.Store
	armed        atomic.Bool
	meanwhile    func() // see loseAnswer
	at           time.Time
}

func newLosing(t *testing.T) *losing {
	t.Helper()
	base, table := newTable(t)
	l := &losing{at: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
	client := dynamodb.New(base.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, loseAnswer(&l.armed, &l.meanwhile))
	})
	clk := clock.NewFake(l.at)
	l.store, l.plain = dynamo.New(client, table, clk), dynamo.New(base, table, clk)
	return l
}

// losingStore is a store on a fresh table whose client loses the answer
// of the next write once armed.
func losingStore(t *testing.T) (*dynamo.Store, *atomic.Bool, time.Time) {
	t.Helper()
	l := newLosing(t)
	return l.store, &l.armed, l.at
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

// TestVersionedWriteLostUnderAnotherWriters: a versioned write whose
// answer was lost, with other writers' versions landing on top of it
// before the SDK sent it again, is still reported done (the item
// remembers the writers of its last versions): the lost write's caller
// does not apply its change a second time. A CI run met it as 8
// concurrent increments of an event counting 9.
func TestVersionedWriteLostUnderAnotherWriters(t *testing.T) {
	ctx := context.Background()
	l := newLosing(t)
	s, at := l.store, l.at
	others := func(n int, write func(v int64) error) func() {
		return func() {
			for i := range n {
				if err := write(int64(i)); err != nil {
					t.Errorf("another writer's version: %v", err)
				}
			}
		}
	}

	d := webhooks.Delivery{ID: "msg_lost", MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "AUTHORISATION",
		Payload: []byte(`{}`), Status: webhooks.StatusPending, CreatedAt: at, UpdatedAt: at, Version: 1}
	if err := s.SaveDelivery(ctx, d, 0); err != nil {
		t.Fatal(err)
	}
	ours := d
	ours.Attempts, ours.Version = 1, 2
	l.meanwhile = others(3, func(i int64) error {
		o := ours
		o.Attempts, o.Version = 2+int(i), 3+i
		return l.plain.SaveDelivery(ctx, o, 2+i)
	})
	lose(t, &l.armed, "delivery update under 3 others", func() error { return s.SaveDelivery(ctx, ours, 1) })
	if got, err := s.GetDelivery(ctx, d.ID); err != nil || got.Version != 5 || got.Attempts != 4 {
		t.Fatalf("stored delivery: version %d, %d attempts, %v; want 5 and 4", got.Version, got.Attempts, err)
	}

	e := notifications.Event{ID: "evt_lost", Key: "k", PaymentPSP: "PSP1", Status: notifications.EventReceived, Received: 1,
		ReceivedAt: at, UpdatedAt: at, Version: 1}
	if err := s.SaveEvent(ctx, e, 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		unroutable bool
	}{{"event update", false}, {"unroutable event update", true}} {
		cur, err := s.GetEvent(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		ours := cur
		ours.Received, ours.Version = cur.Received+1, cur.Version+1
		if c.unroutable {
			ours.Status, ours.UnroutableAt = notifications.EventUnroutable, &at
		}
		l.meanwhile = others(2, func(i int64) error {
			o := ours
			o.Received, o.Version = ours.Received+1+int(i), ours.Version+1+i
			return l.plain.SaveEvent(ctx, o, ours.Version+i)
		})
		lose(t, &l.armed, c.name+" under 2 others", func() error { return s.SaveEvent(ctx, ours, cur.Version) })
		if got, err := s.GetEvent(ctx, e.ID); err != nil || got.Version != ours.Version+2 || got.Received != ours.Received+2 {
			t.Fatalf("%s: stored event version %d, received %d, %v; want %d and %d", c.name, got.Version, got.Received, err,
				ours.Version+2, ours.Received+2)
		}
	}

	// A write from a version others moved past is a conflict, however
	// many versions ago.
	for _, prev := range []int64{1, 2} {
		stale := d
		stale.Version = prev + 1
		if err := s.SaveDelivery(ctx, stale, prev); !errors.Is(err, storeerr.ErrConflict) {
			t.Fatalf("delivery save from version %d of 5 = %v, want a conflict", prev, err)
		}
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

// TestAPIKeyCreateWhoseAnswerWasLost: creating a key is one transaction
// of its two items; one DynamoDB applied but whose answer was lost, sent
// again by the SDK, is reported done (a CI run met "create api key …:
// store: conflict" for a fresh random ID), while another key with the same
// ID or hash still conflicts.
func TestAPIKeyCreateWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	s, armed, at := losingStore(t)
	if err := s.PutMerchant(ctx, tenant.Merchant{ID: "m_a", Name: "A", CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	k := tenant.APIKey{ID: "key_lost", Hash: "hash_lost", Hint: "…lost", MerchantID: "m_a", Environment: tenant.EnvTest,
		Permissions: tenant.AllPermissions, CreatedAt: at}
	lose(t, armed, "key create", func() error { return s.CreateAPIKey(ctx, k) })
	if got, err := s.GetAPIKeyByHash(ctx, k.Hash); err != nil || got.ID != k.ID {
		t.Fatalf("the key after its create: %+v, %v", got, err)
	}
	if keys, err := s.ListAPIKeys(ctx, "m_a"); err != nil || len(keys) != 1 {
		t.Fatalf("the merchant's keys: %+v, %v; want the one", keys, err)
	}
	sameID, sameHash := k, k
	sameID.Hash = "hash_other"
	sameHash.ID, sameHash.CreatedAt = "key_other", at.Add(time.Second)
	for name, other := range map[string]tenant.APIKey{"the same ID": sameID, "the same hash": sameHash} {
		if err := s.CreateAPIKey(ctx, other); !errors.Is(err, storeerr.ErrConflict) {
			t.Fatalf("another key with %s: %v, want a conflict", name, err)
		}
	}
	lose(t, armed, "key revoke", func() error { return s.RevokeAPIKey(ctx, "m_a", k.ID, at.Add(time.Minute)) })
	if got, err := s.GetAPIKeyByHash(ctx, k.Hash); err != nil || got.RevokedAt == nil || !got.RevokedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("the key after its revocation: %+v, %v", got, err)
	}
}
