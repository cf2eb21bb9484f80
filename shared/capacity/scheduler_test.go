package capacity

import (
	"math"
	"testing"

	"github.com/yp/paysvc/shared/store/dynamo"
)

// TestSchedulerCost: the expiry index has the shards its writes need at
// 10,000 manual-capture payments/s (an insert and a removal each, 1 WRU
// apiece); an idle scheduler reads 128 empty index pages a minute, about
// 2.8 million read units a month, and costs well under a dollar a month;
// the expiry index adds a few units per manual payment.
func TestSchedulerCost(t *testing.T) {
	if n := ShardsFor(2 * 10_000); n != dynamo.ExpiryShards {
		t.Fatalf("the expiry index needs %d shards, has %d", n, dynamo.ExpiryShards)
	}
	if SchedulerQueries != 128 {
		t.Fatalf("%d queries a pass, want 64 in flight + 64 expiry", SchedulerQueries)
	}
	rru, usd := SchedulerIdle(200, 128)
	if rru != 128*0.5*43_200 {
		t.Fatalf("idle reads %v a month", rru)
	}
	if usd <= 0 || usd > 1 {
		t.Fatalf("idle scheduler $%.2f a month", usd)
	}
	wru, r := ExpiryPerPayment(2)
	if wru != 4 || r != 1 || math.IsNaN(wru) {
		t.Fatalf("expiry per payment %v WRU %v RRU", wru, r)
	}
}
