package capacity

import (
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/yp/paysvc/shared/store/dynamo"
)

// A call's shape is what kind of DynamoDB call it is and which key
// families it touches: "transact table IDEM + table PAYMENT",
// "query gsi2 MERCHANT", "get table EVENT". The model names each call it
// meters by its shape (Meter.Shapes), and the same function names a call
// the adapter made (ShapeOf, from the SDK's input), so the two sequences
// of a request compare call by call, not only in number.
//
// Kinds: "write" (PutItem, UpdateItem, DeleteItem: the model cannot tell
// them apart and their units are the same), "transact", "get",
// "batchget", "query".

// shape joins a kind and the families of parts.
func shape(kind string, parts ...Part) string {
	fams := make([]string, 0, len(parts))
	for _, p := range parts {
		fams = append(fams, p.Family())
	}
	slices.Sort(fams)
	return kind + " " + strings.Join(slices.Compact(fams), " + ")
}

// Parts of a Query's key condition: "#pk = :pk AND begins_with(...)".
var keyEquals = regexp.MustCompile(`#\w+\s*=\s*(:\w+)`)

// ShapeOf is the shape of a DynamoDB call the SDK makes (its input), ok
// false for a call that is not one of the kinds above.
func ShapeOf(params any) (string, bool) {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return shape("get", tablePart(in.Key)), true
	case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
		_, keys := WriteKeys(params)
		return shape("write", tablePart(keys[0])), true
	case *dynamodb.TransactWriteItemsInput:
		_, keys := WriteKeys(params)
		return shape("transact", tableParts(keys)...), true
	case *dynamodb.BatchGetItemInput:
		var keys []dynamo.Item
		for _, ka := range in.RequestItems {
			keys = append(keys, ka.Keys...)
		}
		return shape("batchget", tableParts(keys)...), true
	case *dynamodb.QueryInput:
		return shape("query", Part{aws.ToString(in.IndexName), queryPK(in)}), true
	}
	return "", false
}

// queryPK is the partition key value a Query's key condition names.
func queryPK(in *dynamodb.QueryInput) string {
	if m := keyEquals.FindStringSubmatch(aws.ToString(in.KeyConditionExpression)); m != nil {
		if v, ok := in.ExpressionAttributeValues[m[1]].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
	}
	return ""
}
