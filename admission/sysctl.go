package admission

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-helpers/node/util/sysctl"
)

// safeSysctls is kubelet v1.37.2's list of safe sysctls, with the kernel
// version that namespaced each ("" for all kernels).
var safeSysctls = []struct{ name, kernel string }{
	{"kernel.shm_rmid_forced", ""},
	{"net.ipv4.ip_local_port_range", ""},
	{"net.ipv4.tcp_syncookies", ""},
	{"net.ipv4.ping_group_range", ""},
	{"net.ipv4.ip_unprivileged_port_start", ""},
	{"net.ipv4.ip_local_reserved_ports", "3.16"},
	{"net.ipv4.tcp_keepalive_time", "4.5"},
	{"net.ipv4.tcp_fin_timeout", "4.6"},
	{"net.ipv4.tcp_keepalive_intvl", "4.5"},
	{"net.ipv4.tcp_keepalive_probes", "4.5"},
	{"net.ipv4.tcp_rmem", "4.15"},
	{"net.ipv4.tcp_wmem", "4.15"},
	{"net.ipv4.tcp_slow_start_after_idle", "4.15"},
	{"net.ipv4.tcp_notsent_lowat", "4.6"},
}

// SafeSysctls is kubelet's safe sysctl allowlist for a Linux kernel of
// version kernel (as /proc/sys/kernel/osrelease gives it, "6.1.0-18-amd64"):
// the sysctls every pod may set, those namespaced only by later kernels
// left out. A kernel version that does not parse leaves out every sysctl
// that needs one, as kubelet does.
func SafeSysctls(kernel string) []string {
	v, _ := version.ParseGeneric(strings.TrimSpace(kernel))
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || (v != nil && v.AtLeast(version.MustParseGeneric(s.kernel))) {
			out = append(out, s.name)
		}
	}
	return out
}

// KernelVersion reads the running kernel's version, as kubelet does
// (/proc/sys/kernel/osrelease).
func KernelVersion() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "", fmt.Errorf("kernel version: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// sysctlPattern is the policy API's sysctl pattern: segments of
// [a-z0-9]([-_a-z0-9]*[a-z0-9])? separated by . or /, the last one
// possibly ending in *.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

// SysctlAllowlist is kubelet's sysctl admit handler: the sysctls a pod may
// set, by name or by prefix ("net.ipv4.*"), each with its namespace.
type SysctlAllowlist struct {
	names, prefixes map[string]sysctl.Namespace
}

// NewSysctlAllowlist returns the allowlist of patterns: SafeSysctls plus
// kubelet's --allowed-unsafe-sysctls, a name or a prefix ending in "*".
// As kubelet, it refuses a pattern that is not valid or whose sysctls are
// not known to be namespaced (kernel.*, vm.*).
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{names: map[string]sysctl.Namespace{}, prefixes: map[string]sysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > 253 || !sysctlPattern.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most 253 characters and match regex %s", p, sysctlPattern.String()[1:len(sysctlPattern.String())-1])
		}
		ns, nameOrPrefix, prefixed := sysctl.GetNamespace(p)
		if ns == sysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			w.prefixes[nameOrPrefix] = ns
		} else {
			w.names[nameOrPrefix] = ns
		}
	}
	return w, nil
}

// Admit refuses a pod that sets a sysctl not on the list, or one of the
// network, IPC or user namespace while sharing the host's (hostNetwork,
// hostIPC, hostUsers), with kubelet's reason SysctlForbidden and message
// ("forbidden sysctl: \"kernel.msgmax\" not allowlisted").
func (w *SysctlAllowlist) Admit(pod *corev1.Pod) error {
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return nil
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range sc.Sysctls {
		if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return Reject(ReasonSysctlForbidden, "forbidden sysctl: "+err.Error())
		}
	}
	return nil
}

func (w *SysctlAllowlist) check(name string, hostNet, hostIPC, hostUsers bool) error {
	name = sysctl.NormalizeName(name)
	shared := func(ns sysctl.Namespace) error {
		if (ns == sysctl.IPCNamespace && hostIPC) || (ns == sysctl.NetNamespace && hostNet) || (ns == sysctl.UserNamespace && hostUsers) {
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		}
		return nil
	}
	if ns, ok := w.names[name]; ok {
		return shared(ns)
	}
	for p, ns := range w.prefixes {
		if strings.HasPrefix(name, p) {
			return shared(ns)
		}
	}
	return fmt.Errorf("%q not allowlisted", name)
}
