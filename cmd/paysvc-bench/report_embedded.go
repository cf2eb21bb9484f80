package main

import "fmt"

// Targets of the embedded store's notification pipeline and the hot
// path's allocations.

// notificationStepsTarget: sequential store steps of one notification item
// on the embedded store, from BenchmarkNotificationItem's steps/op.
func (r *report) notificationStepsTarget() target {
	t := target{Name: "Notification pipeline ≤ 4 sequential store steps per item (embedded store)", Status: notMeasured,
		Measured: "— (run with `-gobench`, as `make bench` does)"}
	b, ok := findBench(r.gobench, "BenchmarkNotificationItem")
	if !ok {
		return t
	}
	steps, writes := b.Metrics["steps/op"], b.Metrics["writes/op"]
	t.Measured = fmt.Sprintf("%.1f steps, %.1f writes per item (AUTHORISATION and CAPTURE alternating; BenchmarkNotificationItem: "+
		"one pipeline on both stores, the same steps as with DynamoDB)", steps, writes)
	t.judge(steps <= 4, "an item's reads, writes and marking are more than four rounds (shared/notifications/receiver.go).")
	return t
}

// allocsTarget: allocations per payments request.
func (r *report) allocsTarget() target {
	t := target{Name: "Hot-path allocations per payments request ≤ 120", Status: notMeasured,
		Measured: "— (run with `-gobench`, as `make bench` does)"}
	b, ok := findBench(r.gobench, "BenchmarkRequestCPU/payments")
	if !ok {
		return t
	}
	allocs := b.Metrics["allocs/op"]
	t.Measured = fmt.Sprintf("%.0f allocs, %.1f KB per request (BenchmarkRequestCPU/payments; the benchmark's own request, "+
		"recorder and in-memory upstream included)", allocs, b.Metrics["B/op"]/1024)
	t.judge(allocs <= 120, "what is left is spread over the whole pipeline, one or two allocations each (alloc profile: "+
		"`go test -run '^$' -bench 'RequestCPU/payments$' -memprofile m.out -memprofilerate 1 ./shared/httpapi/`): "+
		"net/http's request to the upstream (request, headers, context deadline, connection trace), the upstream "+
		"request's encoding/json work, the idempotency fingerprint, key and lease, context values per request, "+
		"the record write's goroutine, the request log, and about 38 of the benchmark's own (httptest request "+
		"and recorder, canned upstream, in-memory store), and the fingerprint's encoding/json decoding of the body "+
		"(a map per object). What it would take: hand-written encoders for the upstream request, the records and the "+
		"fingerprint; not taken, for the reason the CPU target gives.")
	return t
}
