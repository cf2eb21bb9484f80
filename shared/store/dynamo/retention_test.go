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
	"github.com/yp/paysvc/shared/money"
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

func record(psp string) payments.Payment {
	return payments.Payment{
		PSPReference: psp, MerchantID: "m_a", SiteID: "site_1", Source: payments.SourceAdvanced,
		Amount: money.Amount{Value: 100, Currency: "EUR"}, State: payments.StateAuthorised,
		History: []payments.Event{{At: tRetain, Kind: "payment", Origin: "api"}}, Version: 1, CreatedAt: tRetain, UpdatedAt: tRetain,
	}
}

// The payment's META item holds no history (each entry is its own item),
// every item of the record expires PaymentRetention after its creation,
// and a record past it reads as absent and can be created again.
func TestPaymentItemsBoundedAndExpiring(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	clk := clock.NewFake(tRetain)
	s := dynamo.New(client, table, clk)
	p := record("PSP1")
	if err := s.SavePayment(ctx, p, 0); err != nil {
		t.Fatal(err)
	}
	p.History = append(p.History, payments.Event{At: tRetain, Kind: "capture", Origin: "api"})
	p.Version = 2
	if err := s.SavePayment(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	got := items(t, client, table, "PAYMENT#PSP1")
	want := tRetain.Add(store.PaymentRetention).Unix()
	if len(got) != 3 || got["META"] == nil || got["H#0000000000"] == nil || got["H#0000000001"] == nil {
		t.Fatalf("items %v, want META and two history items", keys(got))
	}
	for sk, it := range got {
		if ttlOf(t, it) != want {
			t.Fatalf("%s: ttl %d, want %d", sk, ttlOf(t, it), want)
		}
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(got["META"]["data"].(*types.AttributeValueMemberS).Value), &meta); err != nil {
		t.Fatal(err)
	}
	if meta["history"] != nil {
		t.Fatalf("META data holds the history: %v", meta["history"])
	}

	clk.Set(tRetain.Add(store.PaymentRetention))
	if _, err := s.GetPayment(ctx, "PSP1"); !errors.Is(err, storeerr.ErrNotFound) {
		t.Fatalf("GetPayment past retention: %v, want ErrNotFound", err)
	}
	again := record("PSP1")
	again.CreatedAt = clk.Now()
	if err := s.SavePayment(ctx, again, 0); err != nil {
		t.Fatalf("create over an expired record: %v", err)
	}
	p2, err := s.GetPayment(ctx, "PSP1")
	if err != nil || len(p2.History) != 1 || p2.Version != 1 {
		t.Fatalf("recreated record: %+v, %v", p2, err)
	}
}

// A record written before history items (its history inline in data) is
// read as it is and converted on its next save, losing nothing.
func TestPaymentInlineHistoryConverted(t *testing.T) {
	ctx := context.Background()
	client, table := newTable(t)
	s := dynamo.New(client, table, clock.NewFake(tRetain))
	old := record("PSP1")
	old.History = append(old.History, payments.Event{At: tRetain, Kind: "details", Origin: "api"})
	raw, _ := json.Marshal(old)
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "PAYMENT#PSP1"}, "sk": &types.AttributeValueMemberS{Value: "META"},
		"data": &types.AttributeValueMemberS{Value: string(raw)}, "version": &types.AttributeValueMemberN{Value: "1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.GetPayment(ctx, "PSP1")
	if err != nil || len(p.History) != 2 {
		t.Fatalf("legacy record: %+v, %v", p, err)
	}
	p.History = append(p.History, payments.Event{At: tRetain, Kind: "capture", Origin: "api"})
	p.Version = 2
	if err := s.SavePayment(ctx, p, 1); err != nil {
		t.Fatal(err)
	}
	p, err = s.GetPayment(ctx, "PSP1")
	if err != nil || len(p.History) != 3 || p.History[1].Kind != "details" || p.History[2].Kind != "capture" {
		t.Fatalf("converted record: %+v, %v", p.History, err)
	}
	if got := items(t, client, table, "PAYMENT#PSP1"); len(got) != 4 {
		t.Fatalf("items %v, want META and three history items", keys(got))
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
