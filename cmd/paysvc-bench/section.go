package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// section is one section of the bench run: where its progress is logged,
// the cleanups to run when it ends, and a way to end it early. Fatal and
// Fatalf end the section (runSection turns them into the section's error)
// and must be called from the goroutine running it.
type section struct {
	name string
	log  io.Writer

	mu       sync.Mutex
	cleanups []func()
}

// sectionFailure is the value Fatal ends a section with.
type sectionFailure struct{ msg string }

// close runs the cleanups, last registered first.
func (t *section) close() {
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

// Cleanup registers f to run when the section ends.
func (t *section) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// Fatal ends the section with a message.
func (t *section) Fatal(args ...any) { panic(sectionFailure{msg: fmt.Sprint(args...)}) }

// Fatalf ends the section with a message.
func (t *section) Fatalf(format string, args ...any) {
	panic(sectionFailure{msg: fmt.Sprintf(format, args...)})
}

// Logf writes to the progress log.
func (t *section) Logf(format string, args ...any) {
	fmt.Fprintf(t.log, t.name+": "+strings.TrimSuffix(format, "\n")+"\n", args...)
}

// Name names the section (moto table names derive from it).
func (t *section) Name() string { return t.name }

// TempDir returns a new temporary directory removed when the section ends.
func (t *section) TempDir() string {
	dir, err := os.MkdirTemp("", "paysvc-bench-"+filepath.Base(t.name)+"-")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// runSection runs fn with a fresh section, turning its Fatal into an error
// and always running its cleanups.
func runSection(name string, log io.Writer, fn func(t *section) error) (err error) {
	t := &section{name: name, log: log}
	defer t.close()
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(sectionFailure)
			if !ok {
				panic(v)
			}
			err = fmt.Errorf("%s: %s", name, f.msg)
		}
	}()
	return fn(t)
}
