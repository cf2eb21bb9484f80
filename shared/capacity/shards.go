package capacity

// TargetShardWCU is the average write load a write-sharded key family is
// sized for: half of a partition's 1,000 WCU/s, which leaves room for the
// busiest shard's share above the average (ids hash unevenly) and for
// items twice as large as the trace's.
const TargetShardWCU = PartitionWCU / 2

// ShardsFor is how many shards a key family writing w units in its busiest
// second needs: the smallest power of two that keeps the average shard at
// or under TargetShardWCU. Fewer shards make cheaper listings (a page
// queries every shard once), so the count is the least the writes allow.
func ShardsFor(w float64) int {
	n := 1
	for float64(n)*TargetShardWCU < w {
		n *= 2
	}
	return n
}
