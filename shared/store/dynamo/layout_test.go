package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/idempotency"
	"github.com/yp/paysvc/shared/money"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 123456789, time.UTC)

func rawGet(t *testing.T, client *dynamodb.Client, table, pk, sk string) dynamo.Item {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: dynamo.Item{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
	})
	if err != nil {
		t.Fatalf("GetItem %s/%s: %v", pk, sk, err)
	}
	return out.Item
}

func rawPut(t *testing.T, client *dynamodb.Client, table string, it dynamo.Item) {
	t.Helper()
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
}

// withWriteToken checks that stored names the call that wrote it (a
// random token, for which built, the builder's item, has a placeholder of
// the same length), copies the token into built and returns stored.
func withWriteToken(t *testing.T, what string, stored, built dynamo.Item) dynamo.Item {
	t.Helper()
	wt, _ := stored["wt"].(*types.AttributeValueMemberS)
	if wt == nil || len(wt.Value) != 24 || wt.Value == "000000000000000000000000" {
		t.Errorf("%s write token %v, want 24 random hex digits", what, stored["wt"])
	} else {
		built["wt"] = wt
	}
	return stored
}

func sameItem(t *testing.T, what string, got, want dynamo.Item) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: stored item differs from its builder's\n got  %v\n want %v", what, dump(got), dump(want))
	}
	if dynamo.ItemSize(got) != dynamo.ItemSize(want) {
		t.Errorf("%s: stored %d bytes, builder %d", what, dynamo.ItemSize(got), dynamo.ItemSize(want))
	}
}

func dump(it dynamo.Item) string {
	var b strings.Builder
	for k, v := range it {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			fmt.Fprintf(&b, "%s=S(%.40s) ", k, v.Value)
		case *types.AttributeValueMemberN:
			fmt.Fprintf(&b, "%s=N(%s) ", k, v.Value)
		default:
			fmt.Fprintf(&b, "%s=%T ", k, v)
		}
	}
	return b.String()
}

// What the adapter's updates leave stored is what the exported builders
// return, so the capacity model (shared/capacity) sizes the real items.
func TestItemBuildersMatchStoredItems(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(t0)
	s := dynamo.New(client, table, clk, dynamo.WithDeliveryShards(8), dynamo.WithEventLogShards(4))

	rec := idempotency.Record{
		Scope: "m_1", Key: "key-1", Fingerprint: "fp", Status: idempotency.StatusInProgress, LeaseToken: "tok",
		LeaseUntil: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour),
	}
	if _, err := s.Claim(ctx, rec, t0); err != nil {
		t.Fatal(err)
	}
	claimed, _ := dynamo.IdempotencyItem(rec)
	pk, sk := dynamo.Keys(claimed)
	if pk != "IDEM#m_1#key-1" || sk != "KEY" {
		t.Fatalf("idempotency key %s / %s, want its own partition IDEM#m_1#key-1 / KEY", pk, sk)
	}
	sameItem(t, "claimed record", rawGet(t, client, table, pk, sk), claimed)
	resp := idempotency.Response{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"ok":true}`)}
	if err := s.Complete(ctx, rec.Scope, rec.Key, rec.LeaseToken, resp, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	done := rec
	done.Status, done.LeaseToken, done.Response, done.ExpiresAt = idempotency.StatusCompleted, "", &resp, t0.Add(2*time.Hour)
	completed, _ := dynamo.IdempotencyItem(done)
	sameItem(t, "completed record", rawGet(t, client, table, pk, sk), completed)

	exp := t0.Add(time.Minute)
	for range 3 {
		if ok, err := s.Hit(ctx, "rl#k#1", 10, exp); !ok || err != nil {
			t.Fatalf("Hit: %v %v", ok, err)
		}
	}
	window := dynamo.RateWindowItem("rl#k#1", 3, exp)
	pk, sk = dynamo.Keys(window)
	sameItem(t, "rate-limit window", withWriteToken(t, "rate-limit window", rawGet(t, client, table, pk, sk), window), window)

	d := webhooks.Delivery{ID: "msg_1", MerchantID: "m_1", SubscriptionID: "sub_1", EventID: "evt_1", EventCode: "AUTHORISATION",
		Payload: json.RawMessage(`{"live":"false"}`), Status: webhooks.StatusPending, CreatedAt: t0, UpdatedAt: t0, Version: 1}
	if err := s.SaveDelivery(ctx, d, 0); err != nil {
		t.Fatal(err)
	}
	delivery, _ := dynamo.DeliveryItem(d, 8)
	pk, sk = dynamo.Keys(delivery)
	sameItem(t, "delivery", withWriteToken(t, "delivery", rawGet(t, client, table, pk, sk), delivery), delivery)
	if ipk, _, _ := dynamo.IndexKey(delivery, "gsi1"); !strings.HasPrefix(ipk, "MERCHANT#m_1#DELIVERIES#") {
		t.Errorf("delivery gsi1pk %q, want a shard of MERCHANT#m_1#DELIVERIES#", ipk)
	}

	// A payment record: its META item as the last save left it, and one
	// item per history entry, each as its builder returns it.
	amount := money.Amount{Value: 100, Currency: "EUR"}
	p := payments.Payment{PSPReference: "PSP_1", MerchantID: "m_1", SiteID: "s_1", Amount: amount, State: payments.StateAuthorised,
		Version: 1, CreatedAt: t0, UpdatedAt: t0, History: []payments.Event{{At: t0, Kind: "payment", Origin: "api", PSPReference: "PSP_1"}}}
	if err := s.SavePayment(ctx, p, 0); err != nil {
		t.Fatal(err)
	}
	p.History = append(p.History, payments.Event{At: t0.Add(time.Second), Kind: "capture", Origin: "api", PSPReference: "CAP_1", Amount: &amount})
	p.State, p.CapturedValue, p.Version, p.UpdatedAt = payments.StateCaptured, 100, 2, t0.Add(time.Second)
	if err := s.SavePayment(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	meta, _ := dynamo.PaymentItem(p)
	pk, sk = dynamo.Keys(meta)
	if pk != "PAYMENT#PSP_1" || sk != "META" {
		t.Fatalf("payment META key %s / %s", pk, sk)
	}
	sameItem(t, "payment META", withWriteToken(t, "payment META", rawGet(t, client, table, pk, sk), meta), meta)
	for i := range p.History {
		h, err := dynamo.PaymentHistoryItem(p, i)
		if err != nil {
			t.Fatal(err)
		}
		hpk, hsk := dynamo.Keys(h)
		if hpk != pk || hsk != fmt.Sprintf("H#%010d", i) {
			t.Fatalf("history item %d key %s / %s", i, hpk, hsk)
		}
		sameItem(t, fmt.Sprintf("payment history item %d", i), rawGet(t, client, table, hpk, hsk), h)
	}

	// A merchant event: in its shard of the merchant's event history.
	me := notifications.MerchantEvent{ID: "evt_1", MerchantID: "m_1", EventCode: "CAPTURE", PSPReference: "CAP_1", PaymentPSP: "PSP_1",
		Payload: json.RawMessage(`{"live":"false"}`), CreatedAt: t0}
	if err := s.PutMerchantEvent(ctx, me); err != nil {
		t.Fatal(err)
	}
	logged, err := dynamo.MerchantEventItem(me, 4)
	if err != nil {
		t.Fatal(err)
	}
	pk, sk = dynamo.Keys(logged)
	if pk != dynamo.EventLogPartition("m_1", "evt_1", 4) || !strings.HasPrefix(pk, "EVENTLOG#m_1#") {
		t.Fatalf("merchant event partition %s", pk)
	}
	sameItem(t, "merchant event", rawGet(t, client, table, pk, sk), logged)
}

// A payment item over DynamoDB's 400 KB is refused with an error that
// says so. (A record's history cannot make it so: each entry is its own
// item beside META.)
func TestSavePaymentRefusesOversizeItem(t *testing.T) {
	client, table := newTable(t)
	s := dynamo.New(client, table, clock.NewFake(t0))
	amount := money.Amount{Value: 100, Currency: "EUR"}
	p := payments.Payment{PSPReference: "PSP_BIG", MerchantID: "m_1", SiteID: "s_1", Amount: amount, Version: 1, CreatedAt: t0, UpdatedAt: t0,
		RefusalReason: strings.Repeat("x", dynamo.MaxItemBytes)}
	err := s.SavePayment(context.Background(), p, 0)
	if err == nil || !strings.Contains(err.Error(), "exceeds DynamoDB's 409600-byte limit") {
		t.Fatalf("SavePayment of an oversize record: %v", err)
	}
	if _, err := s.GetPayment(context.Background(), "PSP_BIG"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("oversize record written: %v", err)
	}
}

// MigrateKeys moves a table written with the previous layout (one
// partition per merchant's idempotency records, unsharded delivery index)
// to the current one, and a second run has nothing to do.
func TestMigrateKeys(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(t0)
	s := dynamo.New(client, table, clk, dynamo.WithDeliveryShards(8))

	legacy := func(rec idempotency.Record) {
		it, err := dynamo.IdempotencyItem(rec)
		if err != nil {
			t.Fatal(err)
		}
		it["pk"], it["sk"] = &types.AttributeValueMemberS{Value: "IDEM#" + rec.Scope}, &types.AttributeValueMemberS{Value: "KEY#" + rec.Key}
		rawPut(t, client, table, it)
	}
	resp := &idempotency.Response{Status: 200, Body: []byte(`{"resultCode":"Authorised"}`)}
	done := idempotency.Record{Scope: "m_1", Key: "done", Fingerprint: "fp1", Status: idempotency.StatusCompleted,
		LeaseUntil: t0, ExpiresAt: t0.Add(time.Hour), Response: resp}
	legacy(done)
	legacy(idempotency.Record{Scope: "m_1", Key: "raced", Fingerprint: "old", Status: idempotency.StatusCompleted,
		LeaseUntil: t0, ExpiresAt: t0.Add(time.Hour), Response: resp})
	// A claim of "raced" made after the deploy, before the migration: it wins.
	if _, err := s.Claim(ctx, idempotency.Record{Scope: "m_1", Key: "raced", Fingerprint: "new", Status: idempotency.StatusInProgress,
		LeaseToken: "t", LeaseUntil: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour)}, t0); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d := webhooks.Delivery{ID: fmt.Sprintf("msg_%d", i), MerchantID: "m_1", SubscriptionID: "sub_1", EventID: "evt",
			Payload: json.RawMessage(`{}`), Status: webhooks.StatusFailed, CreatedAt: t0.Add(time.Duration(i) * time.Second),
			UpdatedAt: t0, Version: 3}
		it, err := dynamo.DeliveryItem(d, 8)
		if err != nil {
			t.Fatal(err)
		}
		it["gsi1pk"] = &types.AttributeValueMemberS{Value: "MERCHANT#m_1"} // the unsharded index key
		rawPut(t, client, table, it)
	}
	if got, _ := s.ListDeliveries(ctx, "m_1", webhooks.StatusFailed, 10); len(got) != 0 {
		t.Fatalf("before the migration the sharded listing sees %d old deliveries, want 0", len(got))
	}

	rep, err := s.MigrateKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.IdempotencyMoved != 1 || rep.IdempotencyKept != 1 || rep.DeliveriesIndexed != 3 {
		t.Fatalf("report %+v, want 1 record moved, 1 kept (new claim), 3 deliveries indexed", rep)
	}
	got, err := s.Claim(ctx, idempotency.Record{Scope: "m_1", Key: "done", Fingerprint: "fp1", Status: idempotency.StatusInProgress,
		LeaseToken: "t2", LeaseUntil: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour)}, t0)
	if !errors.Is(err, storeerr.ErrConflict) || got.Status != idempotency.StatusCompleted || got.Response == nil ||
		string(got.Response.Body) != string(resp.Body) {
		t.Fatalf("claim of a migrated completed key: %+v, %v; want the stored response", got, err)
	}
	raced, err := s.Claim(ctx, idempotency.Record{Scope: "m_1", Key: "raced", Fingerprint: "x", LeaseToken: "t3",
		LeaseUntil: t0.Add(time.Minute), ExpiresAt: t0.Add(time.Hour)}, t0)
	if !errors.Is(err, storeerr.ErrConflict) || raced.Fingerprint != "new" {
		t.Fatalf("the claim made after the deploy was overwritten: %+v, %v", raced, err)
	}
	if old := rawGet(t, client, table, "IDEM#m_1", "KEY#done"); len(old) != 0 {
		t.Fatalf("old record kept: %v", dump(old))
	}
	ds, err := s.ListDeliveries(ctx, "m_1", webhooks.StatusFailed, 10)
	if err != nil || len(ds) != 3 || ds[0].ID != "msg_2" {
		t.Fatalf("after the migration: %d deliveries (%v), want the 3, newest first", len(ds), err)
	}
	again, err := s.MigrateKeys(ctx)
	if err != nil || again.IdempotencyMoved+again.IdempotencyKept+again.DeliveriesIndexed+again.DeliveriesChanged != 0 {
		t.Fatalf("second run: %+v, %v; want nothing to do", again, err)
	}
}
