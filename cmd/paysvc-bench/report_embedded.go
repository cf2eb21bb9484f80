package main

import (
	"fmt"
	"strings"
	"time"
)

// Targets of the embedded-store performance work (group commit, one write
// per notification item, the hot path's allocations), each measured
// against the simulator called directly in the same run.

// heavyConcurrency is the concurrency of the throughput and tail targets.
const heavyConcurrency = 16

// embeddedTargets evaluates them.
func (r *report) embeddedTargets() []target {
	return []target{r.lowLoadTarget(), r.throughputTarget(), r.tailTarget(), r.notificationStepsTarget(), r.allocsTarget()}
}

// ratio renders service/direct.
func ratio(service, direct time.Duration) string {
	if direct <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f×", float64(service)/float64(direct))
}

// lowLoadTarget: added p50 ≤ 1 ms at concurrency 1 for the endpoints that
// write (sessions, payments, captures).
func (r *report) lowLoadTarget() target {
	t := target{Name: "Concurrency 1, 0 ms upstream: added p50 ≤ 1 ms for sessions, payments, captures (embedded store)",
		Status: notMeasured, Measured: "— (run with `-c 1,…`)"}
	var parts []string
	ok, any := true, false
	for _, ep := range []string{"sessions", "payments", "captures"} {
		row, found := r.rowAt(ep, 0, 1)
		if !found {
			continue
		}
		any = true
		added := row.Service.P50 - row.Direct.P50
		parts = append(parts, fmt.Sprintf("%s %s (p50 %s = %s direct's %s)", ep, signed(added), dur(row.Service.P50),
			ratio(row.Service.P50, row.Direct.P50), dur(row.Direct.P50)))
		ok = ok && added <= time.Millisecond
	}
	if !any {
		return t
	}
	t.Measured, t.Status = strings.Join(parts, "; "), mark(ok)
	if !ok {
		t.Miss = "at concurrency 1 group commit has nobody to share a commit with: a request's writes stay sequential fsyncs " +
			"(payments: completion ‖ record after the upstream call, which the store commits together only when they meet; " +
			"captures also reserve their amount before the call), " +
			r.fsyncCost() + " What it would take: the completion and the record write as one commit, or no fsync for this " +
			"development-only store; we keep fsync."
	}
	return t
}

// fsyncCost states the measured cost of one durable write.
func (r *report) fsyncCost() string {
	if r.storeWrite == nil || r.storeWrite.P50 <= 0 {
		return "each an fsync."
	}
	return fmt.Sprintf("each a bbolt commit with fdatasync of %s (p50) on this disk (%s).", dur(r.storeWrite.P50), r.storeWrite.FS)
}

// throughputTarget: payments/s at concurrency 16 ≥ 25 % of direct.
func (r *report) throughputTarget() target {
	t := target{Name: fmt.Sprintf("Concurrency %d, 0 ms upstream: payments throughput ≥ 25 %% of direct (embedded store)", heavyConcurrency),
		Status: notMeasured, Measured: fmt.Sprintf("— (run with `-c …,%d`)", heavyConcurrency)}
	row, ok := r.rowAt("payments", 0, heavyConcurrency)
	if !ok || row.Direct.RPS <= 0 {
		return t
	}
	share := row.Service.RPS / row.Direct.RPS * 100
	t.Measured = fmt.Sprintf("%.0f payments/s = %.1f %% of direct's %.0f/s", row.Service.RPS, share, row.Direct.RPS)
	t.Status = mark(share >= 25)
	if share < 25 {
		t.Miss = fmt.Sprintf("the service side is CPU-bound on this 2-core machine shared with the load generator, the "+
			"simulator (the direct side's whole cost) and, here, other work (load average in the table above): its CPU per "+
			"payment is the hot path of §5 plus loopback HTTP twice (client → service → simulator) and the notification the "+
			"simulator sends back for each payment; writes are group-committed (fsyncs shared by up to %d writers). What it "+
			"would take: less CPU per request (§5) on an otherwise idle machine.", 128)
	}
	return t
}

// tailTarget: added p99 ≤ 25 ms at concurrency 16 for payments.
func (r *report) tailTarget() target {
	t := target{Name: fmt.Sprintf("Concurrency %d, 0 ms upstream: payments added p99 ≤ 25 ms (embedded store)", heavyConcurrency),
		Status: notMeasured, Measured: fmt.Sprintf("— (run with `-c …,%d`)", heavyConcurrency)}
	row, ok := r.rowAt("payments", 0, heavyConcurrency)
	if !ok {
		return t
	}
	added := row.Service.P99 - row.Direct.P99
	t.Measured = fmt.Sprintf("%s (p99 %s = %s direct's %s)", signed(added), dur(row.Service.P99), ratio(row.Service.P99, row.Direct.P99), dur(row.Direct.P99))
	t.Status = mark(added <= 25*time.Millisecond)
	if added > 25*time.Millisecond {
		t.Miss = "queueing on the two cores (see the throughput target): at 16 concurrent clients a request waits for CPU " +
			"behind the others and behind the notifications and webhook deliveries each payment causes."
	}
	return t
}

// notificationStepsTarget: sequential store steps of one notification item
// on the embedded store, from BenchmarkNotificationItem's steps/op.
func (r *report) notificationStepsTarget() target {
	t := target{Name: "Notification pipeline ≤ 4 sequential store steps per item (embedded store)", Status: notMeasured,
		Measured: "— (run with `-gobench`, as `make bench` does)"}
	b, ok := findBench(r.gobench, "BenchmarkNotificationItem/outbox")
	if !ok {
		return t
	}
	steps, writes := b.Metrics["steps/op"], b.Metrics["writes/op"]
	t.Measured = fmt.Sprintf("%.1f steps, %.1f writes per item (AUTHORISATION and CAPTURE alternating; BenchmarkNotificationItem/outbox)", steps, writes)
	if sb, ok := findBench(r.gobench, "BenchmarkNotificationItem/stepwise"); ok {
		t.Measured += fmt.Sprintf("; step by step, as with SQS: %.1f steps, %.1f writes", sb.Metrics["steps/op"], sb.Metrics["writes/op"])
	}
	t.Status = mark(steps <= 4)
	if steps > 4 {
		t.Miss = "the item is not written in one transaction (shared/notifications/commit.go)."
	}
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
	t.Status = mark(allocs <= 120)
	if allocs > 120 {
		t.Miss = "what is left is spread over the whole pipeline, a few allocations each (alloc profile: " +
			"`go test -run '^$' -bench 'RequestCPU/payments$' -memprofile m.out -memprofilerate 1 ./shared/httpapi/`): " +
			"net/http's request to the upstream (URL parsing, headers, context deadline, connection trace), the upstream " +
			"request's remaining encoding/json work (its struct, splits), the strict body parser's string values, " +
			"context values per request, the record write's goroutine, the stored response, the request log, and about 35 " +
			"of the benchmark's own (httptest request and recorder, canned upstream, in-memory store). " +
			"What it would take: a prepared upstream request (no URL parse per call), a hand-written encoder for the whole " +
			"upstream request, and fewer per-request values; each removes 5-15."
	}
	return t
}

// changesSection says what each change of the embedded-store work bought.
// Figures of this run where the run measures both sides; the group-commit
// comparison needs the store without it and is quoted from its own run.
func (r *report) changesSection(w func(string, ...any)) {
	w("## 6. What each change bought\n\n")
	w("| change | what it bought |\n|---|---|\n")
	w("| Group commit in `shared/store/embedded` (concurrent writers share one bbolt commit and fsync; a lone writer commits at once) | ")
	w("concurrency 16, 0 ms upstream, payments: 541/s (3.7 %% of direct) → 1523/s (21 %%), added p50 +26.9 ms → +7.7 ms, p99 +65.4 ms → +43.8 ms; ")
	w("captures 409/s → 1272/s (side by side on 2026-11-24, `-sections overhead -latencies 0 -c 1,16 -endpoints sessions,payments,captures -n 800`, ")
	w("\"before\" with the store's writes through `db.Update`). Nothing at concurrency 1: a lone writer has nobody to share with. |\n")
	w("| One transaction per notification item (`notifications.Outbox`: event, payment record, deliveries and their local-queue jobs) after one round of concurrent reads | ")
	if ob, ok := findBench(r.gobench, "BenchmarkNotificationItem/outbox"); ok {
		if sb, ok := findBench(r.gobench, "BenchmarkNotificationItem/stepwise"); ok {
			w("%.1f → %.1f sequential store steps and %.1f → %.1f writes (fsyncs) per item (this run, BenchmarkNotificationItem); ",
				sb.Metrics["steps/op"], ob.Metrics["steps/op"], sb.Metrics["writes/op"], ob.Metrics["writes/op"])
		}
	}
	w("the notifications that follow each payment no longer compete with the API for the single writer with ~6 commits each. |\n")
	w("| Hot path: request members in a slice with names as bytes, lazy field paths, upstream answer decoded without reflection, shared header values, pooled fingerprint buffers, bodies read at their declared length, the upstream transport called directly | ")
	if b, ok := findBench(r.gobench, "BenchmarkRequestCPU/payments"); ok {
		w("BenchmarkRequestCPU/payments 244 allocs (33.2 KB) before → %.0f allocs (%.1f KB) in this run; ", b.Metrics["allocs/op"], b.Metrics["B/op"]/1024)
	}
	w("CPU per request follows the allocations (less garbage collection); before: 168 µs in the previous `make bench`, 97 µs in a quick run at the start of this work. |\n")
	w("| Hot path, second pass: the upstream request's string maps encoded without reflection, plain e-mail addresses checked without net/mail, digests and the derived upstream key in stack buffers, the site check's error made only when it is the answer | ")
	w("BenchmarkRequestCPU/payments 166 → 147 allocs per request (on the merged code, before and after; this run's figure above). |\n")
	w("| Idempotency leases in memory on the embedded store (one process; only the completed answer is written and synced) | ")
	w("one commit (fsync) less before the upstream call: concurrency 1, 0 ms upstream, added p50 sessions +1.28 → +1.08 ms, payments +1.31 → +1.04 ms; ")
	w("concurrency 16 payments 1763/s → 2461/s (side by side on 2026-11-24, `-sections overhead -latencies 0 -c 1,16 -endpoints sessions,payments,captures -n 600`, ")
	w("other work on the machine). Captures unchanged (+1.5 ms): their reservation commit stays before the call. A crashed request's retry runs again at once with the same derived upstream key. |\n")
	w("| Durability test (`TestLocalServerKilledDuringPaymentBurst`, in `make test`) | SIGKILL during a burst of 8 clients: every answered payment is stored and replays after restart, its webhook is delivered, and no key is charged twice (simulator in the test process, outliving the crash). |\n\n")
}
