package lambdaharness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// builds caches one build per package for the life of the test binary.
var (
	buildsMu sync.Mutex
	builds   = map[string]*buildResult{}
	buildDir string
)

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// BuildBootstrap builds a Lambda main package for the host OS and
// architecture, the way the Makefile builds it for Lambda (CGO off,
// -tags lambda.norpc, -trimpath), and returns the path of the binary (named
// bootstrap, or after its function). pkg is a function name ("config" means ./functions/config) or a
// module-relative package path starting with "./". Each package is built once
// per test binary run; the go build cache makes repeated runs cheap. The
// first function asked for builds every function of ./functions in one go
// build (their shared packages compiled once, the links in parallel): the
// tests start them all. Call CleanupBuilds from TestMain to remove the
// binaries at the end.
func BuildBootstrap(t testing.TB, pkg string) string {
	t.Helper()
	if !strings.HasPrefix(pkg, "./") {
		pkg = "./functions/" + pkg
	}
	if name, ok := strings.CutPrefix(pkg, "./functions/"); ok && !strings.Contains(name, "/") {
		bin := filepath.Join(buildOnce(t, functionsPkg), name)
		if runtime.GOOS == "windows" {
			bin += ".exe"
		}
		return bin
	}
	return buildOnce(t, pkg)
}

// functionsPkg is every function's main package, built together.
const functionsPkg = "./functions/..."

// buildOnce is BuildBootstrap's build of pkg, made once per test binary run.
func buildOnce(t testing.TB, pkg string) string {
	t.Helper()
	buildsMu.Lock()
	b, ok := builds[pkg]
	if !ok {
		b = &buildResult{}
		builds[pkg] = b
	}
	buildsMu.Unlock()

	b.once.Do(func() { b.path, b.err = build(pkg) })
	if b.err != nil {
		t.Fatalf("lambdaharness: %v", b.err)
	}
	return b.path
}

// CleanupBuilds removes the binaries built by BuildBootstrap. Use it in
// TestMain after m.Run.
func CleanupBuilds() {
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir = ""
	}
	builds = map[string]*buildResult{}
}

func build(pkg string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go toolchain not on PATH: %w", err)
	}
	root, err := moduleRoot(gobin)
	if err != nil {
		return "", err
	}
	buildsMu.Lock()
	if buildDir == "" {
		buildDir, err = os.MkdirTemp("", "lambdaharness-builds-")
	}
	dir := buildDir
	buildsMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}

	name := strings.NewReplacer("/", "_", ".", "_").Replace(strings.TrimPrefix(pkg, "./"))
	out := filepath.Join(dir, name, "bootstrap")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	if pkg == functionsPkg { // a directory: one binary per function, named after it
		out = filepath.Join(dir, "functions") + string(filepath.Separator)
	}
	cmd := exec.Command(gobin, "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, stderr.String())
	}
	return out, nil
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot(gobin string) (string, error) {
	out, err := exec.Command(gobin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module (go env GOMOD=%q)", gomod)
	}
	return filepath.Dir(gomod), nil
}
