package main

import (
	"io"
	"strings"
	"testing"
)

// An idempotent POST payments makes at most 2 sequential DynamoDB round
// trips (issue 15): (rate-limit hit ‖ idempotency claim) → [upstream] →
// (complete ‖ record), counted by the SDK middleware on moto. The steps
// come from call timing, so on a loaded machine a measurement is repeated
// once before it counts as a failure (shared/httpapi's
// TestIdempotentPostLimitsAndClaimsConcurrently proves the concurrency
// deterministically).
func TestIdempotentPaymentTwoStoreRoundTrips(t *testing.T) {
	cfg := &config{RTRequests: 5, progress: io.Discard}
	var row rtRow
	for try := range 2 {
		res, err := runRoundTrips(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var ok bool
		if row, ok = res.row("POST payments (Idempotency-Key)"); !ok {
			t.Fatal("no POST payments row")
		}
		if row.DepthMax <= 2 {
			break
		}
		t.Logf("try %d: %d–%d sequential store steps (%s)", try+1, row.DepthMin, row.DepthMax, row.Chain)
	}
	if row.DepthMax > 2 {
		t.Fatalf("POST payments: up to %d sequential store round trips, want ≤ 2: %s", row.DepthMax, row.Chain)
	}
	if !strings.HasPrefix(row.Chain, "(idempotency: claim ‖ rate limit: hit)") && !strings.HasPrefix(row.Chain, "(rate limit: hit ‖ idempotency: claim)") {
		t.Errorf("critical path %q does not start with the hit and the claim together", row.Chain)
	}
	for what, want := range map[string]int{"rate limit: hit": 1, "idempotency: claim": 1, "idempotency: complete": 1, "payment record: write": 1} {
		if got := row.Counts[what]; got != want*row.Requests {
			t.Errorf("%s: %d calls over %d requests, want %d each", what, got, row.Requests, want)
		}
	}
	if row.Total != 4*row.Requests {
		t.Errorf("%d store calls over %d requests, want 4 each", row.Total, row.Requests)
	}
}
