package dynamo

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/storeerr"
)

// Versioned items (events, deliveries) are written conditionally on the
// stored version. A write DynamoDB applied whose answer was lost is sent
// again by the SDK and fails its condition — on the item it wrote itself,
// or on a later version another writer put on top of it in between. To
// tell that from a real conflict (on which the caller re-reads and applies
// its change again: an attempt or an arrival counted twice), each write
// names itself in one of versionSlots attributes, slot version mod
// versionSlots, as "<version>:<token>", and leaves the other slots alone:
// an item remembers who wrote each of its last versionSlots versions.
// (One write-token attribute forgets its writer as soon as another write
// lands on top, which a CI run met: 8 concurrent increments counted 9.)
const versionSlots = 8

// versionSlot is the attribute naming the writer of version v.
func versionSlot(v int64) string { return "wv" + strconv.FormatInt(v%versionSlots, 10) }

// versionStamp is the value versionSlot(v) holds when token wrote v.
func versionStamp(v int64, token string) string { return strconv.FormatInt(v, 10) + ":" + token }

// stampVersion sets the builders' placeholder for the writer of item's
// version (its size is what the capacity model counts).
func stampVersion(item map[string]types.AttributeValue, v int64) {
	item[versionSlot(v)] = str(versionStamp(v, writeTokenPlaceholder))
}

// wroteVersion reports whether the stored item old names token as the
// writer of version v: the write had landed.
func wroteVersion(old map[string]types.AttributeValue, v int64, token string) bool {
	return old != nil && getN(old, attrVersion) >= v && getS(old, versionSlot(v)) == versionStamp(v, token)
}

// versionedUpdate is the update writing item (which carries its version
// attribute) conditionally on the stored version being prev (> 0: creates
// are versionedWrite's Put), naming token in the version's slot. Every other attribute is
// set from item — the builders write the same attributes at every version
// — and the other slots are kept; the single write token of items written
// before slots is removed.
func versionedUpdate(table string, item map[string]types.AttributeValue, prev int64, token string) *types.Update {
	v := getN(item, attrVersion)
	cond, names, values := versionCondition(prev)
	set := make([]string, 0, len(item))
	for i, name := range slices.Sorted(maps.Keys(item)) {
		if name == attrPK || name == attrSK || strings.HasPrefix(name, "wv") || name == attrWriteToken {
			continue
		}
		n, val := "#a"+strconv.Itoa(i), ":a"+strconv.Itoa(i)
		names[n], values[val] = name, item[name]
		set = append(set, n+" = "+val)
	}
	names["#slot"], values[":slot"] = versionSlot(v), str(versionStamp(v, token))
	names["#wt"] = attrWriteToken
	set = append(set, "#slot = :slot")
	return &types.Update{TableName: aws.String(table), Key: itemKey(getS(item, attrPK), getS(item, attrSK)),
		UpdateExpression: aws.String("SET " + strings.Join(set, ", ") + " REMOVE #wt"), ConditionExpression: cond,
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
}

// versionedWrite is the write of item at its version conditionally on the
// stored version being prev: a Put when it creates the item (prev 0: no
// other slot to keep; a single put, which moto also applies at once, where
// its UpdateItem of a new item first stores the bare key), else
// versionedUpdate.
func versionedWrite(table string, item map[string]types.AttributeValue, prev int64, token string) types.TransactWriteItem {
	if prev != 0 {
		return types.TransactWriteItem{Update: versionedUpdate(table, item, prev, token)}
	}
	v := getN(item, attrVersion)
	created := maps.Clone(item)
	created[versionSlot(v)] = str(versionStamp(v, token))
	cond, names, _ := versionCondition(0)
	return condPut(table, created, cond, names, nil)
}

// putVersioned writes item conditionally on the stored version being prev
// (versionedWrite); a condition failing on the item this call wrote, or
// on one written on top of it, is success (wroteVersion), else
// storeerr.ErrConflict.
func (s *Store) putVersioned(ctx context.Context, item map[string]types.AttributeValue, prev int64) error {
	token := writeToken()
	var err error
	if w := versionedWrite(s.table, item, prev, token); w.Put != nil {
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: w.Put.TableName, Item: w.Put.Item,
			ConditionExpression: w.Put.ConditionExpression, ExpressionAttributeNames: w.Put.ExpressionAttributeNames,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	} else {
		u := w.Update
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key,
			UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	}
	if old, failed := conditionFailed(err); failed {
		old, _ = s.failedOn(ctx, old, getS(item, attrPK), getS(item, attrSK))
		if wroteVersion(old, getN(item, attrVersion), token) {
			return nil
		}
		return storeerr.ErrConflict
	}
	return err
}
