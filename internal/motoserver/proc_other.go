//go:build !linux

package motoserver

import "os/exec"

// setProcAttr does nothing outside Linux.
func setProcAttr(*exec.Cmd) {}

// killGroup kills cmd's process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
