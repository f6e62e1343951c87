package apistatus_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

func podIPs(ips ...string) []corev1.PodIP {
	var out []corev1.PodIP
	for _, ip := range ips {
		out = append(out, corev1.PodIP{IP: ip})
	}
	return out
}

func fields(s string) []string { return strings.Fields(s) }

// TestGenerateAPIPodStatusPodIPs is kubelet v1.36.3's
// TestGenerateAPIPodStatusPodIPs and TestSortPodIPs: the first pod IP of
// the node's family, then the first of the other. Kubelet's node IP is
// Input.HostIPs[0] here.
func TestGenerateAPIPodStatusPodIPs(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, nodeIP, cri, want string }{
		{"Simple", "", "10.0.0.1", "10.0.0.1"},
		{"Dual-stack", "", "10.0.0.1 fd01::1234", "10.0.0.1 fd01::1234"},
		{"Dual-stack with explicit node IP", "192.168.1.1", "10.0.0.1 fd01::1234", "10.0.0.1 fd01::1234"},
		{"Dual-stack with CRI returning wrong family first", "", "fd01::1234 10.0.0.1", "10.0.0.1 fd01::1234"},
		{"Dual-stack with explicit node IP with CRI returning wrong family first", "192.168.1.1", "fd01::1234 10.0.0.1", "10.0.0.1 fd01::1234"},
		{"Dual-stack with IPv6 node IP", "fd00::5678", "10.0.0.1 fd01::1234", "fd01::1234 10.0.0.1"},
		{"Dual-stack with IPv6 node IP, other CRI order", "fd00::5678", "fd01::1234 10.0.0.1", "fd01::1234 10.0.0.1"},
		{"No Pod IP matching Node IP", "fd00::5678", "10.0.0.1", "10.0.0.1"},
		{"No Pod IP matching (unspecified) Node IP", "", "fd01::1234", "fd01::1234"},
		{"Multiple IPv4 IPs", "", "10.0.0.1 10.0.0.2 10.0.0.3", "10.0.0.1"},
		{"Multiple Dual-Stack IPs", "", "10.0.0.1 10.0.0.2 fd01::1234 10.0.0.3 fd01::5678", "10.0.0.1 fd01::1234"},
		// TestSortPodIPs
		{"Badly-formatted IPs from CRI", "", "010.000.000.001 fd01:0:0:0:0:0:0:1234", "10.0.0.1 fd01::1234"},
		// Not kubelet's cases: what its ParseIPSloppy does with a zone
		// (refused) and an IPv4-mapped IPv6 address (IPv4).
		{"zoned IPv6 skipped", "", "fe80::1%eth0 10.0.0.1 fd01::1", "10.0.0.1 fd01::1"},
		{"IPv4-mapped IPv6 is IPv4", "fd00::1", "::ffff:10.0.0.1 fd01::1", "fd01::1 10.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{UID: pod.UID, IPs: fields(c.cri)}, HostIPs: fields(c.nodeIP), Now: genNow})
			if d := diff(podIPs(fields(c.want)...), s.PodIPs); d != "" {
				t.Fatal(d)
			}
			if s.PodIP != s.PodIPs[0].IP {
				t.Fatalf("PodIP %q, PodIPs[0] %q", s.PodIP, s.PodIPs[0].IP)
			}
		})
	}
}

// TestGenerateAPIPodStatusHostNetworkPodIPs is kubelet v1.36.3's, with
// Input.HostIPs the node's InternalIPs then ExternalIPs (the order
// kubelet's GetNodeHostIPs reads them in): a host-network pod takes the
// node's IPs, at most one per family, unless the runtime reports its own.
func TestGenerateAPIPodStatusHostNetworkPodIPs(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, hostIPs, cri, want, wantHostIPs string }{
		{"Simple", "10.0.0.1", "", "10.0.0.1", "10.0.0.1"},
		{"InternalIP is preferred over ExternalIP", "10.0.0.1 192.168.0.1", "", "10.0.0.1", "10.0.0.1"},
		{"Single-stack addresses in dual-stack cluster", "10.0.0.1", "", "10.0.0.1", "10.0.0.1"},
		{"Multiple single-stack addresses in dual-stack cluster", "10.0.0.1 10.0.0.2 192.168.0.1", "", "10.0.0.1", "10.0.0.1"},
		{"Dual-stack addresses in dual-stack cluster", "10.0.0.1 fd01::1234", "", "10.0.0.1 fd01::1234", "10.0.0.1 fd01::1234"},
		{"CRI PodIPs override NodeAddresses", "10.0.0.1 fd01::1234", "192.168.0.1", "192.168.0.1 fd01::1234", "10.0.0.1 fd01::1234"},
		{"CRI dual-stack PodIPs override NodeAddresses", "10.0.0.1 fd01::1234", "192.168.0.1 2001:db8::2", "192.168.0.1 2001:db8::2", "10.0.0.1 fd01::1234"},
		{"CRI dual-stack PodIPs override NodeAddresses prefer IPv4", "10.0.0.1 fd01::1234", "2001:db8::2 192.168.0.1", "192.168.0.1 2001:db8::2", "10.0.0.1 fd01::1234"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.HostNetwork = true
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{UID: pod.UID, IPs: fields(c.cri)}, HostIPs: fields(c.hostIPs), Now: genNow})
			if d := diff(podIPs(fields(c.want)...), s.PodIPs); d != "" {
				t.Fatalf("PodIPs:\n%s", d)
			}
			var hostIPs []corev1.HostIP
			for _, ip := range fields(c.wantHostIPs) {
				hostIPs = append(hostIPs, corev1.HostIP{IP: ip})
			}
			if d := diff(hostIPs, s.HostIPs); d != "" {
				t.Fatalf("HostIPs:\n%s", d)
			}
			if s.HostIP != s.HostIPs[0].IP || c.cri == "" && s.HostIP != s.PodIPs[0].IP {
				t.Fatalf("HostIP %q, HostIPs %v, PodIPs %v", s.HostIP, s.HostIPs, s.PodIPs)
			}
		})
	}
}

// TestNodeAddressUpdatesGenerateAPIPodStatusHostNetworkPodIPs is kubelet
// v1.36.3's: a host-network pod's IPs, once set, stay when the node's
// addresses change, except that a secondary family is added. The pod's
// old IPs are the runtime's (kubelet's test sets both).
func TestNodeAddressUpdatesGenerateAPIPodStatusHostNetworkPodIPs(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, nodeIPs, hostIPs, want string }{
		{"Immutable after update node addresses single-stack", "10.0.0.1", "1.1.1.1", "10.0.0.1"},
		{"Immutable after update node addresses dual-stack - primary address", "10.0.0.1 2001:db8::2", "1.1.1.1 2001:db8::2", "10.0.0.1 2001:db8::2"},
		{"Immutable after update node addresses dual-stack - secondary address", "10.0.0.1 2001:db8::2", "10.0.0.1 2001:db8:1:2:3::2", "10.0.0.1 2001:db8::2"},
		{"Immutable after update node addresses dual-stack - primary and secondary address", "10.0.0.1 2001:db8::2", "1.1.1.1 2001:db8:1:2:3::2", "10.0.0.1 2001:db8::2"},
		{"Update secondary after new secondary address dual-stack", "10.0.0.1", "10.0.0.1 2001:db8::2", "10.0.0.1 2001:db8::2"},
		{"Update secondary after new secondary address dual-stack - reverse order", "2001:db8::2", "10.0.0.1 2001:db8::2", "2001:db8::2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.HostNetwork = true
			pod.Status.PodIPs = podIPs(fields(c.nodeIPs)...)
			pod.Status.PodIP = pod.Status.PodIPs[0].IP
			// Kubelet's sortPodIPs orders by its configured node IP
			// (nodeIPs[0]); PodStatus by HostIPs[0]. The runtime's IPs
			// are of one family or already in the node's order here, so
			// sorting by either gives the same.
			s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: &podsync.PodStatus{UID: pod.UID, IPs: fields(c.nodeIPs)}, HostIPs: fields(c.hostIPs), Now: genNow})
			if d := diff(podIPs(fields(c.want)...), s.PodIPs); d != "" {
				t.Fatal(d)
			}
		})
	}
}
