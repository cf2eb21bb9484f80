package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make test sets Chromium up (.ci/chromium.sh): nothing when it is there;
// apt-get as root, or through sudo when sudo needs no password; otherwise
// the exact command to run. Each case runs the script with a PATH of stub
// commands (id, sudo, apt-get, chromium) that log how they were called.
func TestCIChromiumSetup(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", ".ci", "chromium.sh"))
	if err != nil {
		t.Fatal(err)
	}
	realEnv, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	const (
		present = "chromium"
		// apt-get logs its arguments (and DEBIAN_FRONTEND); install puts a
		// chromium command on PATH.
		aptGet = `echo "apt-get $* DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-}" >>"$LOG"
[ "$1" = install ] && printf '#!/bin/sh\n' >"$BIN/chromium" && chmod +x "$BIN/chromium"
exit 0`
		aptGetFails = `echo "apt-get $*" >>"$LOG"; exit 100`
		root        = `echo 0`
		user        = `echo 1000`
		sudoNoPass  = `echo "sudo $*" >>"$LOG"; [ "$1" = -n ] && shift; [ "$1" = true ] && exit 0; exec "$@"`
		sudoAsks    = `echo "sudo $*" >>"$LOG"; exit 1`
	)
	install := "apt-get update DEBIAN_FRONTEND=\napt-get install -y --no-install-recommends chromium DEBIAN_FRONTEND=noninteractive\n"
	for _, tc := range []struct {
		name     string
		stubs    map[string]string // command name -> shell body
		wantCode int
		wantLog  string
		wantErr  string
	}{
		{name: "present", stubs: map[string]string{"chromium": present, "apt-get": aptGet, "id": user}},
		{name: "chromium-browser present", stubs: map[string]string{"chromium-browser": present, "apt-get": aptGet, "id": user}},
		{name: "missing, root: installed", stubs: map[string]string{"apt-get": aptGet, "id": root}, wantLog: install},
		{name: "missing, sudo without a password: installed", stubs: map[string]string{"apt-get": aptGet, "id": user, "sudo": sudoNoPass},
			wantLog: "sudo -n true\n" +
				"sudo -n apt-get update\n" + "apt-get update DEBIAN_FRONTEND=\n" +
				"sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium\n" +
				"apt-get install -y --no-install-recommends chromium DEBIAN_FRONTEND=noninteractive\n"},
		{name: "missing, sudo asks for a password: the command to run", stubs: map[string]string{"apt-get": aptGet, "id": user, "sudo": sudoAsks},
			wantCode: 1, wantLog: "sudo -n true\n", wantErr: "  sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium\n"},
		{name: "missing, no sudo: the command to run", stubs: map[string]string{"apt-get": aptGet, "id": user},
			wantCode: 1, wantErr: "  sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium\n"},
		{name: "missing, no apt-get", stubs: map[string]string{"id": root}, wantCode: 1, wantErr: "package manager"},
		{name: "missing, apt-get fails", stubs: map[string]string{"apt-get": aptGetFails, "id": root},
			wantCode: 1, wantLog: "apt-get update\n", wantErr: "installing Chromium failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			if err := os.Mkdir(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(realEnv, filepath.Join(bin, "env")); err != nil {
				t.Fatal(err)
			}
			for name, body := range tc.stubs {
				writeFile(t, filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755)
			}
			log := filepath.Join(dir, "log")
			cmd := exec.Command("/bin/bash", script)
			cmd.Env = []string{"PATH=" + bin, "LOG=" + log, "BIN=" + bin}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if err != nil && code <= 0 {
				t.Fatal(err)
			}
			logged, _ := os.ReadFile(log)
			if code != tc.wantCode || string(logged) != tc.wantLog || !strings.Contains(stderr.String(), tc.wantErr) {
				t.Fatalf("exit %d, want %d\nlog:\n%s\nwant:\n%s\nstderr:\n%s", code, tc.wantCode, logged, tc.wantLog, stderr.String())
			}
		})
	}
}
