package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yp/paysvc/shared/upstream/simulator"
)

// trackedTextFiles lists the repository's files under git, text only.
func trackedTextFiles(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err) // a source tarball has no index to read
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch filepath.Ext(f) {
		case ".go", ".md", ".yaml", ".yml", ".toml", ".sh", ".py", ".txt", "":
			files = append(files, f)
		}
	}
	return files
}

// The repository explains itself: nothing points at documents a clone does
// not have (the design and specification the project started from live
// outside it), and every relative link of README and docs/ resolves.
func TestNoReferencesOutsideTheRepository(t *testing.T) {
	root, _ := filepath.Abs(repoRoot)
	outside := regexp.MustCompile(`\.\./shared/|DESIGN(\.md)? ?(section )?[0-9]|DESIGN\.md|payments-service-spec|\bspec (section )?[0-9]`)
	for _, f := range trackedTextFiles(t, root) {
		if f == "tests/repository_docs_test.go" {
			continue // the patterns themselves
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // a directory entry (submodule) or removed file
		}
		for i, line := range strings.Split(string(b), "\n") {
			if loc := outside.FindStringIndex(line); loc != nil {
				t.Errorf("%s:%d points outside the repository: %q", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

func TestMarkdownLinksResolve(t *testing.T) {
	root, _ := filepath.Abs(repoRoot)
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, f := range trackedTextFiles(t, root) {
		if filepath.Ext(f) != ".md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Join(root, filepath.Dir(f), target)
			if !strings.HasPrefix(p, root+string(filepath.Separator)) && p != root {
				t.Errorf("%s links outside the repository: %s", f, target)
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to a missing file: %s", f, target)
			}
		}
	}
}

// docs/ holds the design in the project's own words: one document per
// topic, each listed in docs/README.md.
func TestDocsCoverTheDesign(t *testing.T) {
	root, _ := filepath.Abs(repoRoot)
	index := readFile(t, filepath.Join(root, "docs", "README.md"))
	for topic, file := range map[string]string{
		"architecture and the request pipeline": "architecture.md",
		"idempotency":                           "idempotency.md",
		"payment records":                       "payments.md",
		"notifications and webhooks":            "webhooks.md",
		"security model":                        "security.md",
		"upstream mapping":                      "upstream.md",
		"limits and retention":                  "limits.md",
		"the contract":                          "openapi.yaml",
		"the Go client":                         "client.md",
		"running locally":                       "local.md",
		"the local dashboard":                   "dashboard.md",
		"the upstream simulator":                "simulator.md",
		"the merchant API":                      "api.md",
		"configuration":                         "configuration.md",
		"operations":                            "operations.md",
	} {
		b, err := os.ReadFile(filepath.Join(root, "docs", file))
		if err != nil || len(b) < 500 {
			t.Errorf("%s: docs/%s missing or nearly empty (%v)", topic, file, err)
		}
		if !strings.Contains(string(index), "]("+file+")") {
			t.Errorf("%s: docs/README.md does not list %s", topic, file)
		}
	}
}

// docs/simulator.md's test-card table lists every card of the simulator
// (the simulator's own README, tested beside it, has the full tables).
func TestDocsTestCards(t *testing.T) {
	root, _ := filepath.Abs(repoRoot)
	readme := string(readFile(t, filepath.Join(root, "docs", "simulator.md")))
	for _, c := range simulator.TestCards() {
		var groups []string
		for i := 0; i < len(c.Number); i += 4 {
			groups = append(groups, c.Number[i:min(i+4, len(c.Number))])
		}
		if spaced := strings.Join(groups, " "); !strings.Contains(readme, spaced) {
			t.Errorf("docs/simulator.md's test-card table lacks %s (%s)", spaced, c.Behaviour)
		}
	}
	for _, name := range []string{"INVALID_CARD_NUMBER", "CANCELLED", "SHOPPER_CANCELLED", "AUTHENTICATION_REQUIRED", "RequestedTestAcquirerResponseCode", "DECLINED : 06 : ERROR", "capture failed", "refund failed"} {
		if !strings.Contains(readme, name) {
			t.Errorf("docs/simulator.md does not document %s", name)
		}
	}
}
