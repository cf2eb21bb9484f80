package dynamo

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/yp/paysvc/shared/payments"
)

// The operations awaiting their answer (payments.Entry.Recoverable) are
// a sparse part of gsi1: their entry items carry gsi1pk INFLIGHT#<shard>
// and gsi1sk <requested at>#<psp>#<ref> until an answer's put replaces
// them without. inFlightShards spread the writes.
const (
	pfxInFlight    = "INFLIGHT#"
	inFlightShards = 64
	// InFlightShards is inFlightShards, for the capacity model (a
	// scheduler pass queries every shard).
	InFlightShards = inFlightShards
)

// inFlightPartition is the gsi1 partition of payment psp's operations in
// flight.
func inFlightPartition(psp string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(psp))
	return pfxInFlight + strconv.Itoa(int(h.Sum32()%inFlightShards))
}

// InFlight implements payments.InFlight: each shard's oldest, merged. The
// index is eventually consistent: Recover re-reads each entry.
func (s *Store) InFlight(ctx context.Context, before time.Time, limit int) ([]payments.OpRef, error) {
	type op struct {
		ref payments.OpRef
		sk  string
	}
	var ops []op
	for shard := range inFlightShards {
		out, err := s.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(indexGSI1),
			KeyConditionExpression:    aws.String("#pk = :pk AND #sk < :before"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrGSI1PK, "#sk": attrGSI1SK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pfxInFlight + strconv.Itoa(shard)), ":before": str(sortTime(before))},
			ProjectionExpression:      aws.String("#pk, #sk"),
			Limit:                     aws.Int32(int32(limit)),
		})
		if err != nil {
			return nil, fmt.Errorf("dynamo: operations in flight: %w", err)
		}
		for _, it := range out.Items {
			sk := getS(it, attrGSI1SK)
			parts := strings.SplitN(sk, "#", 3)
			if len(parts) != 3 {
				continue
			}
			ops = append(ops, op{payments.OpRef{PSP: parts[1], Ref: parts[2]}, sk})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].sk < ops[j].sk })
	var refs []payments.OpRef
	for _, o := range ops[:min(limit, len(ops))] {
		refs = append(refs, o.ref)
	}
	return refs, nil
}

var _ payments.InFlight = (*Store)(nil)
