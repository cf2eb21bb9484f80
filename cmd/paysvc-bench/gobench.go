package main

import (
	"regexp"
	"strconv"
	"strings"
)

// goBench is one result line of `go test -bench -benchmem`.
type goBench struct {
	Pkg     string
	Name    string // without the -GOMAXPROCS suffix
	N       int64
	Metrics map[string]float64 // unit → value: ns/op, B/op, allocs/op, MB/s, custom
	Units   []string           // in the order printed
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
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		b := goBench{Pkg: pkg, Name: procsSuffix.ReplaceAllString(f[0], ""), N: n, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			b.Metrics[f[i+1]] = v
			b.Units = append(b.Units, f[i+1])
		}
		res = append(res, b)
	}
	return res
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
