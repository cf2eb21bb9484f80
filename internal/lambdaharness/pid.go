package lambdaharness

// Pid returns the process id of the running bootstrap (0 if it was never
// started), so callers can read its resource use, e.g. the peak resident
// set size (VmHWM) in /proc/<pid>/status, before Close.
func (h *Harness) Pid() int {
	if h.cmd == nil || h.cmd.Process == nil {
		return 0
	}
	return h.cmd.Process.Pid
}
