package capacity

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// sized is the item pk/sk with a payload attribute making it n bytes
// (dynamo.ItemSize), and attrs on top.
func sized(pk, sk string, n int, attrs map[string]string) dynamo.Item {
	it := keyOnly(pk, sk)
	for k, v := range attrs {
		it[k] = &types.AttributeValueMemberS{Value: v}
	}
	if pad := n - dynamo.ItemSize(it) - len("data"); pad > 0 {
		it["data"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", pad)}
	}
	return it
}

// A recorded call is priced from the items it replaced, wrote and read:
// WriteKeys names the items a write touches, RecordOf turns the call with
// those items' states into a Recorded, and Meter.Replay bills it as the
// model bills the same call (units by key family).
func TestRecordedCallsBilledFromTheirItems(t *testing.T) {
	head1k := sized("PAYMENT#p", "HEAD", 900, nil)
	head2k := sized("PAYMENT#p", "HEAD", 1500, nil)
	claim := sized("IDEM#m#k", "KEY", 300, nil)
	inflight := sized("PAYMENT#p", "E#op", 200, map[string]string{"gsi1pk": "INFLIGHT#3", "gsi1sk": "t#op"})
	cond := &types.ConditionalCheckFailedException{Message: aws.String("the conditional request failed")}
	cancelled := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled")}
	for _, tc := range []struct {
		name           string
		params, result any
		err            error
		before, after  []dynamo.Item
		wantKeys       int
		want           map[string]Units
	}{
		{name: "put of a new item: its size", params: &dynamodb.PutItemInput{Item: claim},
			after: []dynamo.Item{claim}, wantKeys: 1, want: map[string]Units{"table IDEM": {W: 1}}},
		{name: "update that grows an item: the larger size", params: &dynamodb.UpdateItemInput{Key: keyOnly("PAYMENT#p", "HEAD")},
			before: []dynamo.Item{head1k}, after: []dynamo.Item{head2k}, wantKeys: 1, want: map[string]Units{"table PAYMENT": {W: 2}}},
		{name: "put refused by its condition: the item checked", params: &dynamodb.PutItemInput{Item: claim}, err: cond,
			before: []dynamo.Item{sized("IDEM#m#k", "KEY", 1500, nil)}, wantKeys: 1, want: map[string]Units{"table IDEM": {W: 2}}},
		{name: "delete", params: &dynamodb.DeleteItemInput{Key: keyOnly("IDEM#m#k", "KEY")},
			before: []dynamo.Item{claim}, after: []dynamo.Item{nil}, wantKeys: 1, want: map[string]Units{"table IDEM": {W: 1}}},
		{name: "transaction: twice each item, an index entry once, a condition check its item",
			params: &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Update: &types.Update{Key: keyOnly("PAYMENT#p", "HEAD")}}, {Put: &types.Put{Item: inflight}},
				{ConditionCheck: &types.ConditionCheck{Key: keyOnly("IDEM#m#k", "KEY")}}}},
			before: []dynamo.Item{head1k, nil, claim}, after: []dynamo.Item{head2k, inflight, claim}, wantKeys: 3,
			want: map[string]Units{"table PAYMENT": {W: 2*2 + 2*1}, "gsi1 INFLIGHT": {W: 1}, "table IDEM": {W: 2}}},
		{name: "transaction cancelled: as if written, the larger of each item checked and put", params: &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{Item: head1k}}, {Put: &types.Put{Item: inflight}}}}, err: cancelled,
			before: []dynamo.Item{head2k, nil}, wantKeys: 2, want: map[string]Units{"table PAYMENT": {W: 2*2 + 2*1}}},
		{name: "get of a missing item: the minimum", params: &dynamodb.GetItemInput{Key: keyOnly("EVENT#e", "META")},
			result: &dynamodb.GetItemOutput{}, want: map[string]Units{"table EVENT": {R: 1}}},
		{name: "batch get: each item found, each missing one", params: &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			"t": {Keys: []map[string]types.AttributeValue{keyOnly("PAYMENT#p", "HEAD"), keyOnly("PAYMENT#p", "META")}}}},
			result: &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{"t": {head2k}}},
			want:   map[string]Units{"table PAYMENT": {R: 2}}},
		{name: "query of an index: what it returned, eventually consistent", params: &dynamodb.QueryInput{IndexName: aws.String("gsi1"),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "INFLIGHT#3"}}},
			result: &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{inflight, inflight}},
			want:   map[string]Units{"gsi1 INFLIGHT": {R: 0.5}}},
	} {
		_, keys := WriteKeys(tc.params)
		if len(keys) != tc.wantKeys {
			t.Errorf("%s: WriteKeys named %d items, want %d", tc.name, len(keys), tc.wantKeys)
		}
		rec, ok := RecordOf(tc.params, tc.result, tc.err, tc.before, tc.after)
		if !ok {
			t.Errorf("%s: not recorded", tc.name)
			continue
		}
		if rec.Failed != (tc.err != nil) {
			t.Errorf("%s: Failed %v with error %v", tc.name, rec.Failed, tc.err)
		}
		m := NewMeter()
		if err := m.Replay(rec); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := m.TakeUnits(); !maps.Equal(got, tc.want) {
			t.Errorf("%s: units %v, want %v", tc.name, got, tc.want)
		}
		if sh, want := m.TakeShapes(), ShapeOfOrEmpty(tc.params); len(sh) != 1 || sh[0] != want {
			t.Errorf("%s: replayed as %q, the call's shape is %q", tc.name, sh, want)
		}
	}
	// A call that failed other than by a condition wrote or read nothing
	// known, and a call of no item is not one the meter prices.
	if _, ok := RecordOf(&dynamodb.PutItemInput{Item: claim}, nil, errors.New("throttled"), nil, nil); ok {
		t.Error("a write that failed on a throttle was recorded")
	}
	if _, ok := RecordOf(&dynamodb.DescribeTableInput{}, &dynamodb.DescribeTableOutput{}, nil, nil, nil); ok {
		t.Error("DescribeTable was recorded")
	}
	if err := NewMeter().Replay(Recorded{Kind: "scan"}); err == nil {
		t.Error("a recorded scan was replayed")
	}
}

// ShapeOfOrEmpty is ShapeOf's shape, "" for none.
func ShapeOfOrEmpty(params any) string {
	sh, _ := ShapeOf(params)
	return sh
}
