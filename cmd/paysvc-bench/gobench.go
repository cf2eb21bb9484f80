package main

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// goBench is one result line of `go test -bench -benchmem`.
type goBench struct {
	Pkg     string
	Name    string             // without the -GOMAXPROCS suffix
	Metrics map[string]float64 // unit → value: ns/op, B/op, allocs/op, MB/s, custom
	Runs    int                // results this one is the median of (medianRuns)
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseGoBench reads the benchmark lines of `go test -bench` output,
// attributing each to the preceding "pkg:" line.
func parseGoBench(out string) []goBench {
	var res []goBench
	pkg := ""
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil { // the iterations
			continue
		}
		b := goBench{Pkg: pkg, Name: procsSuffix.ReplaceAllString(f[0], ""), Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			b.Metrics[f[i+1]] = v
		}
		res = append(res, b)
	}
	return res
}

// medianRuns keeps one result per benchmark (package and name), the run
// with the median ns/op, when `-count` ran each several times; Runs counts
// them. Order is that of the first appearance.
func medianRuns(bs []goBench) []goBench {
	type key struct{ pkg, name string }
	groups := map[key][]goBench{}
	var order []key
	for _, b := range bs {
		k := key{b.Pkg, b.Name}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], b)
	}
	out := make([]goBench, 0, len(order))
	for _, k := range order {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool { return g[i].Metrics["ns/op"] < g[j].Metrics["ns/op"] })
		m := g[(len(g)-1)/2]
		m.Runs = len(g)
		out = append(out, m)
	}
	return out
}

// goBenchFailures returns the packages `go test` reported as failed (a
// build error or a failing benchmark).
func goBenchFailures(out string) []string {
	var failed []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "FAIL" {
			failed = append(failed, f[1])
		}
	}
	return failed
}

// findBench returns the benchmark named name (e.g. "BenchmarkRequestCPU/payments").
func findBench(bs []goBench, name string) (goBench, bool) {
	for _, b := range bs {
		if b.Name == name {
			return b, true
		}
	}
	return goBench{}, false
}
