// Package hostinfo reads the machine facts kubelet takes from cAdvisor,
// from /proc and the filesystem directly: criconfig's node allocatable and
// nodestatus's capacity read them the same way.
package hostinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
)

// NumCPUs counts the processor entries of /proc/cpuinfo, as cAdvisor's
// machine info does; runtime.NumCPU when there are none to read.
func NumCPUs() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return goruntime.NumCPU()
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	if n == 0 {
		return goruntime.NumCPU()
	}
	return n
}

// Meminfo is the /proc/meminfo entry key ("MemTotal:", "SwapTotal:") in
// bytes; 0 when it cannot be read.
func Meminfo(key string) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == key {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// ValidateNodeIP is kubelet's check of a node IP: a valid unicast address
// held by one of the host's interfaces.
func ValidateNodeIP(ip net.IP) error {
	if ip.To4() == nil && ip.To16() == nil {
		return fmt.Errorf("nodeIP must be a valid IP address")
	}
	if ip.IsLoopback() {
		return fmt.Errorf("nodeIP can't be loopback address")
	}
	if ip.IsMulticast() {
		return fmt.Errorf("nodeIP can't be a multicast address")
	}
	if ip.IsLinkLocalUnicast() {
		return fmt.Errorf("nodeIP can't be a link-local unicast address")
	}
	if ip.IsUnspecified() {
		return fmt.Errorf("nodeIP can't be an all zeros address")
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		var have net.IP
		switch v := a.(type) {
		case *net.IPNet:
			have = v.IP
		case *net.IPAddr:
			have = v.IP
		}
		if have != nil && have.Equal(ip) {
			return nil
		}
	}
	return fmt.Errorf("node IP: %q not found in the host's network interfaces", ip.String())
}
