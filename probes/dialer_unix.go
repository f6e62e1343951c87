//go:build unix

package probes

import (
	"net"
	"syscall"
)

// probeDialer is kubelet's ProbeDialer: SO_LINGER of one second, so a
// probe's closed connection does not hold its port in TIME-WAIT for a
// minute (kubernetes issue 89898: many probes used up ephemeral ports).
func probeDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
		})
	}}
}
