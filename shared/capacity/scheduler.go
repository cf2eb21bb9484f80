package capacity

import "github.com/yp/paysvc/shared/store/dynamo"

// The one scheduler (docs/expiry.md) is not in the recorded requests: it
// runs a pass a minute whatever the traffic, each reading every shard of
// its indexes once, and per manual-capture payment the expiry index costs
// its entry and, at the notice's time, the head read and written. (The
// entry itself is written with the payment's head, so the recorded
// requests meter it once `make bench` records heads that carry it.)

// SchedulerQueries is how many index partitions one pass queries: the
// operations in flight (gsi1 INFLIGHT) and the expiry index (gsi2
// DUE#EXPIRY), one Query each.
const SchedulerQueries = dynamo.InFlightShards + dynamo.ExpiryShards

// PassesPerMonth are the scheduler's passes in a 30-day month (one a
// minute, its EventBridge Scheduler schedule).
const PassesPerMonth = 60 * 24 * 30

// emptyQueryRRU is what an eventually consistent Query reading nothing
// costs: the minimum of half a read unit.
const emptyQueryRRU = 0.5

// SchedulerIdle is the idle scheduler's reads and price per month: an
// empty Query per shard per pass, and one invocation a pass of the
// scheduler function at memoryMB running durationMS.
func SchedulerIdle(durationMS float64, memoryMB int) (rru, usd float64) {
	rru = SchedulerQueries * emptyQueryRRU * PassesPerMonth
	gbs := PassesPerMonth * durationMS / 1000 * float64(memoryMB) / 1024
	usd = rru/1e6*PriceDynamoRRU + PassesPerMonth/1e6*PriceLambdaRequest + gbs*PriceLambdaGBSecArm
	return rru, usd
}

// ExpiryPerPayment is what the expiry index adds per manual-capture
// payment whose head is written with a head of headWRU write units: the
// entry's insert with the head (1 WRU: keys only), and at T − lead the
// pass's strongly consistent GetItem of the head (1 RRU up to 4 KB), the
// head written again and its entry removed (1 WRU). A notice actually sent
// adds one service event's commit and deliveries, as one notification's.
func ExpiryPerPayment(headWRU float64) (wru, rru float64) { return 1 + headWRU + 1, 1 }
