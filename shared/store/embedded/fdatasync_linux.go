package embedded

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (and only the metadata needed to read it).
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
