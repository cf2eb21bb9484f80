package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/yp/paysvc/shared/payments"
)

// The operations awaiting their answer (payments.Entry.Recoverable) are
// a sparse part of gsi1: their entry items carry gsi1pk INFLIGHT#<shard>
// and gsi1sk <requested at>#<psp>#<ref> until an answer's put replaces
// them without. InFlightShards spread the writes.
const (
	pfxInFlight = "INFLIGHT#"
	// InFlightShards is how many gsi1 partitions the operations in flight
	// are write-sharded over (the capacity model's scheduler pass queries
	// every shard).
	InFlightShards = 64
)

// InFlightPartition is the gsi1 partition of payment psp's operations in
// flight (INFLIGHT#<shard>).
func InFlightPartition(psp string) string {
	return pfxInFlight + strconv.Itoa(shardOf(psp, InFlightShards))
}

// InFlight implements payments.InFlight: each shard's oldest, merged. The
// index is eventually consistent: Recover re-reads each entry.
func (s *Store) InFlight(ctx context.Context, before time.Time, limit int) ([]payments.OpRef, error) {
	sks, err := s.oldestBefore(ctx, indexGSI1, attrGSI1PK, attrGSI1SK, pfxInFlight, InFlightShards, before, limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: operations in flight: %w", err)
	}
	var refs []payments.OpRef
	for _, sk := range sks {
		if parts := strings.SplitN(sk, "#", 3); len(parts) == 3 {
			refs = append(refs, payments.OpRef{PSP: parts[1], Ref: parts[2]})
		}
	}
	return refs, nil
}

// oldestBefore returns the at most limit smallest sort keys (skAttr)
// below sortTime(before) of the shards partitions pfx<n> (pkAttr) of
// index: one Query of at most limit keys per shard, merged.
func (s *Store) oldestBefore(ctx context.Context, index, pkAttr, skAttr, pfx string, shards int, before time.Time, limit int) ([]string, error) {
	var sks []string
	for shard := range shards {
		in := newestBelow(pkAttr, skAttr, pfx+strconv.Itoa(shard), sortTime(before))
		in.TableName, in.IndexName, in.ScanIndexForward = aws.String(s.table), aws.String(index), nil // oldest first
		in.ProjectionExpression, in.Limit = aws.String("#pk, #sk"), aws.Int32(int32(limit))
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, it := range out.Items {
			sks = append(sks, getS(it, skAttr))
		}
	}
	slices.Sort(sks)
	return sks[:min(limit, len(sks))], nil
}

var _ payments.InFlight = (*Store)(nil)
