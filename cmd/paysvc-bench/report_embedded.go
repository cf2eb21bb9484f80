package main

import (
	"fmt"
	"slices"
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

// medianOf is the median of xs (not empty).
func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
		t.Miss = "at concurrency 1 a request's writes after the upstream call are one commit (the idempotency result and the " +
			"record write join a write group and share it), and sessions and payments make no other; captures also reserve " +
			"their amount on the record before the call, durably, in the payment journal (one write and one fdatasync). " +
			r.fsyncCost() + " What is left beside that is loopback HTTP twice and the pipeline's CPU (§5). What it would take: " +
			"the final commit in the journal too (one fdatasync instead of bbolt's two), or no fsync for this development-only " +
			"store; we keep fsync."
	}
	return t
}

// fsyncCost states the measured cost of one durable write.
func (r *report) fsyncCost() string {
	if r.storeWrite == nil || r.storeWrite.P50 <= 0 {
		return "A commit is a bbolt transaction with fdatasync."
	}
	return fmt.Sprintf("A commit is a bbolt transaction with fdatasync: %s (p50) on this disk (%s) for one write alone.", dur(r.storeWrite.P50), r.storeWrite.FS)
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
	if len(row.Shares) > 1 {
		// Each round's two sides ran back to back: the median round
		// share decides, the pooled one drifts with the machine.
		var rounds []string
		for _, sh := range row.Shares {
			rounds = append(rounds, fmt.Sprintf("%.1f %%", sh*100))
		}
		share = medianOf(row.Shares) * 100
		t.Measured += fmt.Sprintf("; median of the %d rounds' shares %.1f %% (%s)", len(row.Shares), share, strings.Join(rounds, ", "))
	}
	t.Status = mark(share >= 25)
	if share < 25 {
		t.Miss = "the load generator, the service and the simulator (the direct side's whole cost) share this 2-core machine " +
			"(and other work: load average in the table above); per payment the service adds loopback HTTP twice (client → " +
			"service → simulator), the hot path of §5 and a wait for its group commit (one fdatasync shared by the requests " +
			"that meet; the local server runs two Go Ps per CPU so a thread in fdatasync does not idle a core). The direct " +
			"side's rate moves by ±30 % from run to run on this machine, and the share with it. Traced on 2026-11-25 " +
			"(temporary instrumentation; a stray process of ours kept one core busy during it, so the figures are high): " +
			"the single writer's commits were busy 83 % of the time, 13 requests per commit on average but alternating " +
			"with commits of one request, and a commit's time was mostly the disk's — page writes and two fdatasyncs " +
			"took 0.25–0.8 ms typically and 2–13 ms at times. Making the leader wait up to 0.3–1 ms for requests in " +
			"flight (bigger groups) did not raise the throughput under those conditions (not repeated on an idle machine); " +
			"without fsync (an experiment, 2026-11-24) the share was 38 %. On the idle machine the same day the share " +
			"was 31 % (`-sections overhead -latencies 0 -c 1,16 -n 2000`). What it would take: a disk with steadier " +
			"fsync latency, fewer pages written per request, and less CPU per request (§5)."
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
			"behind the others and for the commit under way before its own."
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
		t.Miss = "what is left is spread over the whole pipeline, one or two allocations each (alloc profile: " +
			"`go test -run '^$' -bench 'RequestCPU/payments$' -memprofile m.out -memprofilerate 1 ./shared/httpapi/`): " +
			"net/http's request to the upstream (request, headers, context deadline, connection trace), the upstream " +
			"request's encoding/json work, the idempotency fingerprint, key and lease, context values per request, " +
			"the record write's goroutine, the request log, and about 38 of the benchmark's own (httptest request " +
			"and recorder, canned upstream, in-memory store). What it would take: a hand-written encoder for the whole " +
			"upstream request, and fewer per-request values."
	}
	return t
}

// changesSection says what each change of the embedded-store work bought.
// Figures of this run where the run measures both sides; the group-commit
// comparison needs the store without it and is quoted from its own run.
func (r *report) changesSection(w func(string, ...any)) {
	w("## 7. What each change bought\n\n")
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
	w("| Write groups (`shared/store/embedded/groupcommit.go`): a request's idempotency result and its record writes after the upstream call wait for each other (at most 3 ms) and share one commit, where the first used to commit alone and the second waited for its fsync | ")
	w("concurrency 1, 0 ms upstream, added p50 (one run each, in sequence): sessions +877 → +662 µs, payments +908 → +771 µs, captures +1.31 → +1.07 ms. |\n")
	w("| Retention sweep in chunks of 512 records, each its own short commit, instead of a full decode of every bucket inside a request's write transaction every 1024 writes | ")
	w("the concurrency-16 p99 stalls (+60 to +300 ms) once earlier runs had filled the file: payments added p99 +93.4 / +73.7 ms → +2.3 / +7.1 ms (side by side below). |\n")
	w("| Upstream transport keeps 64 idle connections per host (net/http's default: 2) | at concurrency 16 concurrent upstream calls reuse connections instead of opening and closing one each: payments 2550 → 3100/s (one run each, in sequence). |\n")
	w("| Local server on the embedded store runs 2 Go Ps per CPU (GOMAXPROCS, unless set) | a thread blocked in fdatasync keeps its P; with one P per CPU a core sat idle meanwhile: concurrency 16 payments 2927 → 3938/s (the same binary with GOMAXPROCS=2 and 4, one run each). |\n")
	w("| The four above together (side by side on 2026-11-24: the code before and after, alternating, two rounds each, `-sections overhead -latencies 0 -c 1,16 -endpoints sessions,payments,captures -n 1000`) | ")
	w("concurrency 16 payments 2378 / 2010/s (11.1 / 12.2 %% of direct) → 3998 / 3712/s (34.7 / 24.4 %%), sessions 2603 / 2269 → 4954 / 3789/s, captures 2298 / 1479 → 3072 / 3598/s; ")
	w("concurrency 1 added p50 sessions +937 µs / +1.14 ms → +851 / +864 µs, payments +975 µs / +1.08 ms → +803 µs / +1.06 ms, captures +1.27 / +1.62 ms → +1.05 / +1.24 ms. |\n")
	w("| bbolt's free-page list is not written on each commit (`NoFreelistSync`; Open rebuilds the list by walking the file; crash safety unchanged) | ")
	w("one page write fewer per fdatasync'd commit (a session's or capture's final commit at concurrency 1 made 7–10 page writes, the meta page included, now 6–9: bbolt's own write counters); ")
	w("the latency it saves (tens of µs) is inside this machine's run-to-run noise. With this session's other changes, side by side on an idle machine ")
	w("(2945cfe and 5 commits later alternating, two rounds, 2026-11-25, `-sections overhead -latencies 0 -c 1,16 -endpoints sessions,payments,captures -n 1000`): ")
	w("concurrency 1 payments 1158 / 1104 → 1227 / 1240/s, captures 880 / 942 → 910 / 981/s, sessions 1260 / 1281 → 1205 / 1184/s; concurrency 16 payments 4622 / 4570 → 4506 / 4624/s (unchanged). |\n")
	w("| Hot path, third pass: one string and one member arena per request body (`jsonin`: string fields are slices of it), the upstream answer's strings decoded without escaping to the heap, splits in one allocation, the domain call inside the HTTP call, the fixed upstream URLs built once, a one-allocation request body, the request log's attributes on the stack, rate-limit names in one allocation, the API key hashed from a stack copy | ")
	w("BenchmarkRequestCPU/payments 142 → 114 allocations; CPU 100.6 / 85.5 → 83.8 / 78.1 µs (the two commits' test binaries alternating on an idle machine, 2026-11-25). |\n")
	w("| `make bench` runs the Go benchmarks one package at a time (`go test -p 1`) | a measurement fix, not a speed-up: the earlier runs had two benchmark binaries share the 2 cores, and the hot path measured 99–134 µs there; measured alone the code of then takes 86–101 µs (row above). |\n")
	w("| Payment and completed idempotency records encoded before their write transaction; the version check decodes only the stored record's version and creation time | less CPU inside the commit every writer waits for; no throughput change measurable at concurrency 16 (four alternating rounds each, with a stray process of ours busy on one core: 2901 vs 2827 payments/s on average), where a commit's time is mostly the disk's (see the throughput target's note). |\n")
	w("| Payment journal (`shared/store/embedded/journal.go`): a payment save that commits alone (a capture's reservation before its upstream call, at low load) is one write and one fdatasync to a preallocated log beside the file instead of a bbolt commit (page writes, two fdatasyncs); the record is read from memory until the next commit puts it into the file first; Open puts what a crash left there into the file | ")
	w("the reservation's commit measured 270–320 µs p50 on the request path (temporary instrumentation; the final commit 350–400 µs); its journal write is one fdatasync of about 100 µs. Side by side (the commit before and after, alternating, two rounds, 2026-11-25, idle machine, `-sections overhead -latencies 0 -c 1,16 -endpoints sessions,payments,captures -n 1000`): ")
	w("concurrency 1 captures added p50 +1.05 ms / +928 µs → +867 / +828 µs; concurrency 16 captures 3637 / 3908 → 3987 / 3953/s; sessions and payments unchanged within the noise (they make no lone save). |\n")
	w("| Durability tests (`TestLocalServerKilledDuringPaymentBurst`, `TestLocalServerKilledDuringCaptureBurst`, in `make test`) | SIGKILL during a burst of 8 clients: every answered payment is stored and replays after restart, its webhook is delivered, and no key is charged twice; every answered capture replays, every unanswered one completes on retry, each reached the upstream once, and each record ends with its captures captured and none in flight (simulator in the test process, outliving the crash; about half the capture runs kill the server with a reservation in the journal, folded on restart). |\n\n")
}
