package criconfig

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// kubelet's limits (pkg/apis/core/validation) on what reaches a pod's
// resolv.conf.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxSearchLen          = 253
)

// ResolvConf is what kubelet reads from a resolv.conf.
type ResolvConf struct {
	Nameservers, Searches, Options []string
}

// ParseResolvConf reads a resolv.conf as kubelet does: nameserver lines
// add, the last search line wins (without "." and trailing dots), options
// merge by name.
func ParseResolvConf(data []byte) ResolvConf {
	rc := ResolvConf{Nameservers: []string{}, Searches: []string{}, Options: []string{}}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) >= 2 {
				rc.Nameservers = append(rc.Nameservers, f[1])
			}
		case "search":
			rc.Searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					rc.Searches = append(rc.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			rc.Options = mergeOptions(rc.Options, f[1:])
		}
	}
	return rc
}

// mergeOptions keeps one option per name, the later one winning. kubelet
// merges through a map, so its order is random; podstart sorts (a
// deliberate difference: resolv.conf option order carries no meaning).
func mergeOptions(existing, more []string) []string {
	m := map[string]string{}
	for _, o := range append(append([]string{}, existing...), more...) {
		m[strings.SplitN(o, ":", 2)[0]] = o
	}
	out := make([]string, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	sort.Strings(out)
	return out
}

// DNSConfig is kubelet's GetPodDNS: ClusterFirst (and
// ClusterFirstWithHostNet) pods get the cluster's DNS servers, cluster
// searches before the node's and ndots:5; Default (and ClusterFirst with
// host network, or no cluster DNS) the node's resolv.conf; None nothing;
// then spec.dnsConfig is merged in and kubelet's limits applied.
func DNSConfig(pod *corev1.Pod, node Node) *runtimeapi.DNSConfig {
	host := ParseResolvConf(node.ResolvConfContent)
	cfg := &runtimeapi.DNSConfig{Servers: host.Nameservers, Searches: host.Searches, Options: host.Options}
	if node.NoResolvConf {
		cfg = &runtimeapi.DNSConfig{}
	}
	policy := pod.Spec.DNSPolicy
	cluster := policy == corev1.DNSClusterFirstWithHostNet ||
		policy == corev1.DNSClusterFirst && !pod.Spec.HostNetwork ||
		policy != corev1.DNSNone && policy != corev1.DNSDefault && policy != corev1.DNSClusterFirst
	switch {
	case policy == corev1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case cluster && len(node.ClusterDNS) > 0:
		cfg.Servers = append([]string{}, node.ClusterDNS...)
		if node.ClusterDomain != "" {
			cfg.Searches = omitDuplicates(append([]string{
				pod.Namespace + ".svc." + node.ClusterDomain, "svc." + node.ClusterDomain, node.ClusterDomain}, cfg.Searches...))
		}
		cfg.Options = []string{"ndots:5"}
	default:
		// ClusterFirst without cluster DNS falls back to Default, as
		// kubelet's (which also emits a MissingClusterDNS warning: see
		// MissingClusterDNS).
		if node.NoResolvConf {
			for _, ip := range node.HostIPs {
				if strings.Contains(ip, ":") {
					cfg.Servers = append(cfg.Servers, "::1")
				} else {
					cfg.Servers = append(cfg.Servers, "127.0.0.1")
				}
			}
			if len(cfg.Servers) == 0 {
				cfg.Servers = []string{"127.0.0.1"}
			}
			cfg.Searches = []string{"."}
		}
	}
	if d := pod.Spec.DNSConfig; d != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, d.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, d.Searches...))
		opts := make([]string, 0, len(d.Options))
		for _, o := range d.Options {
			if o.Value != nil && *o.Value != "" {
				opts = append(opts, o.Name+":"+*o.Value)
			} else {
				opts = append(opts, o.Name)
			}
		}
		cfg.Options = mergeOptions(cfg.Options, opts)
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
	}
	cfg.Searches = fitSearches(cfg.Searches)
	return cfg
}

// MissingClusterDNS reports whether kubelet would fall back from a
// ClusterFirst policy to Default for the pod because the node has no
// ClusterDNS, and warn with a MissingClusterDNS event (MissingClusterDNSMessage).
func MissingClusterDNS(pod *corev1.Pod, node Node) bool {
	policy := pod.Spec.DNSPolicy
	cluster := policy == corev1.DNSClusterFirstWithHostNet ||
		policy == corev1.DNSClusterFirst && !pod.Spec.HostNetwork ||
		policy != corev1.DNSNone && policy != corev1.DNSDefault && policy != corev1.DNSClusterFirst
	return cluster && len(node.ClusterDNS) == 0
}

// MissingClusterDNSMessage is the message of kubelet's MissingClusterDNS
// event on the node; the pod's event is `pod: "<name>_<namespace>(<uid>)". `
// followed by it.
const MissingClusterDNSMessage = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`

func omitDuplicates(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			out = append(out, s)
			seen[s] = true
		}
	}
	return out
}

// fitSearches is kubelet's formDNSSearchFitsLimits.
func fitSearches(s []string) []string {
	if len(s) > maxDNSSearchPaths {
		s = s[:maxDNSSearchPaths]
	}
	out := s[:0:0]
	for _, v := range s {
		if len(v) <= maxSearchLen {
			out = append(out, v)
		}
	}
	if n := len(strings.Join(out, " ")); n > maxDNSSearchListChars {
		cut, cutLen := 0, 0
		for i := len(out) - 1; i >= 0; i-- {
			cutLen += len(out[i]) + 1
			cut++
			if n-cutLen <= maxDNSSearchListChars {
				break
			}
		}
		out = out[:len(out)-cut]
	}
	if s != nil && out == nil {
		out = []string{}
	}
	return out
}
