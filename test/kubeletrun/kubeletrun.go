// Package kubeletrun holds what the tiers that run the real kubelet share:
// its configuration as the recipe in ../shared/kubelet writes it, and the
// clean-up of what it leaves mounted.
package kubeletrun

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Config is the part of kubelet's KubeletConfiguration a tier varies; the
// rest is the recipe's: cgroupfs without per-QoS cgroups, anonymous
// read-write API on loopback, no swap or cgroup v1 checks, and image GC
// off because the runtime is shared with podstart.
type Config struct {
	Endpoint      string // the CRI endpoint (the tier's guarded proxy)
	Port          int    // kubelet's API port on 127.0.0.1
	PodLogsDir    string
	StaticPodPath string // empty: no static pods
	// SyncFrequency is kubelet's syncFrequency ("5s"); empty keeps its 1m default.
	SyncFrequency        string
	ClusterDNS           string // empty: none
	ClusterDomain        string
	AllowedUnsafeSysctls []string
}

// YAML is the configuration file kubelet reads with --config.
func (c Config) YAML() string {
	var b strings.Builder
	b.WriteString("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
	if c.StaticPodPath != "" {
		fmt.Fprintf(&b, "staticPodPath: %s\nfileCheckFrequency: 1s\n", c.StaticPodPath)
	}
	fmt.Fprintf(&b, `podLogsDir: %s
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: %s
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
readOnlyPort: 0
address: 127.0.0.1
port: %d
healthzPort: 0
localStorageCapacityIsolation: false
failCgroupV1: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, c.PodLogsDir, c.Endpoint, c.Port)
	if c.SyncFrequency != "" {
		fmt.Fprintf(&b, "syncFrequency: %s\n", c.SyncFrequency)
	}
	if c.ClusterDNS != "" {
		fmt.Fprintf(&b, "clusterDNS: [%s]\nclusterDomain: %s\n", c.ClusterDNS, c.ClusterDomain)
	}
	if len(c.AllowedUnsafeSysctls) > 0 {
		q := make([]string, len(c.AllowedUnsafeSysctls))
		for i, s := range c.AllowedUnsafeSysctls {
			q[i] = fmt.Sprintf("%q", s)
		}
		fmt.Fprintf(&b, "allowedUnsafeSysctls: [%s]\n", strings.Join(q, ", "))
	}
	return b.String()
}

// UnmountUnder unmounts everything mounted under dir, deepest first:
// kubelet bind-mounts its root dir onto itself and mounts tmpfs for
// Secret, projected and emptyDir volumes and subPaths under it, so the
// test's directory cannot be removed before.
func UnmountUnder(dir string) error {
	for range 3 {
		b, err := os.ReadFile("/proc/self/mounts")
		if err != nil {
			return err
		}
		var ms []string
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/")) {
				ms = append(ms, f[1])
			}
		}
		if len(ms) == 0 {
			return nil
		}
		sort.Sort(sort.Reverse(sort.StringSlice(ms)))
		for _, m := range ms {
			if unix.Unmount(m, 0) != nil {
				unix.Unmount(m, unix.MNT_DETACH)
			}
		}
	}
	return fmt.Errorf("mounts left under %s after three passes", dir)
}
