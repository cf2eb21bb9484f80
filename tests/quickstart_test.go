package tests

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yp/paysvc/shared/testutil/webhooksink"
	"github.com/yp/paysvc/shared/webhooks/verify"
)

// quickstartBlock finds the README's walk-through: each terminal's block
// follows a "<!-- quickstart: terminal N -->" comment.
var quickstartBlock = regexp.MustCompile("(?s)<!-- quickstart: terminal ([0-9]) -->\\s*```sh\\n(.*?)```")

// cleanCopy copies the repository's files as a clone of the working tree
// would have them (tracked and new files, not ignored ones: no .paysvc/,
// no bin/) into a fresh directory.
func cleanCopy(t *testing.T) string {
	t.Helper()
	root, _ := filepath.Abs(repoRoot)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dst := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// terminal is one of the walk-through's terminals: bash running a block
// in its own process group.
type terminal struct {
	*localServer // its output and waits
	name         string
}

func openTerminal(t *testing.T, name, dir, script string, env []string) *terminal {
	t.Helper()
	term := &terminal{name: name, localServer: &localServer{t: t, done: make(chan error, 1), stdout: newOutput(), stderr: newOutput()}}
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, term.stdout, term.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.cmd = cmd
	go func() { term.done <- cmd.Wait() }()
	t.Cleanup(term.close)
	return term
}

// close ends what still runs in the terminal (Ctrl-C), by its process
// group.
func (term *terminal) close() {
	select {
	case err := <-term.done: // finished already
		term.done <- err
		return
	default:
	}
	_ = syscall.Kill(-term.cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-term.done:
		term.done <- err
	case <-time.After(serverWait):
		_ = syscall.Kill(-term.cmd.Process.Pid, syscall.SIGKILL)
		term.t.Errorf("terminal %s did not stop on Ctrl-C", term.name)
	}
}

// wait waits for the terminal's commands to finish and returns what they
// printed.
func (term *terminal) wait() string {
	term.t.Helper()
	select {
	case err := <-term.done:
		term.done <- err
		if err != nil {
			term.t.Fatalf("terminal %s: %v\nstdout:\n%s\nstderr:\n%s", term.name, err, term.stdout.String(), term.stderr.String())
		}
	case <-time.After(3 * serverWait):
		term.t.Fatalf("terminal %s did not finish\nstdout:\n%s\nstderr:\n%s", term.name, term.stdout.String(), term.stderr.String())
	}
	return term.stdout.String()
}

// The README's walk-through, as written, from a clean copy of the
// repository: make run in the first terminal; make admin and listen in the
// second; a payment, its capture, its lookup and a triggered refund in the
// third. The server is never stopped; the merchant's receiver (port 4000
// in the README) gets AUTHORISATION, CAPTURE and REFUND, signed with the
// secret listen printed. Only the two ports are the test's own.
func TestReadmeQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the service from a copy of the repository")
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, m := range quickstartBlock.FindAllStringSubmatch(string(readme), -1) {
		blocks[m[1]] = m[2]
	}
	if len(blocks) != 3 || !strings.Contains(blocks["1"], "make run") {
		t.Fatalf("README's walk-through: found the blocks of terminals %v", blocks)
	}
	clone := cleanCopy(t)
	addr := freeAddr(t)
	sink := webhooksink.New(t)
	u, _ := url.Parse(sink.URL)
	ports := strings.NewReplacer("127.0.0.1:3000", addr, "127.0.0.1:4000", u.Host)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PAYSVC_") {
			env = append(env, kv)
		}
	}
	env = append(env, "PAYSVC_ADDR="+addr) // make run's address (docs/configuration.md)

	server := openTerminal(t, "1", clone, ports.Replace(blocks["1"]), env)
	server.waitOutput(server.stdout, "make run serving", func(logs string) bool { return strings.Contains(logs, `"msg":"listening"`) })

	listen := openTerminal(t, "2", clone, ports.Replace(blocks["2"]), env)
	secretRE := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`)
	secret := secretRE.FindString(listen.waitOutput(listen.stdout, "listen's secret", secretRE.MatchString))

	out := openTerminal(t, "3", clone, ports.Replace(blocks["3"]), env).wait()
	psp := regexp.MustCompile(`payment ([0-9A-Z]{16})`).FindStringSubmatch(out)
	if psp == nil || !strings.Contains(out, `"status":"received"`) || !strings.Contains(out, `"timeline":[`) || !strings.Contains(out, "sent REFUND") {
		t.Fatalf("terminal 3 printed:\n%s", out)
	}
	for _, code := range []string{"AUTHORISATION", "CAPTURE", "REFUND"} {
		wh := sink.NextOf(t, code)
		if err := verify.Verify(secret, wh.Header, wh.Body, time.Now(), 5*time.Minute); err != nil {
			t.Fatalf("the %s webhook's signature (listen's secret): %v", code, err)
		}
		if !strings.Contains(string(wh.Body), psp[1]) {
			t.Fatalf("the %s webhook is not the payment's: %s", code, wh.Body)
		}
	}
	// The payment is captured: its lookup says so once CAPTURE is in (its
	// webhook came after the notification was processed).
	server.base = "http://" + addr
	key, err := os.ReadFile(filepath.Join(clone, ".paysvc", "demo-key.txt"))
	if err != nil {
		t.Fatal(err)
	}
	look := server.call("GET", "/v1/ecom/site_demo/payments/"+psp[1], strings.TrimSpace(string(key)), "")
	if look.status != 200 || !strings.Contains(string(look.body), `"capturedAmount":{"value":1000,"currency":"EUR"}`) {
		t.Fatalf("the payment after the walk-through: %d %s", look.status, look.body)
	}
}
