package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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
		b := readFile(t, src)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, f), b, info.Mode().Perm())
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

// printedBlock finds what the README says a terminal prints: the block
// after a "<!-- quickstart: prints N -->" comment.
var printedBlock = regexp.MustCompile("(?s)<!-- quickstart: prints ([0-9]) -->\\s*```\\n(.*?)```")

// afterWalkThrough finds the documented commands that run after the
// walk-through: the sh blocks after a "<!-- runs after the walk-through -->"
// comment (indented in a list, too).
var afterWalkThrough = regexp.MustCompile("(?s)<!-- runs after the walk-through -->\\s*```sh\\n(.*?)```")

// readmeCommands finds the README's admin commands in its text (code spans
// may wrap).
var readmeCommands = regexp.MustCompile("`(bin/paysvc-admin [^`]+)`")

// matchPrinted reports how got (lines) differs from the README's want,
// where … stands for anything: "" when they agree.
func matchPrinted(want, got string) string {
	wl := strings.Split(strings.TrimRight(want, "\n"), "\n")
	gl := strings.Split(strings.TrimRight(got, "\n"), "\n")
	for i, w := range wl {
		parts := strings.Split(w, "…")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if i >= len(gl) {
			return fmt.Sprintf("line %d: the README has %q, the terminal nothing more", i+1, w)
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(strings.TrimRight(gl[i], " ")) {
			return fmt.Sprintf("line %d: the README has\n  %q\nthe terminal printed\n  %q", i+1, w, gl[i])
		}
	}
	if len(gl) > len(wl) {
		return fmt.Sprintf("the terminal printed more than the README shows: %q", gl[len(wl):])
	}
	return ""
}

// The README's walk-through, as written, from a clean copy of the
// repository: make run in the first terminal; make admin and listen in the
// second; a payment, its capture, its lookup and a triggered refund in the
// third. The server is never stopped; listen (the README's receiver)
// prints AUTHORISATION, CAPTURE and REFUND with their signatures verified,
// and trigger says the REFUND's webhook reached it. What terminals 1 and 2
// print is what the README shows. Then every documented command that runs
// after the walk-through does, one after the other, without an error: the
// README's admin commands and the docs' marked blocks. Only the server's
// port and port 4000 (where nothing listens) are the test's own.
func TestReadmeQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the service from a copy of the repository")
	}
	readme := readFile(t, filepath.Join(repoRoot, "README.md"))
	blocks, printed := map[string]string{}, map[string]string{}
	for _, m := range quickstartBlock.FindAllStringSubmatch(string(readme), -1) {
		blocks[m[1]] = m[2]
	}
	for _, m := range printedBlock.FindAllStringSubmatch(string(readme), -1) {
		printed[m[1]] = m[2]
	}
	if len(blocks) != 3 || !strings.Contains(blocks["1"], "make run") || len(printed) != 2 {
		t.Fatalf("README's walk-through: found the blocks of terminals %v, what they print %v", blocks, printed)
	}
	clone := cleanCopy(t)
	addr, nobody := freeAddr(t), freeAddr(t)
	ports := strings.NewReplacer("127.0.0.1:3000", addr, "127.0.0.1:4000", nobody)
	var env []string
	for _, kv := range os.Environ() {
		// A newcomer's terminal: no PAYSVC_ settings, and not inside a
		// make (make test's MAKELEVEL would have make run print
		// "Entering directory").
		if !strings.HasPrefix(kv, "PAYSVC_") && !strings.HasPrefix(kv, "MAKELEVEL=") && !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MFLAGS=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PAYSVC_ADDR="+addr) // make run's address (docs/configuration.md)

	server := openTerminal(t, "1", clone, ports.Replace(blocks["1"]), env)
	logs := server.waitOutput(server.stdout, "make run serving", func(logs string) bool { return strings.Contains(logs, `"msg":"listening"`) })
	// Terminal 1 as a person sees it: make's line, the banner, the log up
	// to "listening".
	before, after, _ := strings.Cut(logs, "\n{")
	// The banner (stderr) is written before "listening" is logged
	// (stdout), but the two pipes are read apart: wait for the banner's
	// last line as the README shows it (up to its first "…").
	readmeLines := strings.Split(strings.TrimRight(printed["1"], "\n"), "\n")
	last := ""
	for _, l := range readmeLines[1 : len(readmeLines)-1] {
		if strings.TrimSpace(l) != "" {
			last, _, _ = strings.Cut(l, "…")
		}
	}
	banner := server.waitOutput(server.stderr, "the banner", func(s string) bool {
		i := strings.Index(s, last)
		return i >= 0 && strings.Contains(s[i:], "\n")
	})
	shown := before + "\n" + banner + "{" + after[:strings.Index(after, `"msg":"listening"`)] + strings.SplitN(after[strings.Index(after, `"msg":"listening"`):], "\n", 2)[0]
	if diff := matchPrinted(printed["1"], strings.ReplaceAll(shown, addr, "127.0.0.1:3000")); diff != "" {
		t.Errorf("terminal 1 and the README differ: %s\nterminal 1:\n%s", diff, shown)
	}

	listen := openTerminal(t, "2", clone, ports.Replace(blocks["2"]), env)
	secretRE := regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+\n`)
	ready := listen.waitOutput(listen.stdout, "listen's secret", secretRE.MatchString)
	secret := strings.TrimSpace(secretRE.FindString(ready))
	if diff := matchPrinted(printed["2"], ready); diff != "" {
		t.Errorf("terminal 2 and the README differ: %s\nterminal 2:\n%s", diff, ready)
	}

	out := openTerminal(t, "3", clone, ports.Replace(blocks["3"]), env).wait()
	psp := regexp.MustCompile(`"pspReference":"([0-9A-Z]{16})"`).FindStringSubmatch(out)
	if psp == nil || !strings.Contains(out, `"resultCode":"Authorised"`) || !strings.Contains(out, `"status":"received"`) ||
		!strings.Contains(out, `"timeline":[`) || !strings.Contains(out, "sent REFUND") {
		t.Fatalf("terminal 3 printed:\n%s", out)
	}
	// trigger says where the REFUND's webhook went: listen printed it.
	if !regexp.MustCompile(`listener lst_[a-z0-9]+ \(printed by paysvc-admin listen\): delivered: printed, signature verified`).MatchString(out) ||
		!strings.Contains(out, "operation: no refund of the payment matched") {
		t.Fatalf("trigger does not say what became of the REFUND:\n%s", out)
	}
	// Terminal 2: each webhook, its signature verified by listen, its body
	// the payment's.
	webhookLine := regexp.MustCompile(`(?m)^[0-9:]{8}  (AUTHORISATION|CAPTURE|REFUND) +[0-9A-Z]{16} msg_listen_\S+  signature (\S+)\n  (.*)$`)
	got := listen.waitOutput(listen.stdout, "three webhooks", func(s string) bool { return len(webhookLine.FindAllString(s, -1)) >= 3 })
	seen := map[string]bool{}
	for _, m := range webhookLine.FindAllStringSubmatch(got, -1) {
		seen[m[1]] = true
		if m[2] != "verified" || !strings.Contains(m[3], psp[1]) {
			t.Errorf("listen printed the %s webhook with signature %s, body %s", m[1], m[2], m[3])
		}
		var body struct {
			NotificationItems []json.RawMessage `json:"notificationItems"`
		}
		if err := json.Unmarshal([]byte(m[3]), &body); err != nil || len(body.NotificationItems) != 1 {
			t.Errorf("the %s webhook's body: %v %s", m[1], err, m[3])
		}
	}
	if len(seen) != 3 || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("listen printed:\n%s", got)
	}
	// The payment is captured: its lookup says so once CAPTURE is in (its
	// webhook came after the notification was processed).
	server.base = "http://" + addr
	key := readFile(t, filepath.Join(clone, ".paysvc", "demo-key.txt"))
	look := server.call("GET", "/v1/ecom/site_demo/payments/"+psp[1], strings.TrimSpace(string(key)), "")
	if look.status != 200 || !strings.Contains(string(look.body), `"capturedAmount":{"value":1000,"currency":"EUR"}`) {
		t.Fatalf("the payment after the walk-through: %d %s", look.status, look.body)
	}

	// Every documented command after the walk-through, one after the
	// other, with the walk-through's KEY and PSP.
	var commands []string
	for _, m := range readmeCommands.FindAllStringSubmatch(string(readme), -1) {
		commands = append(commands, strings.Join(strings.Fields(m[1]), " "))
	}
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	for _, d := range docs {
		for _, m := range afterWalkThrough.FindAllStringSubmatch(string(readFile(t, d)), -1) {
			commands = append(commands, m[1])
		}
	}
	if len(commands) < 8 {
		t.Fatalf("found only %d documented commands to run after the walk-through", len(commands))
	}
	cmdEnv := append(slices.Clone(env), "KEY="+strings.TrimSpace(string(key)), "PSP="+psp[1])
	for i, c := range commands {
		term := openTerminal(t, fmt.Sprintf("after %d", i+1), clone, ports.Replace(c), cmdEnv)
		if strings.HasPrefix(c, "bin/paysvc-admin listen") { // runs until Ctrl-C
			term.waitOutput(term.stdout, "listen ready", func(s string) bool { return strings.Contains(s, "Ready: ") })
			term.close()
			continue
		}
		printed := term.wait()
		if strings.Contains(printed, `"errorCode"`) || strings.Contains(printed, "no event recorded") {
			t.Errorf("documented command\n%s\nprinted:\n%s", c, printed)
		}
		if strings.Contains(c, "trigger CAPTURE_FAILED --psp") && !strings.Contains(printed, "operation: the payment's latest capture") {
			t.Errorf("trigger CAPTURE_FAILED is not for the payment's capture:\n%s", printed)
		}
	}
}
