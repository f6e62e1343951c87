//go:build unix

package cluster

import (
	"os"
	"syscall"
)

// signalGroup sends SIGTERM, or SIGKILL when hard, to p's process group
// (sysProcAttr gives each process a group of its own).
func signalGroup(p *os.Process, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
}
