package motoserver

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts moto_server in its own process group (so Stop can kill
// it with any children) and has the kernel kill it if the test binary dies
// without calling Stop.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills cmd's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		_ = cmd.Process.Kill()
	}
}
