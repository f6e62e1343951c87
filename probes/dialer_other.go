//go:build !unix

package probes

import "net"

// probeDialer is a plain dialer where SO_LINGER is not set from here.
func probeDialer() *net.Dialer { return &net.Dialer{} }
