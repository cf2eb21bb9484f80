package capacity

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A call the adapter makes and the same call metered by the model have
// one shape.
func TestShapeOfAdapterCallsAndMeteredCalls(t *testing.T) {
	key := func(pk, sk string) map[string]types.AttributeValue { return keyOnly(pk, sk) }
	for _, tc := range []struct {
		name   string
		params any
		meter  func(m *Meter)
		want   string
	}{
		{"put", &dynamodb.PutItemInput{Item: key("IDEM#m#k", "IDEM")},
			func(m *Meter) { m.Put(nil, keyOnly("IDEM#m#k", "IDEM")) }, "write table IDEM"},
		{"update", &dynamodb.UpdateItemInput{Key: key("RATE#rl#k#1#s0", "RATE")},
			func(m *Meter) { m.Put(keyOnly("RATE#rl#k#1#s0", "RATE"), keyOnly("RATE#rl#k#1#s0", "RATE")) }, "write table RATE"},
		{"failed conditional put", &dynamodb.PutItemInput{Item: key("IDEM#m#k", "IDEM")},
			func(m *Meter) { m.FailedPut(keyOnly("IDEM#m#k", "IDEM")) }, "write table IDEM"},
		{"delete", &dynamodb.DeleteItemInput{Key: key("IDEM#m#k", "IDEM")},
			func(m *Meter) { m.Put(keyOnly("IDEM#m#k", "IDEM"), nil) }, "write table IDEM"},
		{"get", &dynamodb.GetItemInput{Key: key("EVENT#e", "EVENT")},
			func(m *Meter) { m.Get(keyOnly("EVENT#e", "EVENT")) }, "get table EVENT"},
		{"batch get of one partition", &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			"t": {Keys: []map[string]types.AttributeValue{key("PAYMENT#p", "HEAD"), key("PAYMENT#p", "META")}}}},
			func(m *Meter) { m.BatchGet(keyOnly("PAYMENT#p", "HEAD"), keyOnly("PAYMENT#p", "META")) }, "batchget table PAYMENT"},
		{"transaction of two families", &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{Key: key("PAYMENT#p", "HEAD")}}, {Put: &types.Put{Item: key("PAYMENT#p", "E#op")}},
			{Put: &types.Put{Item: key("IDEM#m#k", "IDEM")}}}},
			func(m *Meter) {
				m.TransactWrite(Write{New: keyOnly("PAYMENT#p", "HEAD")}, Write{New: keyOnly("PAYMENT#p", "E#op")}, Write{New: keyOnly("IDEM#m#k", "IDEM")})
			}, "transact table IDEM + table PAYMENT"},
		{"query of an index", &dynamodb.QueryInput{IndexName: aws.String("gsi2"), KeyConditionExpression: aws.String("#pk = :pk AND #sk > :after"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "MERCHANT#m#DELIVERIES#3"}}},
			func(m *Meter) { m.Query("gsi2", "MERCHANT#m#DELIVERIES#3", false) }, "query gsi2 MERCHANT"},
	} {
		got, ok := ShapeOf(tc.params)
		if !ok || got != tc.want {
			t.Errorf("%s: ShapeOf = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
		m := NewMeter()
		tc.meter(m)
		if sh := m.TakeShapes(); len(sh) != 1 || sh[0] != tc.want {
			t.Errorf("%s: metered %q, want [%q]", tc.name, sh, tc.want)
		}
		if sh := m.TakeShapes(); len(sh) != 0 {
			t.Errorf("%s: a second take returned %q", tc.name, sh)
		}
	}
	if _, ok := ShapeOf(&dynamodb.DescribeTableInput{}); ok {
		t.Error("ShapeOf named a call that reads or writes no item")
	}
}
