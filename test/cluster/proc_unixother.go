//go:build unix && !linux

package cluster

import "syscall"

// sysProcAttr puts a process in a group of its own, so Stop can signal it
// and anything it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
