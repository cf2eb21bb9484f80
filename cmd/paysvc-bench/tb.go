package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// benchTB lets the bench command reuse the project's test helpers
// (testutil/moto, tests/lambdaharness, testenv), which take a testing.TB,
// outside `go test`. Fatal and FailNow panic with tbFailure, which
// runSection recovers into an error; Cleanup functions run on close, last
// registered first. Like testing.T, FailNow must be called from the
// goroutine running the section.
type benchTB struct {
	// testing.TB supplies the unexported method; it is nil, and every
	// exported method is implemented below.
	testing.TB

	name string
	log  io.Writer

	mu       sync.Mutex
	cleanups []func()
	failed   bool
	skipped  bool
	ctx      context.Context
	cancel   context.CancelFunc
}

// tbFailure is the panic value of a failed benchTB.
type tbFailure struct{ msg string }

// newBenchTB returns a benchTB named name logging to log.
func newBenchTB(name string, log io.Writer) *benchTB {
	ctx, cancel := context.WithCancel(context.Background())
	return &benchTB{name: name, log: log, ctx: ctx, cancel: cancel}
}

// close runs the cleanups, last registered first.
func (t *benchTB) close() {
	t.cancel()
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		f()
	}
}

// ArtifactDir returns a fresh temporary directory.
func (t *benchTB) ArtifactDir() string { return t.TempDir() }

// Attr is ignored.
func (t *benchTB) Attr(string, string) {}

// Cleanup registers f to run when the section ends.
func (t *benchTB) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// Error logs and marks the section failed.
func (t *benchTB) Error(args ...any) { t.Log(args...); t.Fail() }

// Errorf logs and marks the section failed.
func (t *benchTB) Errorf(format string, args ...any) { t.Logf(format, args...); t.Fail() }

// Fail marks the section failed.
func (t *benchTB) Fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}

// FailNow ends the section.
func (t *benchTB) FailNow() { t.Fail(); panic(tbFailure{msg: "FailNow"}) }

// Failed reports whether the section failed.
func (t *benchTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Fatal ends the section with a message.
func (t *benchTB) Fatal(args ...any) { t.Fail(); panic(tbFailure{msg: fmt.Sprint(args...)}) }

// Fatalf ends the section with a message.
func (t *benchTB) Fatalf(format string, args ...any) {
	t.Fail()
	panic(tbFailure{msg: fmt.Sprintf(format, args...)})
}

// Helper does nothing.
func (t *benchTB) Helper() {}

// Log writes to the progress log.
func (t *benchTB) Log(args ...any) { fmt.Fprintln(t.log, append([]any{t.name + ":"}, args...)...) }

// Logf writes to the progress log.
func (t *benchTB) Logf(format string, args ...any) {
	fmt.Fprintf(t.log, t.name+": "+strings.TrimSuffix(format, "\n")+"\n", args...)
}

// Name names the section (moto table names derive from it).
func (t *benchTB) Name() string { return t.name }

// Setenv sets an environment variable until the section ends.
func (t *benchTB) Setenv(key, value string) {
	old, had := os.LookupEnv(key)
	_ = os.Setenv(key, value)
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(key, old)
		} else {
			_ = os.Unsetenv(key)
		}
	})
}

// Chdir is not supported (the bench never changes directory).
func (t *benchTB) Chdir(string) { t.Fatal("benchTB: Chdir is not supported") }

// Skip ends the section as skipped.
func (t *benchTB) Skip(args ...any) { t.Log(args...); t.SkipNow() }

// SkipNow ends the section as skipped.
func (t *benchTB) SkipNow() {
	t.mu.Lock()
	t.skipped = true
	t.mu.Unlock()
	panic(tbFailure{msg: "skipped"})
}

// Skipf ends the section as skipped.
func (t *benchTB) Skipf(format string, args ...any) { t.Logf(format, args...); t.SkipNow() }

// Skipped reports whether the section was skipped.
func (t *benchTB) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

// TempDir returns a new temporary directory removed when the section ends.
func (t *benchTB) TempDir() string {
	dir, err := os.MkdirTemp("", "paysvc-bench-"+filepath.Base(t.name)+"-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Context is cancelled when the section ends.
func (t *benchTB) Context() context.Context { return t.ctx }

// Output is the progress log.
func (t *benchTB) Output() io.Writer { return t.log }

// runSection runs fn with a fresh benchTB, turning its Fatal into an error
// and always running its cleanups.
func runSection(name string, log io.Writer, fn func(t *benchTB) error) (err error) {
	t := newBenchTB(name, log)
	defer t.close()
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(tbFailure)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("%s: %s", name, f.msg)
		}
	}()
	return fn(t)
}
