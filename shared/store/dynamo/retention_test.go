package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/clock"
	"github.com/yp/paysvc/shared/notifications"
	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/store"
	"github.com/yp/paysvc/shared/store/dynamo"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/webhooks"
)

var tRetain = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// items returns every item of partition pk, by sort key.
func items(t *testing.T, client *dynamodb.Client, table, pk string) map[string]map[string]types.AttributeValue {
	t.Helper()
	out, err := client.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]map[string]types.AttributeValue{}
	for _, it := range out.Items {
		m[it["sk"].(*types.AttributeValueMemberS).Value] = it
	}
	return m
}

func ttlOf(t *testing.T, item map[string]types.AttributeValue) int64 {
	t.Helper()
	v, ok := item["ttl"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item %v has no ttl", item["sk"])
	}
	n, _ := strconv.ParseInt(v.Value, 10, 64)
	return n
}

// Every item of a payment carries a ttl, none before its head's
// (CreatedAt + PaymentRetention: the items written with the head carry
// exactly that); a payment past its retention reads as absent, and a
// write to it conflicts, before DynamoDB's TTL deletes it; a new payment
// under the same pspReference then starts clean — none of the expired
// one's entries or facts are its.
func TestPaymentItemsExpire(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(tRetain)
	s := dynamo.New(client, table, clk)
	h := authorised("PSP1", tRetain)
	write(t, s, created(h))
	op1 := capture("op_1", 500, tRetain)
	write(t, s, request("PSP1", op1))
	clk.Advance(time.Hour)
	w, _ := answer("PSP1", op1, payments.Received, clk.Now())
	write(t, s, w)
	got, _ := ledger(t, s, "PSP1", "op_1")

	all := items(t, client, table, "PAYMENT#PSP1")
	want := tRetain.Add(store.PaymentRetention).Unix()
	payment, requested := "F#"+tRetain.Format("2006-01-02T15:04:05.000000000Z")+"#0#payment", "F#"+tRetain.Format("2006-01-02T15:04:05.000000000Z")+"#2#op_1#requested"
	answered := "F#" + clk.Now().Format("2006-01-02T15:04:05.000000000Z") + "#3#op_1#answered"
	if len(all) != 5 || all["HEAD"] == nil || all["E#op_1"] == nil || all[payment] == nil || all[requested] == nil || all[answered] == nil {
		t.Fatalf("items %s; want HEAD, E#op_1 and three facts", keys(all))
	}
	for sk, it := range all {
		if ttlOf(t, it) < want {
			t.Fatalf("%s: ttl %d, before the payment's %d", sk, ttlOf(t, it), want)
		}
	}
	for _, sk := range []string{"HEAD", payment, requested} {
		if ttlOf(t, all[sk]) != want {
			t.Fatalf("%s: ttl %d, want the payment's %d", sk, ttlOf(t, all[sk]), want)
		}
	}

	clk.Set(tRetain.Add(store.PaymentRetention - time.Second))
	if _, err := s.GetPayment(ctx, "PSP1"); err != nil {
		t.Fatalf("GetPayment just before the end of retention: %v", err)
	}
	clk.Set(tRetain.Add(store.PaymentRetention))
	if _, err := s.GetPayment(ctx, "PSP1"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("GetPayment past retention: %v, want ErrNotFound", err)
	}
	late := got
	late.Reference, late.Version = "order-late", got.Version+1
	for name, w := range map[string]payments.Write{
		"a capture":   request("PSP1", capture("op_2", 100, clk.Now())),
		"a head put":  {PSP: "PSP1", Put: &late, At: clk.Now()},
		"a fact only": {PSP: "PSP1", At: clk.Now(), Facts: []payments.Fact{{ID: "late", At: clk.Now(), Kind: "late"}}},
	} {
		if err := s.Write(ctx, w); !errors.Is(err, storeerr.ErrConflict) {
			t.Fatalf("%s on a payment past retention: %v, want a conflict", name, err)
		}
	}

	again := authorised("PSP1", clk.Now())
	again.Reference = "order-again"
	write(t, s, created(again))
	fresh, es := ledger(t, s, "PSP1", "op_1", "op_2")
	sameValue(t, "the new payment", fresh, again)
	if len(es) != 0 {
		t.Fatalf("the new payment has the expired one's entries: %+v", es)
	}
	sameValue(t, "the new payment's timeline", ids(timeline(t, s, "PSP1", 10)), []string{"payment"})
	if now := items(t, client, table, "PAYMENT#PSP1"); len(now) != 2 || now["HEAD"] == nil {
		t.Fatalf("items %s; want the new payment's HEAD and fact", keys(now))
	}
	if n := ttlOf(t, items(t, client, table, "PAYMENT#PSP1")["HEAD"]); n != clk.Now().Add(store.PaymentRetention).Unix() {
		t.Fatalf("the new payment's ttl %d", n)
	}
	// It is a payment like any other.
	write(t, s, request("PSP1", capture("op_1", 100, clk.Now())))
	if h, _ := ledger(t, s, "PSP1", "op_1"); h.Totals.CapturesInFlight != 100 || h.Version != 2 {
		t.Fatalf("the new payment after a capture: %+v, version %d", h.Totals, h.Version)
	}
}

// Notification events and webhook deliveries carry their retention as ttl.
func TestEventAndDeliveryItemsExpire(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	s := dynamo.New(client, table, clock.NewFake(tRetain))
	ev := notifications.Event{ID: "evt_1", PaymentPSP: "PSP1", Status: notifications.EventReceived, ReceivedAt: tRetain, UpdatedAt: tRetain, Version: 1}
	if err := s.SaveEvent(ctx, ev, 0); err != nil {
		t.Fatal(err)
	}
	d := webhooks.Delivery{ID: "dlv_1", MerchantID: "m_a", SubscriptionID: "sub_1", EventID: "evt_1", Status: webhooks.StatusPending, CreatedAt: tRetain, UpdatedAt: tRetain, Version: 1}
	if err := s.SaveDelivery(ctx, d, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := ttlOf(t, items(t, client, table, "EVENT#evt_1")["META"]), tRetain.Add(store.EventRetention).Unix(); got != want {
		t.Fatalf("event ttl %d, want %d", got, want)
	}
	if got, want := ttlOf(t, items(t, client, table, "DELIVERY#dlv_1")["META"]), tRetain.Add(store.DeliveryRetention).Unix(); got != want {
		t.Fatalf("delivery ttl %d, want %d", got, want)
	}
}

func keys(m map[string]map[string]types.AttributeValue) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}

// A merchant's event history is spread over its shards (a hash of the
// event id), every entry expires EventRetention after the event's first
// arrival, and the listing merges the shards newest first.
func TestMerchantEventItemsShardedAndExpiring(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	const shards = 4
	s := dynamo.New(client, table, clock.NewFake(tRetain), dynamo.WithEventLogShards(shards))
	var want []string
	for i := range 12 {
		e := notifications.MerchantEvent{ID: "evt_" + strconv.Itoa(10+i), MerchantID: "m_a", EventCode: "AUTHORISATION",
			PSPReference: "PSP" + strconv.Itoa(i), PaymentPSP: "PSP" + strconv.Itoa(i), Payload: json.RawMessage(`{"live":"false"}`),
			CreatedAt: tRetain.Add(time.Duration(i) * time.Minute)}
		if err := s.PutMerchantEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append([]string{e.ID}, want...)
	}
	used, n := 0, 0
	for shard := range shards {
		got := items(t, client, table, dynamo.EventLogShardPartition("m_a", shard))
		if len(got) > 0 {
			used++
		}
		for sk, it := range got {
			n++
			at, err := time.Parse("2006-01-02T15:04:05.000000000Z", strings.SplitN(sk, "#", 2)[0])
			if err != nil {
				t.Fatalf("sort key %q: %v", sk, err)
			}
			if ttlOf(t, it) != at.Add(store.EventRetention).Unix() {
				t.Fatalf("%s: ttl %d, want %d", sk, ttlOf(t, it), at.Add(store.EventRetention).Unix())
			}
		}
	}
	if n != 12 || used < 2 {
		t.Fatalf("%d items over %d of %d shards, want 12 over several", n, used, shards)
	}
	if old := items(t, client, table, "EVENTLOG#m_a"); len(old) != 0 {
		t.Fatalf("items in the unsharded partition: %v", keys(old))
	}
	got, err := s.ListMerchantEvents(ctx, "m_a", notifications.EventQuery{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != strings.Join(want[:5], ",") {
		t.Fatalf("newest five %v, want %v", ids, want[:5])
	}
}
