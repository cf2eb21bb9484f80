package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// Each write endpoint makes at most its bound of sequential DynamoDB round
// trips (writeSteps, coldWriteSteps), counted by the SDK middleware on
// moto. The steps come from call timing: calls made one after the
// other never overlap, but a loaded machine can start one of two
// concurrent calls after the other ended, so scheduling only ever adds
// steps. The bound is therefore held against the fewest steps of a row's
// requests (the code's structure), and a row over it is measured once more
// before it counts as a failure (shared/httpapi's
// TestIdempotentPostLimitsAndClaimsConcurrently and shared/payments'
// TestDetailsReadBeforeTheyWrite prove the concurrency deterministically).
func TestWriteEndpointStoreRoundTrips(t *testing.T) {
	cfg := &config{RTRequests: 3, progress: io.Discard}
	// The report's budgets: writeSteps for the claim with the rate-limit
	// hit, the operation's own write, its settlement with the claim's
	// completion; coldWriteSteps for the API key's read before them.
	bounds := map[string]int{
		"POST payments (Idempotency-Key)":                    writeSteps,
		"POST payments (Idempotency-Key), tenant cache cold": coldWriteSteps,
		"POST sessions (Idempotency-Key)":                    writeSteps,
		"POST captures (Idempotency-Key)":                    writeSteps,
		"POST refunds (Idempotency-Key)":                     writeSteps,
		// a reversal of an uncaptured payment: its cancel, tried unread
		"POST reversals (Idempotency-Key)":        writeSteps,
		"POST amount-updates (Idempotency-Key)":   writeSteps,
		"POST payments/details (Idempotency-Key)": writeSteps,
		namedDetailsRow: writeSteps,
		"POST payments, an action answered (Idempotency-Key)": writeSteps,
		// reads: the hit, then the payment's head (its owner) and the
		// page at once
		"GET payment":                   2,
		"GET payment timeline (a page)": 2,
	}
	var res *roundTripResult
	over := func() []string {
		var out []string
		for name, bound := range bounds {
			row, ok := res.row(name)
			switch {
			case !ok:
				out = append(out, "no row "+name)
			case row.DepthMin > bound:
				out = append(out, fmt.Sprintf("%s: at least %d sequential store round trips, want ≤ %d: %s", name, row.DepthMin, bound, row.Chain))
			}
		}
		return out
	}
	for try := range 2 {
		var err error
		if res, err = runRoundTrips(cfg); err != nil {
			t.Fatal(err)
		}
		if len(over()) == 0 {
			break
		}
		t.Logf("try %d: %q", try+1, over())
	}
	for _, o := range over() {
		t.Error(o)
	}
	row, _ := res.row("POST payments (Idempotency-Key)")
	if !strings.HasPrefix(row.Chain, "(idempotency: claim ‖ rate limit: hit)") && !strings.HasPrefix(row.Chain, "(rate limit: hit ‖ idempotency: claim)") {
		t.Errorf("critical path %q does not start with the hit and the claim together", row.Chain)
	}
	// the pending record before the upstream call, then the head and the
	// pending record marked bound
	for what, want := range map[string]int{"rate limit: hit": 1, "idempotency: claim": 1, "idempotency: complete": 1, "payment record: write": 3} {
		if got := row.Counts[what]; got != want*row.Requests {
			t.Errorf("%s: %d calls over %d requests, want %d each", what, got, row.Requests, want)
		}
	}
	if row.Total != 6*row.Requests {
		t.Errorf("%d store calls over %d requests, want 6 each", row.Total, row.Requests)
	}
	// An operation on a payment claims its key on its own, as every route does.
	row, _ = res.row("POST captures (Idempotency-Key)")
	if got := row.Counts["idempotency: claim"]; got != row.Requests {
		t.Errorf("captures: %d idempotency claims over %d requests, want one each", got, row.Requests)
	}
}
