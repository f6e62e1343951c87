package criconfig

import (
	"os"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Node is what kubelet takes from its configuration and flags and the
// configs depend on. The zero value of each field means kubelet's default
// for it, where kubelet has one.
type Node struct {
	// Name is the node's name (kubelet's --hostname-override or hostname).
	Name string
	// HostIPs are the node's IPs, first the primary: status.hostIP(s).
	// None means unknown (ErrUnknownNodeFact for env that needs them);
	// FromHost finds the node IP as kubelet does without --node-ip.
	HostIPs []string
	// RootDir is kubelet's --root-dir (default /var/lib/kubelet).
	RootDir string
	// PodLogsDir is kubelet's podLogsDir (default /var/log/pods).
	PodLogsDir string
	// ClusterDomain and ClusterDNS are kubelet's clusterDomain and
	// clusterDNS, for the ClusterFirst DNS policies. Both default to none,
	// as kubelet's: without a domain, ClusterFirst pods get no cluster
	// searches and a pod's subdomain gives the domain
	// "<subdomain>.<namespace>.svc.".
	ClusterDomain string
	ClusterDNS    []string
	// ResolvConf is kubelet's resolvConf, the node's resolv.conf that the
	// Default DNS policy (and ClusterFirst without ClusterDNS) copies and
	// ClusterFirst takes searches from; empty means kubelet's default,
	// DefaultResolvConf. Its content is read by the caller
	// (ResolvConfContent; FromHost reads it).
	ResolvConf string
	// NoResolvConf is kubelet's resolvConf "" (the flag --resolv-conf=""):
	// no host resolv.conf, and pods that would copy it get a nameserver on
	// the local machine (127.0.0.1, or ::1 per IPv6 node IP) instead.
	NoResolvConf bool
	// ResolvConfContent is the content of ResolvConf, read by the caller so
	// the functions here stay pure. Nil means "not read": the sandbox gets
	// nothing from the node's resolv.conf (kubelet would fail the sandbox
	// on a resolv.conf it cannot read; FromHost reads it).
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
	// Allocatable is the node's allocatable resources (kubelet's node
	// status): the value of a resourceFieldRef whose container sets no
	// limit. A resource it lacks is unknown, and what needs it is refused
	// (ErrUnknownNodeFact). FromHost fills it (HostAllocatable).
	Allocatable corev1.ResourceList
	// HugePageSizes are the node's huge page sizes in bytes (kubelet sends
	// a limit for each, 0 unless requested).
	HugePageSizes []int64
	// UserNamespaces: the runtime supports user namespaces (hostUsers:
	// false; its handler reports the user_namespaces feature in CRI
	// Status). containerd 1.6 does not.
	UserNamespaces bool
	// UserNamespaceMapper gives a pod with hostUsers: false its ID mapping
	// (kubelet's user-namespace manager; podsync.UserNamespaces is one).
	// Without it such a pod is refused.
	UserNamespaceMapper UserNamespaceMapper
	// AppArmorEnabled: the host enforces AppArmor. Without it, kubelet
	// refuses every profile but Unconfined.
	AppArmorEnabled bool
	// DynamicResourceAllocation says the node prepares DRA resource
	// claims (a DRA manager feeds podsync.WithDevices and the pod worker
	// waits for the claims); without it, spec.resourceClaims and
	// containers' resources.claims are refused by name.
	DynamicResourceAllocation bool
	// BlockVolumes says the node maps block volumes (a volume manager,
	// volumemanager.Manager, feeds podsync.WithDevices with each
	// volumeDevice's device); without it, containers' volumeDevices are
	// refused by name, and with it a volumeDevice whose device is not
	// among the container's Devices is refused.
	BlockVolumes bool
	// SupplementalGroupsPolicyStrict: the runtime reports support for the
	// Strict supplemental-groups policy.
	SupplementalGroupsPolicyStrict bool
	// MemoryCapacity is the node's memory in bytes, for Burstable OOM
	// scores (kubelet reads it from cAdvisor; 0 is unknown and refuses
	// Burstable containers, ErrUnknownNodeFact).
	MemoryCapacity int64
	// CgroupV2: the node runs the unified cgroup hierarchy (FromHost reads
	// it from /sys/fs/cgroup; set it when not using FromHost). SwapController:
	// the memory controller accounts swap. Together they decide the swap
	// limit kubelet sends (NoSwap, kubelet's default).
	CgroupV2       bool
	SwapController bool
	// MaskedPaths are the paths masked in containers whose procMount is
	// not Unmasked; nil means DefaultMaskedPaths. kubelet adds each CPU's
	// thermal_throttle directory where the host has one (FromHost does).
	MaskedPaths []string
	// SingleProcessOOMKill is kubelet's singleProcessOOMKill (cgroup v2
	// only; default false: the kernel kills the whole container cgroup).
	SingleProcessOOMKill bool
	// MemoryQoS is kubelet's MemoryQoS feature gate (KEP-2570; beta and on
	// by default since v1.37): nil or true sets memory.min and memory.low
	// (and memory.high with a MemoryThrottlingFactor) in the Unified
	// resources of containers on cgroup v2 nodes; false sends memory.high
	// "max" there. cgroup v1 nodes get neither.
	MemoryQoS *bool
	// MemoryThrottlingFactor is kubelet's memoryThrottlingFactor (default
	// nil: no memory.high is set).
	MemoryThrottlingFactor *float64
	// MemoryReservationPolicy is kubelet's memoryReservationPolicy:
	// MemoryReservationNone (the default, also "") or
	// MemoryReservationTiered.
	MemoryReservationPolicy string
	// PageSize is the node's memory page size in bytes, memory.high's unit
	// (0: this process's, os.Getpagesize, as kubelet reads it).
	PageSize int64
}

// kubelet's memoryReservationPolicy values.
const (
	// MemoryReservationNone: memory.min and memory.low are "0".
	MemoryReservationNone = "None"
	// MemoryReservationTiered: memory.min at the memory request for
	// Guaranteed pods, memory.low for the others.
	MemoryReservationTiered = "TieredReservation"
)

func (n Node) memoryQoS() bool { return n.MemoryQoS == nil || *n.MemoryQoS }

func (n Node) pageSize() int64 {
	if n.PageSize <= 0 {
		return int64(os.Getpagesize())
	}
	return n.PageSize
}

// DefaultResolvConf is kubelet's default resolvConf (--resolv-conf).
const DefaultResolvConf = "/etc/resolv.conf"

// resolvConf is the node's resolv.conf path, "" with NoResolvConf.
func (n Node) resolvConf() string {
	switch {
	case n.NoResolvConf:
		return ""
	case n.ResolvConf == "":
		return DefaultResolvConf
	}
	return n.ResolvConf
}

func (n Node) rootDir() string {
	if n.RootDir == "" {
		return "/var/lib/kubelet"
	}
	return n.RootDir
}

func (n Node) podLogsDir() string {
	if n.PodLogsDir == "" {
		return "/var/log/pods"
	}
	return n.PodLogsDir
}

func (n Node) seccompRoot() string {
	if n.SeccompProfileRoot == "" {
		return n.rootDir() + "/seccomp"
	}
	return n.SeccompProfileRoot
}

func (n Node) maskedPaths() []string {
	if n.MaskedPaths == nil {
		return DefaultMaskedPaths
	}
	return n.MaskedPaths
}

func (n Node) cgroupsPerQOS() bool { return n.CgroupsPerQOS == nil || *n.CgroupsPerQOS }

// UserNamespaceMapper allocates a pod's user-namespace ID mapping: the
// same for the pod's whole life, disjoint from every other pod's.
type UserNamespaceMapper interface {
	UserNamespace(pod *corev1.Pod) (*runtimeapi.UserNamespace, error)
}

// WithRuntimeStatus is n with what the runtime's CRI Status says of
// itself, as kubelet reads it: user namespaces from its default
// handler's features (UserNamespaces), and support for the Strict
// supplemental-groups policy (SupplementalGroupsPolicyStrict). A runtime
// that says nothing (containerd 1.6) supports neither.
func (n Node) WithRuntimeStatus(st *runtimeapi.StatusResponse) Node {
	n.UserNamespaces = false
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			n.UserNamespaces = h.GetFeatures().GetUserNamespaces()
		}
	}
	n.SupplementalGroupsPolicyStrict = st.GetFeatures().GetSupplementalGroupsPolicy()
	return n
}
