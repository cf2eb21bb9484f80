package capacity

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// Recorded is one DynamoDB call the adapter made, with what the meter
// needs to price it: the items each write replaced and wrote, the items
// each read returned. cmd/paysvc-bench records them on moto (the state of
// every key a write names read before and after the call), so a request's
// units come from the calls the adapter really made, as DynamoDB would
// bill them, and the model's own are held to them.
type Recorded struct {
	// Kind is the call's shape kind (shape.go): "write", "transact",
	// "get", "batchget" or "query".
	Kind string
	// Writes are a write's or transaction's items: Old the item before
	// (nil: none), New after (nil: deleted). A transaction's
	// ConditionCheck is a write of the item onto itself.
	Writes []Write
	// Failed is a write refused by its condition (a transaction cancelled
	// by one): nothing was written; each of Writes has Old = the item the
	// condition was checked against (its key alone when there was none)
	// and New = Old, but for a cancelled transaction's put the item it
	// would have written.
	Failed bool
	// Reads are the items a get or batchget returned (a key not found: the
	// key alone, which DynamoDB still bills) or a query returned.
	Reads []dynamo.Item
	// Index, PK and Consistent are a query's: the index ("" the table),
	// the partition and the read's consistency.
	Index, PK  string
	Consistent bool
}

// Replay meters c as the call it records.
func (m *Meter) Replay(c Recorded) error {
	switch {
	case c.Kind == "write" && len(c.Writes) != 1:
		return fmt.Errorf("capacity: a write of %d items", len(c.Writes))
	case c.Kind == "write" && c.Failed:
		m.FailedPut(c.Writes[0].Old)
	case c.Kind == "write":
		m.Put(c.Writes[0].Old, c.Writes[0].New)
	case c.Kind == "transact" && c.Failed:
		m.FailedTransact(c.Writes...)
	case c.Kind == "transact":
		m.TransactWrite(c.Writes...)
	case c.Kind == "get" && len(c.Reads) != 1:
		return fmt.Errorf("capacity: a get of %d items", len(c.Reads))
	case c.Kind == "get":
		m.Get(c.Reads[0])
	case c.Kind == "batchget":
		m.BatchGet(c.Reads...)
	case c.Kind == "query":
		m.Query(c.Index, c.PK, c.Consistent, c.Reads...)
	default:
		return fmt.Errorf("capacity: no call of kind %q", c.Kind)
	}
	return nil
}

// WriteKeys are the table and the keys (pk and sk alone) of the items a
// write call names (params: the SDK's input), in order; none for a call
// that writes nothing. A recorder reads their state before and after the
// call for RecordOf.
func WriteKeys(params any) (table string, keys []dynamo.Item) {
	key := func(it map[string]types.AttributeValue) dynamo.Item {
		pk, sk := dynamo.Keys(it)
		return keyOnly(pk, sk)
	}
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		return aws.ToString(in.TableName), []dynamo.Item{key(in.Item)}
	case *dynamodb.UpdateItemInput:
		return aws.ToString(in.TableName), []dynamo.Item{key(in.Key)}
	case *dynamodb.DeleteItemInput:
		return aws.ToString(in.TableName), []dynamo.Item{key(in.Key)}
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				table = aws.ToString(it.Put.TableName)
				keys = append(keys, key(it.Put.Item))
			case it.Update != nil:
				table = aws.ToString(it.Update.TableName)
				keys = append(keys, key(it.Update.Key))
			case it.Delete != nil:
				table = aws.ToString(it.Delete.TableName)
				keys = append(keys, key(it.Delete.Key))
			case it.ConditionCheck != nil:
				table = aws.ToString(it.ConditionCheck.TableName)
				keys = append(keys, key(it.ConditionCheck.Key))
			}
		}
	}
	return table, keys
}

// RecordOf is the Recorded of one DynamoDB call: params its SDK input,
// result its output (nil when it failed), err its error, before and after
// the state of each of WriteKeys(params) read before and after it (nil:
// no item). ok is false for a call that is none of ShapeOf's kinds, or
// that failed other than by a condition.
func RecordOf(params, result any, err error, before, after []dynamo.Item) (Recorded, bool) {
	var failed bool
	if err != nil {
		var cond *types.ConditionalCheckFailedException
		var cancelled *types.TransactionCanceledException
		if !errors.As(err, &cond) && !errors.As(err, &cancelled) {
			return Recorded{}, false
		}
		failed = true
	}
	switch params.(type) {
	case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput, *dynamodb.TransactWriteItemsInput:
		return recordWrite(params, failed, before, after), true
	}
	if failed {
		return Recorded{}, false
	}
	return recordRead(params, result)
}

// recordWrite is RecordOf a write or a transaction.
func recordWrite(params any, failed bool, before, after []dynamo.Item) Recorded {
	_, keys := WriteKeys(params)
	state := func(states []dynamo.Item, i int) dynamo.Item {
		if i < len(states) {
			return states[i]
		}
		return nil
	}
	// orKey is the state, or the key alone when there is no item (what
	// a condition or a read is billed against).
	orKey := func(it dynamo.Item, i int) dynamo.Item {
		if it != nil {
			return it
		}
		return keys[i]
	}
	ws := make([]Write, len(keys))
	for i := range keys {
		old := state(before, i)
		if failed {
			ws[i] = Write{Old: orKey(old, i), New: orKey(old, i)}
			continue
		}
		ws[i] = Write{Old: old, New: state(after, i)}
	}
	in, ok := params.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return Recorded{Kind: "write", Writes: ws, Failed: failed}
	}
	for i, it := range in.TransactItems {
		switch {
		case it.ConditionCheck != nil && !failed: // checked, not written
			ws[i] = Write{Old: orKey(state(before, i), i), New: orKey(state(before, i), i)}
		case it.Put != nil && failed: // what it would have written
			ws[i].New = it.Put.Item
		}
	}
	return Recorded{Kind: "transact", Writes: ws, Failed: failed}
}

// recordRead is RecordOf a read that succeeded.
func recordRead(params, result any) (Recorded, bool) {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		out, _ := result.(*dynamodb.GetItemOutput)
		if out == nil {
			return Recorded{}, false
		}
		it := dynamo.Item(out.Item)
		if it == nil {
			pk, sk := dynamo.Keys(in.Key)
			it = keyOnly(pk, sk)
		}
		return Recorded{Kind: "get", Reads: []dynamo.Item{it}}, true
	case *dynamodb.BatchGetItemInput:
		out, _ := result.(*dynamodb.BatchGetItemOutput)
		if out == nil {
			return Recorded{}, false
		}
		return Recorded{Kind: "batchget", Reads: batchReads(in, out)}, true
	case *dynamodb.QueryInput:
		out, _ := result.(*dynamodb.QueryOutput)
		if out == nil {
			return Recorded{}, false
		}
		return Recorded{Kind: "query", Index: aws.ToString(in.IndexName), PK: queryPK(in), Consistent: aws.ToBool(in.ConsistentRead), Reads: out.Items}, true
	}
	return Recorded{}, false
}

// batchReads are the items a BatchGetItem returned, in the order of its
// keys (a key not found: the key alone).
func batchReads(in *dynamodb.BatchGetItemInput, out *dynamodb.BatchGetItemOutput) []dynamo.Item {
	found := map[[2]string]dynamo.Item{}
	for _, items := range out.Responses {
		for _, it := range items {
			pk, sk := dynamo.Keys(it)
			found[[2]string{pk, sk}] = it
		}
	}
	var reads []dynamo.Item
	for _, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			pk, sk := dynamo.Keys(k)
			it, ok := found[[2]string{pk, sk}]
			if !ok {
				it = keyOnly(pk, sk)
			}
			reads = append(reads, it)
		}
	}
	return reads
}

// keyOnly is the key of a stored item (what a read of a missing one, or a
// condition on one, is billed against).
func keyOnly(pk, sk string) dynamo.Item {
	return dynamo.Item{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
}
