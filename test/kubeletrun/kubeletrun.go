// Package kubeletrun holds what the tiers that run the real kubelet share:
// its configuration as the recipe in ../shared/kubelet writes it, or with
// kubelet's default pod cgroups (PodCgroups: cgroupsPerQOS true and
// enforceNodeAllocatable [pods]) under a cgroup root of the tier's own;
// the making and removal of that root (MakeCgroupRoot, RemoveCgroupRoot);
// and the clean-up of what kubelet leaves mounted.
//
// test/kubelet and the examples/nodeagent side-by-side test run kubelet
// with PodCgroups (the agent there makes its pods' cgroups under a root
// of its own with cgroups.Manager).
//
// Why a CgroupRoot and not kubelet's default "/": with per-QoS cgroups,
// kubelet's housekeeping (cleanupOrphanedPodCgroups, every 2 s) destroys
// every pod cgroup under <cgroupRoot>/kubepods whose pod it does not run,
// SIGKILLing the processes in it. That goes straight to cgroupfs, past the
// tiers' guarded CRI proxy. /kubepods is where podstart puts its pods by
// default (criconfig's cgroup parent with no CgroupRoot): the pods of the
// test/e2e tier, which go test runs in parallel on the same host and
// containerd, and those of an agent running beside kubelet. A kubelet
// rooted at "/" would kill them. Everything else of the cgroup
// configuration is kubelet's default.
package kubeletrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
)

// Config is the part of kubelet's KubeletConfiguration a tier varies; the
// rest is the recipe's: cgroupfs, anonymous read-write API on loopback, no
// swap or cgroup v1 checks, and image GC off because the runtime is shared
// with podstart. Log rotation is off for the same reason
// (containerLogMaxSize "-1", kubelet's way to turn it off; kubelet then
// runs a manager that does nothing): its container log manager rotates the
// log of every running container on its runtime, whoever made it (it
// lists all containers and does not check the log is under its
// podLogsDir), and the rename and compression go to the filesystem, past
// the guarded proxy. On the shared containerd it rotated the log of
// test/e2e's TestLogRotationOnContainerd once that grew past kubelet's
// default 10Mi between two of the test's passes: a rotated file the
// test's Manager did not make ("2 reopens for 3 rotated files").
type Config struct {
	Endpoint string // the CRI endpoint (the tier's guarded proxy)
	// PodCgroups runs kubelet with its default pod cgroups: cgroupsPerQOS
	// and node allocatable enforced on kubepods, under CgroupRoot. Without
	// it, the recipe's cgroupsPerQOS: false and enforceNodeAllocatable: []
	// (kubelet makes no pod cgroups).
	PodCgroups bool
	// CgroupRoot is kubelet's cgroupRoot, required with PodCgroups: its
	// pods live under <CgroupRoot>/kubepods. It must exist
	// (MakeCgroupRoot); see the package doc for why it is not "/".
	CgroupRoot    string
	Port          int // kubelet's API port on 127.0.0.1
	PodLogsDir    string
	StaticPodPath string // empty: no static pods
	// SyncFrequency is kubelet's syncFrequency ("5s"); empty keeps its 1m default.
	SyncFrequency        string
	ClusterDNS           string // empty: none
	ClusterDomain        string
	AllowedUnsafeSysctls []string
}

// YAML is the configuration file kubelet reads with --config. It panics
// when PodCgroups has no CgroupRoot.
func (c Config) YAML() string {
	cgroupConfig := "cgroupsPerQOS: false\nenforceNodeAllocatable: []"
	if c.PodCgroups {
		if c.CgroupRoot == "" || c.CgroupRoot == "/" {
			panic("kubeletrun: PodCgroups needs a CgroupRoot of its own (see the package doc)")
		}
		cgroupConfig = "cgroupRoot: " + c.CgroupRoot
	}
	var b strings.Builder
	b.WriteString("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
	if c.StaticPodPath != "" {
		fmt.Fprintf(&b, "staticPodPath: %s\nfileCheckFrequency: 1s\n", c.StaticPodPath)
	}
	fmt.Fprintf(&b, `podLogsDir: %s
cgroupDriver: cgroupfs
%s
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
containerLogMaxSize: "-1"
`, c.PodLogsDir, cgroupConfig, c.Endpoint, c.Port)
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

// MakeCgroupRoot makes the cgroup root (a cgroupfs path such as
// "/podstart-kubelet") in every cgroup hierarchy of the host, as kubelet
// requires of its cgroupRoot: on cgroup v1 in each hierarchy, the cpuset
// one with its parent's CPUs and memory nodes (a cpuset cgroup without
// them takes no process); on cgroup v2 with the parent's controllers
// enabled for it. A root that exists is left as it is.
func MakeCgroupRoot(root string) error {
	tree, err := cgroups.DetectTree("")
	if err != nil {
		return err
	}
	name := cgroups.ParseCgroupfs(root)
	if len(name) == 0 {
		return fmt.Errorf("kubeletrun: cgroup root %q is the host's root", root)
	}
	f := tree.FS
	mkdirs := func(base string, each func(parent, dir string) error) error {
		for i := 1; i <= len(name); i++ {
			dir := path.Join(base, cgroups.Name(name[:i]).Cgroupfs())
			parent := path.Dir(dir)
			if each != nil {
				if err := each(parent, dir); err != nil {
					return err
				}
			}
			if err := f.Mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		return nil
	}
	if tree.V2 {
		return mkdirs(".", func(parent, _ string) error {
			ctl, err := f.ReadFile(path.Join(parent, "cgroup.controllers"))
			if err != nil {
				return err
			}
			var words []string
			for _, w := range strings.Fields(ctl) {
				words = append(words, "+"+w)
			}
			if len(words) == 0 {
				return nil
			}
			return f.WriteFile(path.Join(parent, "cgroup.subtree_control"), strings.Join(words, " "))
		})
	}
	for _, h := range tree.Hierarchies {
		if err := mkdirs(h, nil); err != nil {
			return err
		}
		if h != "cpuset" {
			continue
		}
		for i := 1; i <= len(name); i++ {
			dir := path.Join(h, cgroups.Name(name[:i]).Cgroupfs())
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := f.ReadFile(path.Join(dir, file))
				if err != nil {
					return err
				}
				if strings.TrimSpace(v) != "" {
					continue
				}
				pv, err := f.ReadFile(path.Join(path.Dir(dir), file))
				if err != nil {
					return err
				}
				if err := f.WriteFile(path.Join(dir, file), strings.TrimSpace(pv)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// RemoveCgroupRoot removes the cgroup root and everything under it in
// every hierarchy (the kubepods tree kubelet leaves when it stops),
// killing any process left there first (cgroups.Manager.Destroy), and on
// a hybrid cgroup v1 host in its cgroup2 "unified" mount too, where runc
// makes each container's cgroup (and so its pod's) beside the v1 ones. A
// missing root is no error.
func RemoveCgroupRoot(ctx context.Context, root string) error {
	tree, err := cgroups.DetectTree("")
	if err != nil {
		return err
	}
	name := cgroups.ParseCgroupfs(root)
	if len(name) == 0 {
		return fmt.Errorf("kubeletrun: cgroup root %q is the host's root", root)
	}
	m, err := cgroups.NewManager(tree, criconfig.Node{CgroupRoot: root})
	if err != nil {
		return err
	}
	if err := m.Destroy(ctx, name); err != nil {
		return err
	}
	if dir := HybridUnifiedDir(root); dir != "" {
		return rmdirAll(dir)
	}
	return nil
}

// HybridUnifiedDir is the cgroup (a cgroupfs path) in the cgroup2
// "unified" mount of a hybrid cgroup v1 host (/sys/fs/cgroup/unified), or
// "" on other hosts. kubelet's libcontainer manager makes and destroys a
// pod's cgroup there too; cgroups.DetectTree leaves that mount out.
func HybridUnifiedDir(cgroup string) string {
	mount := path.Join(cgroups.DefaultRoot, "unified")
	var st unix.Statfs_t
	if unix.Statfs(mount, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return ""
	}
	if unix.Statfs(cgroups.DefaultRoot, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return ""
	}
	return path.Join(mount, cgroup)
}

// rmdirAll removes the cgroup dir and its descendants, deepest first.
func rmdirAll(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := rmdirAll(path.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("rmdir %s: %w", dir, err)
	}
	return nil
}

// HostIP is the address of the interface with the default route, which is
// what kubelet takes as the node's IP when it cannot resolve its name (it
// refuses a loopback one); else the first non-loopback IPv4 address.
func HostIP() (string, error) {
	c, err := net.Dial("udp4", "192.0.2.1:9")
	if err == nil {
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no node IP: %v", err)
}
