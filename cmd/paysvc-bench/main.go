// Command paysvc-bench measures what the service adds on top of the
// upstream and prints a Markdown report (issue 6; `make bench` writes it to
// BENCHMARKS.md together with the `go test -bench` hot-path results):
//
//  1. overhead: p50/p90/p99 latency and requests/s of config, sessions,
//     payments (unique Idempotency-Key per request) and captures through
//     the local server (shared/localserver, embedded store) against the
//     same requests sent straight to the upstream simulator, at 0 ms and
//     150 ms simulator latency, in interleaved rounds of a bounded
//     closed-loop load generator on 127.0.0.1;
//  2. roundtrips: DynamoDB (and SQS) calls per operation against moto,
//     counted and timed by an SDK middleware, with the sequential steps of
//     each request's critical path;
//  3. coldstart: bootstrap sizes (arm64, amd64), init time, first-request
//     latency and peak RSS of every function under the Lambda Runtime API
//     harness, over repeated starts;
//  4. webhooks: deliveries/s of one dispatcher instance to a loopback
//     receiver, and how long nine deliveries take when the tenth receiver
//     of their batch hangs;
//  6. scale (reported after item 5, the hot paths): the DynamoDB
//     capacity model (shared/capacity) on one merchant's 10,000
//     payments/s for 60 s, checked against DynamoDB's
//     per-partition limits and against item 2's counts, and the cost of a
//     payment from item 2's measured durations and log bytes
//     (-scale-out docs/scale.md writes its generated part).;
//  7. contention: 50 operations on one payment at once (25 captures, 25
//     refunds) on the embedded store and on DynamoDB (moto), the wall time
//     of each answer against issue 27's 5 s bound
//
// Everything listens on 127.0.0.1 only, every run has a fixed request
// count and a deadline, and the command stops by itself.
//
// Usage:
//
//	go run ./cmd/paysvc-bench [-smoke] [-sections overhead,roundtrips,coldstart,webhooks,scale,contention]
//	    [-n 2000] [-n-slow 300] [-c 4] [-starts 10] [-out BENCHMARKS.md] [-gobench FILE]
//	    [-scale-out docs/scale.md] [-upstream-ms 300] [-receiver-ms 150]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/yp/paysvc/internal/motoserver"
)

// Sections of the report, in order.
const (
	secOverhead   = "overhead"
	secRoundTrips = "roundtrips"
	secColdStart  = "coldstart"
	secWebhooks   = "webhooks"
	secScale      = "scale"
	secContention = "contention"
)

var allSections = []string{secOverhead, secRoundTrips, secColdStart, secWebhooks, secScale, secContention}

// config is what to run; see parseFlags for the meaning of each field.
type config struct {
	Smoke           bool
	Sections        []string
	Endpoints       []string
	Requests        int
	RequestsSlow    int
	Concurrency     []int
	ConcurrencySlow int
	Latencies       []time.Duration
	Rounds          int
	RTRequests      int
	Starts          int
	Functions       []string
	ColdStartPkgs   []string
	Arm64           bool
	Deliveries      int
	HangFor         time.Duration
	GoBench         string
	Out             string
	ScaleOut        string
	UpstreamMS      int
	ReceiverMS      int
	Timeout         time.Duration
	Command         string // the command line, for the report
	CPUProfile      string // -cpuprofile
	Trace           string // -trace

	progress io.Writer
	// recordStates makes item 2 record each DynamoDB call's items
	// (callRecorder.states) on the capacity model's merchant (its
	// subscriptions and listing shards): what the model replays, not a
	// measurement.
	recordStates bool
}

// logf writes a progress line (stderr; never the report).
func (c *config) logf(format string, args ...any) {
	fmt.Fprintf(c.progress, "paysvc-bench: "+format+"\n", args...)
}

// sectionWanted reports whether -sections names s.
func (c *config) sectionWanted(s string) bool { return slices.Contains(c.Sections, s) }

// wanted reports whether a list flag (-endpoints, -functions) selects x:
// all by default ("-functions none" selects no package of functions/).
func wanted(list []string, x string) bool { return len(list) == 0 || slices.Contains(list, x) }

// parseFlags reads the command line. -smoke changes the defaults of every
// size flag that is not given explicitly.
func parseFlags(args []string, progress io.Writer) (*config, error) {
	fs := flag.NewFlagSet("paysvc-bench", flag.ContinueOnError)
	fs.SetOutput(progress)
	smoke := fs.Bool("smoke", false, "tiny runs of every section (seconds): keeps the command working in CI")
	sections := fs.String("sections", strings.Join(allSections, ","), "sections to run: "+strings.Join(allSections, ","))
	endpoints := fs.String("endpoints", "", "overhead endpoints (default all): config,sessions,payments,captures")
	n := fs.Int("n", 2000, "overhead: requests per side (service, direct) and endpoint at 0 ms upstream latency")
	nSlow := fs.Int("n-slow", 300, "overhead: requests per side and endpoint at the slow upstream latency")
	conc := fs.String("c", "1", "overhead: concurrency levels of the closed-loop load generator at 0 ms upstream latency (the target's: 1)")
	concSlow := fs.Int("c-slow", 8, "overhead: concurrency at the slow upstream latency")
	latencies := fs.String("latencies", "0,150ms", "overhead: simulator latencies")
	rounds := fs.Int("rounds", 4, "overhead: interleaved service/direct rounds per endpoint")
	rt := fs.Int("rt-requests", 5, "roundtrips: measured requests per operation")
	starts := fs.Int("starts", 10, "coldstart: starts per function")
	functions := fs.String("functions", "", "coldstart: functions (default every directory of functions/; none: no function)")
	coldPkgs := fs.String("coldstart-pkgs", "", "coldstart: extra module-relative main packages to start, e.g. ./tests/lambdaharness/testdata/echo (the smoke test's quick stand-in)")
	arm64 := fs.Bool("arm64", true, "coldstart: also build arm64 bootstraps for their size")
	deliveries := fs.Int("deliveries", 1000, "webhooks: deliveries of the throughput run")
	hang := fs.Duration("hang", 15*time.Second, "webhooks: how long the hanging receiver holds its request")
	gobench := fs.String("gobench", "", "file with `go test -bench -benchmem` output to include (hot paths)")
	out := fs.String("out", "", "write the report to this file (default stdout)")
	scaleOut := fs.String("scale-out", "", "scale: write the generated part of this document (docs/scale.md)")
	upstreamMS := fs.Int("upstream-ms", 300, "scale: upstream latency assumed in the billed duration of calls that reach it")
	receiverMS := fs.Int("receiver-ms", 150, "scale: webhook receiver answer time assumed in the dispatcher's billed duration")
	timeout := fs.Duration("timeout", 30*time.Minute, "stop everything after this long")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (service, simulator and load generator share the process: go tool pprof -focus)")
	traceOut := fs.String("trace", "", "write an execution trace of the whole run to this file (where a request waits: go tool trace -pprof=sched|syscall|sync)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *smoke {
		setSmokeDefaults(fs)
	}
	c := &config{
		Smoke: *smoke, Sections: splitList(*sections), Endpoints: splitList(*endpoints),
		Requests: *n, RequestsSlow: *nSlow, ConcurrencySlow: *concSlow, Rounds: *rounds, RTRequests: *rt,
		Starts: *starts, Functions: splitList(*functions), ColdStartPkgs: splitList(*coldPkgs), Arm64: *arm64, Deliveries: *deliveries,
		HangFor: *hang, GoBench: *gobench, Out: *out, Timeout: *timeout, progress: progress,
		ScaleOut: *scaleOut, UpstreamMS: *upstreamMS, ReceiverMS: *receiverMS,
		Command: commandLine(args), CPUProfile: *cpuProfile, Trace: *traceOut,
	}
	if err := c.check(*conc, *latencies); err != nil {
		return nil, err
	}
	return c, nil
}

// smokeDefaults are -smoke's sizes, for the flags not given explicitly.
var smokeDefaults = map[string]string{
	"n": "40", "n-slow": "8", "c": "1,2", "c-slow": "4", "latencies": "0,20ms", "rounds": "2", "rt-requests": "1",
	"starts": "2", "functions": "config", "arm64": "false", "deliveries": "20", "hang": "500ms", "timeout": "2m",
}

// setSmokeDefaults sets smokeDefaults on the flags of fs that the command
// line did not set (fs parsed: the values are read after).
func setSmokeDefaults(fs *flag.FlagSet) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range smokeDefaults {
		if !set[name] {
			_ = fs.Set(name, v)
		}
	}
}

// check validates c's names and sizes and parses the -c and -latencies
// lists into it.
func (c *config) check(conc, latencies string) error {
	for _, s := range c.Sections {
		if !slices.Contains(allSections, s) {
			return fmt.Errorf("unknown section %q (want %s)", s, strings.Join(allSections, ","))
		}
	}
	for _, e := range c.Endpoints {
		if !slices.Contains(overheadEndpoints, e) {
			return fmt.Errorf("unknown endpoint %q (want %s)", e, strings.Join(overheadEndpoints, ","))
		}
	}
	for _, x := range splitList(conc) {
		v, err := strconv.Atoi(x)
		if err != nil || v < 1 {
			return fmt.Errorf("bad concurrency %q", x)
		}
		c.Concurrency = append(c.Concurrency, v)
	}
	for _, l := range splitList(latencies) {
		d, err := time.ParseDuration(l)
		if err != nil || d < 0 {
			return fmt.Errorf("bad latency %q", l)
		}
		c.Latencies = append(c.Latencies, d)
	}
	switch {
	case c.Requests < 1 || c.RequestsSlow < 1 || len(c.Concurrency) == 0 || c.ConcurrencySlow < 1 || c.Rounds < 1 || c.RTRequests < 1:
		return errors.New("-n, -n-slow, -c, -c-slow, -rounds and -rt-requests must be at least 1")
	case c.Starts < 1 || c.Deliveries < 10:
		return errors.New("-starts must be at least 1 and -deliveries at least 10")
	case c.HangFor <= 0 || c.Timeout <= 0:
		return errors.New("-hang and -timeout must be positive")
	case c.UpstreamMS < 0 || c.ReceiverMS < 0:
		return errors.New("-upstream-ms and -receiver-ms must not be negative")
	}
	return nil
}

// commandLine renders the command for the report, without the temporary
// file of -gobench.
func commandLine(args []string) string {
	out := []string{"go run ./cmd/paysvc-bench"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-gobench" || a == "--gobench":
			out = append(out, a, "<go test -bench output>")
			i++
		case strings.HasPrefix(a, "-gobench=") || strings.HasPrefix(a, "--gobench="):
			out = append(out, "-gobench=<go test -bench output>")
		default:
			out = append(out, a)
		}
	}
	return strings.Join(out, " ")
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// main parses the flags, runs the sections, writes the report and exits
// non-zero when a measurement failed (the report still says which).
func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "paysvc-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile, err := startProfiles(cfg.CPUProfile, cfg.Trace)
	if err != nil {
		fmt.Fprintln(os.Stderr, "paysvc-bench:", err)
		os.Exit(2)
	}
	rep, runErr := run(ctx, cfg)
	stopProfile()
	stop()
	motoserver.Stop() // the moto_server this process started, if any
	if err := writeReport(cfg, rep); err != nil {
		fmt.Fprintln(os.Stderr, "paysvc-bench:", err)
		os.Exit(1)
	}
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "paysvc-bench: some measurements failed (see the report):", runErr)
		os.Exit(1)
	}
}

// startProfiles starts a CPU profile into cpuPath and an execution trace
// into tracePath ("": none) and returns the function that ends them.
func startProfiles(cpuPath, tracePath string) (func(), error) {
	stopCPU, err := startProfile(cpuPath, pprof.StartCPUProfile, pprof.StopCPUProfile)
	if err != nil {
		return nil, err
	}
	stopTrace, err := startProfile(tracePath, trace.Start, trace.Stop)
	if err != nil {
		stopCPU()
		return nil, err
	}
	return func() { stopTrace(); stopCPU() }, nil
}

// startProfile runs start into a new file at path ("": nothing) and
// returns the function that stops it and closes the file.
func startProfile(path string, start func(io.Writer) error, stop func()) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		stop()
		_ = f.Close()
	}, nil
}

// keptMarker starts the hand-written part of the report (its history of
// what each change bought), which a new report keeps.
const keptMarker = "<!-- Everything below is written by hand and kept by make bench. -->"

// writeReport renders rep to cfg.Out (atomically, keeping the part of the
// file below keptMarker) or stdout.
func writeReport(cfg *config, rep *report) error {
	md := rep.markdown()
	if cfg.Out == "" {
		_, err := io.WriteString(os.Stdout, md)
		return err
	}
	if old, err := os.ReadFile(cfg.Out); err == nil {
		if _, kept, ok := strings.Cut(string(old), keptMarker); ok {
			md = strings.TrimRight(md, "\n") + "\n\n" + keptMarker + kept
		}
	}
	tmp := cfg.Out + ".tmp"
	if err := os.WriteFile(tmp, []byte(md), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, cfg.Out)
}

// run measures every wanted section and returns the report; the error
// joins the failures of the sections (which the report also shows).
func run(ctx context.Context, cfg *config) (*report, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	rep := &report{cfg: cfg, machine: readMachine(), started: time.Now().UTC(), errs: map[string]error{}}
	if cfg.GoBench != "" {
		b, err := os.ReadFile(cfg.GoBench)
		if err != nil {
			rep.errs["gobench"] = err
		} else {
			rep.gobench = medianRuns(parseGoBench(string(b)))
			if failed := goBenchFailures(string(b)); len(failed) > 0 {
				rep.errs["gobench"] = fmt.Errorf("go test -bench failed in %s", strings.Join(failed, ", "))
			}
		}
	}
	for _, s := range cfg.Sections {
		if ctx.Err() != nil {
			rep.errs[s] = fmt.Errorf("not run: %w", ctx.Err())
			continue
		}
		start := time.Now()
		cfg.logf("%s: start", s)
		var err error
		switch s {
		case secOverhead:
			rep.overhead, err = runOverhead(ctx, cfg)
		case secRoundTrips:
			rep.roundTrips, err = runRoundTrips(cfg)
		case secColdStart:
			rep.coldStart, err = runColdStart(ctx, cfg)
		case secWebhooks:
			rep.webhooks, err = runWebhooks(ctx, cfg)
		case secScale:
			rep.scale, err = runScale(cfg, rep.roundTrips)
		case secContention:
			rep.contention, err = runContention(ctx, cfg)
		}
		if err != nil {
			rep.errs[s] = err
			cfg.logf("%s: FAILED after %s: %v", s, time.Since(start).Round(time.Millisecond), err)
			continue
		}
		cfg.logf("%s: done in %s", s, time.Since(start).Round(time.Millisecond))
	}
	rep.finished = time.Now().UTC()
	rep.loadEnd = loadAvg()
	var errs []error
	for _, s := range append([]string{"gobench"}, cfg.Sections...) {
		if err := rep.errs[s]; err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
		}
	}
	return rep, errors.Join(errs...)
}
