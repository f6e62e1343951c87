package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
)

// hostTree returns this host's cgroup tree and a fresh cgroup root made in
// every hierarchy (removed at the end, with whatever is left under it),
// or skips: the test needs root and a writable cgroupfs.
// PODSTART_E2E_REQUIRED=1 fails instead of skipping.
func hostTree(t *testing.T) (Tree, string) {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("PODSTART_E2E_REQUIRED") == "1" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if os.Geteuid() != 0 {
		skip("needs root to write cgroups")
	}
	tree, err := DetectTree("")
	if err != nil {
		skip("no cgroup file system: %v", err)
	}
	root := fmt.Sprintf("podstart-test-%d-%x", os.Getpid(), rand.Uint32())
	dirs := []string{root}
	if !tree.V2 {
		dirs = dirs[:0]
		for _, h := range tree.Hierarchies {
			dirs = append(dirs, path.Join(h, root))
		}
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			removeTree(t, tree.FS, d)
		}
	})
	for _, d := range dirs {
		if err := tree.FS.Mkdir(d); err != nil {
			skip("cgroupfs not writable: %v", err)
		}
	}
	return tree, "/" + root
}

// removeTree kills what is left under dir and removes it, deepest first.
func removeTree(t *testing.T, f FS, dir string) {
	subs, err := f.Subdirs(dir)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	for _, s := range subs {
		removeTree(t, f, path.Join(dir, s))
	}
	pids, _ := f.Pids(dir)
	for _, p := range pids {
		_ = KillProcess(p)
	}
	if err := f.Rmdir(dir); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// TestHostCgroups runs the Manager against this host's cgroup file system
// under a cgroup root of its own: the tiers, three pods' cgroups with
// kubelet's values as the kernel reads them back, a resize, a real process
// killed by RemovePod, and an orphan swept.
func TestHostCgroups(t *testing.T) {
	tree, root := hostTree(t)
	ctx := context.Background()
	alloc := NodeAllocatable{Capacity: HostCapacity(), SystemReserved: list("cpu", "100m", "memory", "64Mi")}
	m, err := NewManager(tree, criconfig.Node{CgroupRoot: root}, WithNodeAllocatable(alloc), WithPodPidsLimit(512))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	g := podWith("host-g", rr(req("500m", "256Mi"), req("500m", "256Mi")))
	b := podWith("host-b", rr(req("250m", "64Mi"), req("1", "128Mi")))
	e := podWith("host-e", rr(nil, nil))
	for _, p := range []*corev1.Pod{g, b, e} {
		if err := m.EnsurePod(ctx, p); err != nil {
			t.Fatal(err)
		}
		want := criconfig.CgroupParent(p, criconfig.Node{CgroupRoot: root})
		if got := mustPodName(t, m, p).Cgroupfs(); got != want {
			t.Errorf("pod cgroup %s, criconfig's parent %s", got, want)
		}
	}
	read := func(controller string, n Name, file string) string {
		t.Helper()
		dir := strings.TrimPrefix(n.Cgroupfs(), "/")
		if !tree.V2 {
			h, _ := tree.hierarchy(controller)
			dir = path.Join(h, dir)
		}
		v, err := tree.FS.ReadFile(path.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	type fv struct {
		controller string
		n          Name
		file, want string
	}
	var checks []fv
	capacity := HostCapacity()
	kubepodsMem := strconv.FormatInt(capacity.Memory().Value()-64<<20, 10)
	if tree.V2 {
		checks = []fv{
			{"memory", m.Root(), "memory.max", kubepodsMem},
			{"cpu", m.QOS().BestEffort, "cpu.weight", "1"},
			{"cpu", mustPodName(t, m, g), "cpu.weight", "20"},
			{"cpu", mustPodName(t, m, g), "cpu.max", "50000 100000"},
			{"memory", mustPodName(t, m, g), "memory.max", "268435456"},
			{"pids", mustPodName(t, m, g), "pids.max", "512"},
			{"cpu", mustPodName(t, m, b), "cpu.max", "100000 100000"},
			{"memory", mustPodName(t, m, b), "memory.max", "134217728"},
			{"cpu", mustPodName(t, m, e), "cpu.weight", "1"},
			{"memory", mustPodName(t, m, e), "memory.max", "max"},
		}
	} else {
		checks = []fv{
			{"memory", m.Root(), "memory.limit_in_bytes", kubepodsMem},
			{"cpu", m.QOS().BestEffort, "cpu.shares", "2"},
			{"cpu", mustPodName(t, m, g), "cpu.shares", "512"},
			{"cpu", mustPodName(t, m, g), "cpu.cfs_quota_us", "50000"},
			{"cpu", mustPodName(t, m, g), "cpu.cfs_period_us", "100000"},
			{"memory", mustPodName(t, m, g), "memory.limit_in_bytes", "268435456"},
			{"pids", mustPodName(t, m, g), "pids.max", "512"},
			{"cpu", mustPodName(t, m, b), "cpu.shares", "256"},
			{"cpu", mustPodName(t, m, b), "cpu.cfs_quota_us", "100000"},
			{"memory", mustPodName(t, m, b), "memory.limit_in_bytes", "134217728"},
			{"cpu", mustPodName(t, m, e), "cpu.shares", "2"},
			{"cpu", mustPodName(t, m, e), "cpu.cfs_quota_us", "-1"},
			{"pids", mustPodName(t, m, e), "pids.max", "512"},
		}
	}
	for _, c := range checks {
		if got := read(c.controller, c.n, c.file); got != c.want {
			t.Errorf("%s of %s = %q, want %q", c.file, c.n.Cgroupfs(), got, c.want)
		}
	}

	// kubelet's reading of g's cgroup.
	rc, err := m.CgroupConfig(ctx, mustPodName(t, m, g))
	if err != nil {
		t.Fatal(err)
	}
	wantShares := uint64(512)
	if tree.V2 {
		wantShares = CPUSharesFromWeight(20)
	}
	if *rc.CPUShares != wantShares || *rc.CPUQuota != 50000 || *rc.CPUPeriod != 100000 || *rc.Memory != 256<<20 {
		t.Errorf("CgroupConfig of g = shares %d quota %d period %d memory %d", *rc.CPUShares, *rc.CPUQuota, *rc.CPUPeriod, *rc.Memory)
	}
	if u, err := m.MemoryUsage(ctx, mustPodName(t, m, g)); err != nil || u < 0 {
		t.Errorf("MemoryUsage of g = %d, %v", u, err)
	}

	// Resize b, in kubelet's steps.
	resized := b.DeepCopy()
	resized.Spec.Containers[0].Resources = rr(req("500m", "64Mi"), req("2", "256Mi"))
	for _, step := range []struct {
		resource corev1.ResourceName
		limit    bool
	}{{"memory", true}, {"memory", false}, {"cpu", true}, {"cpu", false}} {
		if err := m.UpdatePodResource(ctx, resized, step.resource, step.limit); err != nil {
			t.Fatal(err)
		}
	}
	memFile, quotaFile, quotaWant := "memory.limit_in_bytes", "cpu.cfs_quota_us", "200000"
	if tree.V2 {
		memFile, quotaFile, quotaWant = "memory.max", "cpu.max", "200000 100000"
	}
	if got := read("memory", mustPodName(t, m, b), memFile); got != "268435456" {
		t.Errorf("resized memory limit = %s", got)
	}
	if got := read("cpu", mustPodName(t, m, b), quotaFile); got != quotaWant {
		t.Errorf("resized quota = %s", got)
	}

	// A real process in g's cgroup is killed by RemovePod.
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for _, d := range mustDirs(t, m, mustPodName(t, m, g)) {
		if strings.HasPrefix(d, "systemd/") {
			continue
		}
		if err := tree.FS.WriteFile(path.Join(d, "cgroup.procs"), strconv.Itoa(cmd.Process.Pid)); err != nil {
			t.Fatalf("attach %d to %s: %v", cmd.Process.Pid, d, err)
		}
	}
	if pids, err := m.Pids(mustPodName(t, m, g)); err != nil || len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("Pids = %v, %v; want [%d]", pids, err, cmd.Process.Pid)
	}
	// On a hybrid host runc makes the cgroup in the unified mount too.
	var unified []string
	if tree.Unified != "" {
		p := strings.TrimPrefix(mustPodName(t, m, g).Cgroupfs(), "/")
		for _, d := range strings.Split(p, "/") {
			unified = append(unified, d)
			if err := tree.FS.Mkdir(path.Join(append([]string{tree.Unified}, unified...)...)); err != nil {
				t.Fatal(err)
			}
		}
		top := path.Join(tree.Unified, unified[0])
		t.Cleanup(func() { removeTree(t, tree.FS, top) })
	}
	if err := m.RemovePod(ctx, g); err != nil {
		t.Fatal(err)
	}
	if len(unified) > 0 {
		if _, err := tree.FS.Subdirs(path.Join(append([]string{tree.Unified}, unified...)...)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("g's cgroup left in the unified mount %s: %v", tree.Unified, err)
		}
	}
	err = <-waited
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("sleep ended with %v, want killed by SIGKILL", err)
	}
	if ok, err := m.Exists(mustPodName(t, m, g)); ok || err != nil {
		t.Errorf("g's cgroup exists after RemovePod: %v, %v", ok, err)
	}

	// Orphans: b is gone from the node, e stays.
	removed, err := m.RemoveOrphans(ctx, func(uid types.UID) bool { return uid == e.UID }, nil)
	if err != nil || len(removed) != 1 || removed[0] != b.UID {
		t.Errorf("RemoveOrphans = %v, %v; want [%s]", removed, err, b.UID)
	}
	found, err := m.PodCgroups(ctx)
	if err != nil || len(found) != 1 || found[e.UID] == nil {
		t.Errorf("PodCgroups after the sweep = %v, %v", found, err)
	}
}
