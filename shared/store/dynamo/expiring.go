package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The expiry index (docs/expiry.md): a payment HEAD whose authorisation
// can still expire (payments.Head.ExpiryDue) carries gsi2pk
// DUE#EXPIRY#<shard> and gsi2sk <expires at>#<psp>, written by every head
// Put (HeadItem). gsi2 projects the keys and st, which a head lacks, so an
// entry is keys only and the head's Delta updates leave it alone: a head
// that stopped qualifying by a Delta (a capture) stays indexed until the
// scheduler reads it and its Put drops it. ExpiryShards spread the writes.
const (
	pfxExpiry = "DUE#EXPIRY#"
	// ExpiryShards is how many gsi2 partitions the expiry index is
	// write-sharded over (capacity.ShardsFor sizes it).
	ExpiryShards = 64
)

// ExpiryPartition is the gsi2 partition of payment psp's expiry entry.
func ExpiryPartition(psp string) string { return pfxExpiry + strconv.Itoa(shardOf(psp, ExpiryShards)) }

// setExpiryIndex puts head item it of payment psp in the expiry index when
// its authorisation expires at `at` (ok).
func setExpiryIndex(it Item, psp string, at time.Time, ok bool) {
	if ok {
		it[attrGSI2PK], it[attrGSI2SK] = str(ExpiryPartition(psp)), str(sortTime(at)+"#"+psp)
	}
}

// Expiring returns at most limit payments whose authorisation expires
// before `before`, soonest first: one Query per shard, merged. The index
// is eventually consistent: the scheduler re-reads each head.
func (s *Store) Expiring(ctx context.Context, before time.Time, limit int) ([]string, error) {
	sks, err := s.oldestBefore(ctx, indexGSI2, attrGSI2PK, attrGSI2SK, pfxExpiry, ExpiryShards, before, limit)
	if err != nil {
		return nil, fmt.Errorf("dynamo: expiring authorisations: %w", err)
	}
	var psps []string
	for _, sk := range sks {
		if _, psp, ok := strings.Cut(sk, "#"); ok {
			psps = append(psps, psp)
		}
	}
	return psps, nil
}
