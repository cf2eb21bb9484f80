package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// Each write endpoint makes at most its bound of sequential DynamoDB round
// trips, an idempotent POST payments 2: (rate-limit hit ‖ idempotency
// claim) → [upstream] → (complete ‖ record), counted by the SDK middleware
// on moto. The steps come from call timing: calls made one after the
// other never overlap, but a loaded machine can start one of two
// concurrent calls after the other ended, so scheduling only ever adds
// steps. The bound is therefore held against the fewest steps of a row's
// requests (the code's structure), and a row over it is measured once more
// before it counts as a failure (shared/httpapi's
// TestIdempotentPostLimitsAndClaimsConcurrently and shared/payments'
// TestDetailsReadBeforeTheyWrite prove the concurrency deterministically).
func TestWriteEndpointStoreRoundTrips(t *testing.T) {
	cfg := &config{RTRequests: 3, progress: io.Discard}
	// The most sequential store steps each write endpoint takes today
	// (docs/scale.md, "Round trips per endpoint"): before the upstream
	// call the claim with the rate-limit hit — for an operation on a
	// payment the claim is taken by its reservation's transaction; after
	// it the record (with the claim's completion; for details, answered
	// as the platform answers, in the record's own transaction), an amount
	// update reading the payment's head while the upstream answers.
	bounds := map[string]int{
		"POST payments (Idempotency-Key)": 2,
		// the API key's read, then the site's and the merchant's with the
		// hit and the claim
		"POST payments (Idempotency-Key), tenant cache cold": 3,
		"POST sessions (Idempotency-Key)":                    2,
		"POST captures (Idempotency-Key)":                    2,
		"POST refunds (Idempotency-Key)":                     2,
		"POST reversals (Idempotency-Key)":                   2,
		"POST amount-updates (Idempotency-Key)":              2,
		"POST payments/details (Idempotency-Key)":            2,
		namedDetailsRow:                                      2,
		// the pending record and the action's alias with the completion
		"POST payments, an action answered (Idempotency-Key)": 2,
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
	for what, want := range map[string]int{"rate limit: hit": 1, "idempotency: claim": 1, "idempotency: complete": 1, "payment record: write": 1} {
		if got := row.Counts[what]; got != want*row.Requests {
			t.Errorf("%s: %d calls over %d requests, want %d each", what, got, row.Requests, want)
		}
	}
	if row.Total != 4*row.Requests {
		t.Errorf("%d store calls over %d requests, want 4 each", row.Total, row.Requests)
	}
	// An operation on a payment claims its key in its reservation's
	// transaction: no claim of its own.
	row, _ = res.row("POST captures (Idempotency-Key)")
	if got := row.Counts["idempotency: claim"]; got != 0 {
		t.Errorf("captures: %d idempotency claims of their own over %d requests, want none", got, row.Requests)
	}
}
