package criconfig

import (
	corev1 "k8s.io/api/core/v1"
)

// Node is what kubelet takes from its configuration and flags and the
// configs depend on. The zero value of each field means kubelet's default
// for it, where kubelet has one.
type Node struct {
	// Name is the node's name (kubelet's --hostname-override or hostname).
	Name string
	// HostIPs are the node's IPs, first the primary: status.hostIP(s).
	HostIPs []string
	// RootDir is kubelet's --root-dir (default /var/lib/kubelet).
	RootDir string
	// PodLogsDir is kubelet's podLogsDir (default /var/log/pods).
	PodLogsDir string
	// ClusterDomain and ClusterDNS are kubelet's clusterDomain and
	// clusterDNS, for the ClusterFirst DNS policies.
	ClusterDomain string
	ClusterDNS    []string
	// ResolvConf is kubelet's resolvConf (default /etc/resolv.conf) for the
	// Default DNS policy; its content is read by the caller (ResolvConfContent).
	ResolvConf string
	// ResolvConfContent is the content of ResolvConf, read by the caller so
	// the functions here stay pure. Nil means "not read": the sandbox gets
	// no servers from the node, as kubelet with resolvConf "".
	ResolvConfContent []byte
	// CgroupDriver is "cgroupfs" (default) or "systemd"; CgroupRoot is
	// kubelet's cgroupRoot; CgroupsPerQOS false is kubelet's
	// cgroupsPerQOS: false (no pod cgroup parent).
	CgroupDriver  string
	CgroupRoot    string
	CgroupsPerQOS *bool
	// SeccompProfileRoot is where Localhost seccomp profiles live
	// (default <RootDir>/seccomp); SeccompDefault is kubelet's
	// seccompDefault (RuntimeDefault when a pod says nothing).
	SeccompProfileRoot string
	SeccompDefault     bool
	// SELinuxEnabled: the node enforces SELinux, so mounts ask to be
	// relabelled.
	SELinuxEnabled bool
	// Allocatable is the node's allocatable resources: the value of a
	// resourceFieldRef whose container sets no limit.
	Allocatable corev1.ResourceList
	// HugePageSizes are the node's huge page sizes in bytes (kubelet sends
	// a limit for each, 0 unless requested).
	HugePageSizes []int64
	// UserNamespaces: the runtime supports user namespaces (hostUsers:
	// false). containerd 1.6 does not.
	UserNamespaces bool
}
