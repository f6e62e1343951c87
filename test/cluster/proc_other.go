//go:build !unix

package cluster

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(p *os.Process, hard bool) { _ = p.Kill() }
