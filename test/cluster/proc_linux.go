package cluster

import "syscall"

// sysProcAttr puts a process in a group of its own, so Stop can signal it
// and anything it started, and has the kernel kill it if the test process
// dies before Stop.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
