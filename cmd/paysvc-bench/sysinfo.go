package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes where the benchmarks ran.
type machine struct {
	CPU       string
	Cores     int
	MemoryGiB float64
	Kernel    string
	GoVersion string // `go version` (the toolchain that built the bootstraps)
	LoadStart string // /proc/loadavg when the run started
}

// readMachine reads /proc/cpuinfo, /proc/meminfo, the kernel release and
// `go version`.
func readMachine() machine {
	m := machine{Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if m.CPU == "" {
		m.CPU = "unknown (" + runtime.GOARCH + ")"
	}
	if kb, ok := procKB("/proc/meminfo", "MemTotal"); ok {
		m.MemoryGiB = float64(kb) / (1 << 20)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadStart = loadAvg()
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	} else {
		m.GoVersion = "go not on PATH (" + runtime.Version() + ")"
	}
	return m
}

// procKB reads a "VmHWM:"-style field (kB) of a /proc file
// (/proc/<pid>/status, /proc/meminfo).
func procKB(path, field string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}

// procCPU is the CPU time a process has used so far, all its threads
// together: the first field of /proc/<pid>/task/<tid>/schedstat
// (nanoseconds on a CPU), precise where /proc/<pid>/stat counts 10 ms
// ticks. false when it cannot be read (not Linux, the process is gone).
func procCPU(pid int) (time.Duration, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}
