package capacity

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// with is it with string attributes attrs added.
func with(it dynamo.Item, attrs map[string]string) dynamo.Item {
	for k, v := range attrs {
		it[k] = &types.AttributeValueMemberS{Value: v}
	}
	return it
}

// A recorded request's keys are rewritten for the simulated request: the
// trace's tenant, payment i's record, a name of its own for every other
// per-request item, write-sharded partitions drawn again as the adapter
// draws them, a query's shard kept; a key family without a rule fails.
func TestTemplatedKeys(t *testing.T) {
	r := &replay{mix: FullMix(), deliveryShards: dynamo.DeliveryShards, eventShards: dynamo.EventLogShards}
	tp := &templ{r: r, label: ReqCaptures, i: 42, names: map[string]string{}}
	for _, tc := range []struct {
		attr, recorded, pk, want string
	}{
		{"pk", "PAYMENT#JKXTC4E2VWZBE7KA", "", "PAYMENT#" + psp(42)},
		{"pk", "PAYMENT#pending_1a2d9c", "", "PAYMENT#pending_" + psp(42)},
		{"pk", "PAYMENT#pending_action_840cbe", "", "PAYMENT#pending_action_" + psp(42)},
		{"gsi1pk", "PAYMENT#JKXTC4E2VWZBE7KA", "EVENT#x", "PAYMENT#" + psp(42)},
		{"pk", "IDEM#m_demo#rt-cap-17958-0", "", "IDEM#" + traceMerchant + "#" + idemKey(42, ReqCaptures)},
		{"pk", "EVENT#evt_9a78", "", "EVENT#" + ReqCaptures + "/42/0"},
		{"pk", "DELIVERY#msg_mrw6", "", "DELIVERY#" + ReqCaptures + "/42/1"},
		{"pk", "EVENT#evt_9a78", "", "EVENT#" + ReqCaptures + "/42/0"}, // the same item, the same name
		{"gsi1pk", "INFLIGHT#21", "PAYMENT#" + psp(42), dynamo.InFlightPartition(psp(42))},
		{"gsi2pk", "MERCHANT#m_demo#DELIVERIES#7", "DELIVERY#d", dynamo.DeliveryIndexPartition(traceMerchant, "DELIVERY#d", dynamo.DeliveryShards)},
		{"query", "MERCHANT#m_demo#DELIVERIES#7", "", "MERCHANT#" + traceMerchant + "#DELIVERIES#7"},
		{"query", "EVENTLOG#m_demo#5", "", "EVENTLOG#" + traceMerchant + "#5"},
		{"pk", "MERCHANT#m_demo", "", "MERCHANT#" + traceMerchant},
		{"pk", "APIKEY#6b0db5", "", "APIKEY#" + traceKeyID},
		{"pk", "SITE#site_demo", "", "SITE#" + traceSite},
	} {
		got, err := tp.key(tc.attr, tc.recorded, tc.pk)
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %q, %v; want %q", tc.attr, tc.recorded, got, err, tc.want)
		}
	}
	// A history entry's shard is drawn from its own name: entries of
	// different simulated requests spread over the merchant's shards.
	shards := map[string]bool{}
	for i := range 64 {
		tp := &templ{r: r, label: "notification CAPTURE", i: i, names: map[string]string{}}
		got, err := tp.key("pk", "EVENTLOG#m_demo#0", "")
		if err != nil || !strings.HasPrefix(got, "EVENTLOG#"+traceMerchant+"#") {
			t.Fatalf("history entry: %q, %v", got, err)
		}
		shards[got] = true
	}
	if len(shards) < 16 {
		t.Errorf("64 history entries on %d shards of %d", len(shards), dynamo.EventLogShards)
	}
	if _, err := tp.key("pk", "NEWFAMILY#x", ""); err == nil {
		t.Error("a key family without a rule was templated")
	}
	// An item's keys are rewritten together; its other attributes stay.
	it, err := tp.item(with(keyOnly("DELIVERY#msg_1", "META"), map[string]string{"gsi2pk": "MERCHANT#m_demo#DELIVERIES#0", "st": "pending"}))
	if err != nil {
		t.Fatal(err)
	}
	pk, sk := dynamo.Keys(it)
	if g2, _, _ := dynamo.IndexKey(with(it, map[string]string{"gsi2sk": "t"}), "gsi2"); sk != "META" ||
		g2 != dynamo.DeliveryIndexPartition(traceMerchant, pk, dynamo.DeliveryShards) || it["st"].(*types.AttributeValueMemberS).Value != "pending" {
		t.Errorf("templated item %v", it)
	}
}

// Run replays only a merchant shaped as the recorded one, and only request
// kinds that were recorded.
func TestRunNeedsMatchingRecordings(t *testing.T) {
	mix := SmallMix()
	mix.Rate = 10
	rec := &Recordings{Requests: map[string][][]Recorded{ReqPayments: {{}}}, Subscriptions: mix.Subscriptions,
		DeliveryShards: dynamo.DeliveryShards, EventShards: dynamo.EventLogShards}
	for _, tc := range []struct {
		name string
		rec  *Recordings
		want string
	}{
		{"none", nil, "no recordings"},
		{"other subscriptions", &Recordings{Requests: rec.Requests, Subscriptions: 1, DeliveryShards: rec.DeliveryShards, EventShards: rec.EventShards}, "subscriptions"},
		{"other shards", &Recordings{Requests: rec.Requests, Subscriptions: rec.Subscriptions, DeliveryShards: 1, EventShards: 1}, "listing shards"},
		{"a kind not recorded", rec, "no recorded request of"},
	} {
		if _, err := Run(mix, tc.rec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
