package capacity

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/store/dynamo"
)

func TestShardsFor(t *testing.T) {
	for _, tc := range []struct {
		wcu  float64
		want int
	}{{0, 1}, {500, 1}, {501, 2}, {15_758, 32}, {16_001, 64}, {61_444, 128}} {
		if got := ShardsFor(tc.wcu); got != tc.want {
			t.Errorf("ShardsFor(%.0f) = %d, want %d", tc.wcu, got, tc.want)
		}
	}
}

// The meter finds a hot key: the old layout put every idempotency record
// of a merchant in one partition.
func TestMeterFindsHotKey(t *testing.T) {
	m := NewMeter()
	m.At(0)
	for i := range 1200 {
		m.Put(nil, dynamo.Item{
			"pk": &types.AttributeValueMemberS{Value: "IDEM#m_big"},
			"sk": &types.AttributeValueMemberS{Value: "KEY#" + strings.Repeat("k", i%30)},
		})
	}
	m.Close()
	err := m.Result().Check()
	if err == nil || !strings.Contains(err.Error(), "table IDEM#m_big: 1200 WCU/s in second 0") {
		t.Fatalf("Check: %v", err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// DynamoDB's rounding: writes per KB of the larger image, a GSI key move
// costs a delete and an insert, reads per 4 KB (half when eventually
// consistent), at least one unit.
func TestMeterRounding(t *testing.T) {
	item := func(gsi1sk string, pad int) dynamo.Item {
		it := dynamo.Item{"pk": s("DELIVERY#d1"), "sk": s("META"), "gsi1pk": s("MERCHANT#m#DELIVERIES#3"), "gsi1sk": s(gsi1sk)}
		it["data"] = s(strings.Repeat("x", pad-dynamo.ItemSize(it)-len("data")))
		return it
	}
	m := NewMeter()
	m.At(0)
	m.Put(nil, item("DELIVERY#pending#1", 1024))                              // 1 + gsi 1
	m.Put(item("DELIVERY#pending#1", 1024), item("DELIVERY#pending#1", 1025)) // 2 + gsi in place 2
	m.Put(item("DELIVERY#pending#1", 1025), item("DELIVERY#delivered#1", 3000))
	// table 3, gsi delete 2 + insert 3
	m.Get(item("x", 4097))                            // 2
	m.Query("gsi1", "MERCHANT#m#DELIVERIES#3", false) // 0.5
	m.Close()
	r := m.Result()
	if got := r.ByIndex[Table]; got.W != 6 || got.R != 2 {
		t.Errorf("table: %+v, want 6 WCU, 2 RCU", got)
	}
	if got := r.ByIndex["gsi1"]; got.W != 8 || got.R != 0.5 {
		t.Errorf("gsi1: %+v, want 8 WCU, 0.5 RCU", got)
	}
}

func TestItemSize(t *testing.T) {
	for _, tc := range []struct {
		item dynamo.Item
		want int
	}{
		{dynamo.Item{"pk": s("ab")}, 4},
		{dynamo.Item{"n": n("123.4500")}, 1 + 3 + 1},     // 5 significant digits
		{dynamo.Item{"n": n("1772445600.5")}, 1 + 6 + 1}, // 11 digits
		{dynamo.Item{"n": n("-0.000100")}, 1 + 1 + 1},    // 1 digit
		{dynamo.Item{"m": &types.AttributeValueMemberBOOL{}}, 2},
	} {
		if got := dynamo.ItemSize(tc.item); got != tc.want {
			t.Errorf("ItemSize(%v) = %d, want %d", tc.item, got, tc.want)
		}
	}
}
