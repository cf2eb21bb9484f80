package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
	outside := regexp.MustCompile(`\.\./shared/|DESIGN(\.md)? ?(section )?[0-9]|\bspec (section )?[0-9]`)
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
