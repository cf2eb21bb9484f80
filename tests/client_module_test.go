package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The Go client is its own module with no requirements: a merchant's
// module that imports only the client has exactly two modules in its
// build list, its own and the client's (built offline, the client
// replaced by this checkout's copy, as docs/client.md says).
func TestClientModuleNeedsOnlyTheStandardLibrary(t *testing.T) {
	clientDir, err := filepath.Abs(filepath.Join("..", "shared", "client"))
	if err != nil {
		t.Fatal(err)
	}
	shop := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/shop\n\ngo 1.26\n\n" +
			"require github.com/yp/paysvc/shared/client v0.0.0\n\n" +
			"replace github.com/yp/paysvc/shared/client => " + clientDir + "\n",
		"main.go": `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/yp/paysvc/shared/client"
)

func main() {
	c := client.New("http://127.0.0.1:3000", os.Getenv("PAYSVC_KEY"))
	cfg, err := c.Config(context.Background())
	fmt.Println(cfg.ClientToken, err)
}
`,
	}
	for name, text := range files {
		writeFile(t, filepath.Join(shop, name), []byte(text), 0o644)
	}
	goCmd := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// Offline: nothing may be fetched, so nothing but the client can be needed.
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	goCmd(shop, "mod", "tidy")
	goCmd(shop, "build", "./...")
	if got, want := goCmd(shop, "list", "-m", "all"), "example.com/shop\ngithub.com/yp/paysvc/shared/client v0.0.0 => "+clientDir; got != want {
		t.Errorf("a module importing only the client lists\n%s\nwant\n%s", got, want)
	}
	// The client's own build list is itself alone: no requirement at all,
	// so not the service's module either.
	if got := goCmd(clientDir, "list", "-m", "all"); got != "github.com/yp/paysvc/shared/client" {
		t.Errorf("the client module's build list:\n%s", got)
	}
	if got := goCmd(clientDir, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./..."); got != "github.com/yp/paysvc/shared/client" {
		t.Errorf("the client's non-standard dependencies:\n%s", got)
	}
}
