package kubelet

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/test/kubeletrun"
)

// The two sides' cgroup roots. Neither is "/": kubelet's orphan sweep
// destroys every pod cgroup under <root>/kubepods it does not run (see
// test/kubeletrun), which is where the e2e tier, run in parallel on this
// host, puts podstart's pods; and the two sides must not sweep each
// other's. Both sit under one parent so the tier removes them as one.
const cgroupParentRoot = "/podstart-kubelet-tier"

func cgroupRootOf(side string) string { return cgroupParentRoot + "/" + side }

// cgroupComparedPods are the pods whose values the tier's log shows (one
// per QoS class, and pod overhead and pod-level resources); every pod both
// sides run is compared.
var cgroupComparedPods = []string{"guaranteed", "burstable", "besteffort", "overhead", "pod-level"}

// makeCgroupRoots makes both sides' cgroup roots (removing what a crashed
// run left) and registers their removal; it returns the host's tree.
func (tr *tier) makeCgroupRoots() cgroups.Tree {
	t := tr.t
	tree, err := cgroups.DetectTree("")
	if err != nil {
		missing(t, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kubeletrun.RemoveCgroupRoot(ctx, cgroupParentRoot); err != nil {
		t.Fatalf("cgroup root left by an earlier run: %v", err)
	}
	for _, name := range []string{"kubelet", "podstart"} {
		s := tr.sides[name]
		s.cgroupRoot = cgroupRootOf(name)
		if err := kubeletrun.MakeCgroupRoot(s.cgroupRoot); err != nil {
			t.Fatal(err)
		}
		// The Manager of each side: podstart's makes its cgroups;
		// kubelet's only finds the pod cgroups kubelet made.
		m, err := cgroups.NewManager(tree, criconfig.Node{CgroupDriver: "cgroupfs", CgroupRoot: s.cgroupRoot})
		if err != nil {
			t.Fatal(err)
		}
		s.cgroups = m
	}
	return tree
}

// removeCgroupRoots removes both roots and what is under them; registered
// before the sandboxes' removal, it runs after it.
func (tr *tier) removeCgroupRoots() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kubeletrun.RemoveCgroupRoot(ctx, cgroupParentRoot); err != nil {
		tr.t.Errorf("cleanup: %v", err)
	}
	left := []string{filepath.Join(cgroups.DefaultRoot, "cpu", cgroupParentRoot)}
	if d := kubeletrun.HybridUnifiedDir(cgroupParentRoot); d != "" {
		left = append(left, d)
	}
	for _, d := range left {
		if _, err := os.Stat(d); err == nil {
			tr.t.Errorf("cleanup: cgroup %s left", d)
		}
	}
}

// cgroupSnapshot is what one side's cgroups held while its pods ran.
type cgroupSnapshot struct {
	parents map[string]string            // pod (case name) -> the cgroup parent its RunPodSandbox sent
	pods    map[string]map[string]string // pod -> file -> value, read at that parent
	tiers   map[string]map[string]string // "kubepods", "kubepods/burstable", "kubepods/besteffort" -> file -> value
	uids    []types.UID                  // the pod cgroups found under the tiers
}

// cgroupFiles reads the compared files of the cgroup dir (a cgroupfs
// path): CPU shares, CFS quota and period, memory limit, PIDs limit, and
// the huge page limits there are (cgroup v1; their v2 counterparts).
func cgroupFiles(tree cgroups.Tree, dir string) map[string]string {
	out := map[string]string{}
	read := func(key, file string) {
		v, err := tree.FS.ReadFile(file)
		if err != nil {
			v = "<" + err.Error() + ">"
		}
		out[key] = strings.TrimSpace(v)
	}
	d := strings.TrimPrefix(dir, "/")
	if tree.V2 {
		for _, f := range []string{"cpu.weight", "cpu.max", "memory.max", "pids.max"} {
			read(f, path.Join(d, f))
		}
		ents, _ := os.ReadDir(filepath.Join(cgroups.DefaultRoot, d))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "hugetlb.") && strings.HasSuffix(e.Name(), ".max") {
				read(e.Name(), path.Join(d, e.Name()))
			}
		}
		return out
	}
	for _, f := range []string{"cpu/cpu.shares", "cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us", "memory/memory.limit_in_bytes", "pids/pids.max"} {
		h, name := path.Split(f)
		read(name, path.Join(h, d, name))
	}
	if slices.Contains(tree.Hierarchies, "hugetlb") {
		ents, _ := os.ReadDir(filepath.Join(cgroups.DefaultRoot, "hugetlb", d))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "hugetlb.") && strings.HasSuffix(e.Name(), ".limit_in_bytes") {
				read(e.Name(), path.Join("hugetlb", d, e.Name()))
			}
		}
	}
	return out
}

// snapshot reads one side's cgroups: each pod's at the parent its sandbox
// was given, the tiers, and which pod cgroups exist.
func (tr *tier) snapshot(side string, cases []podCase, rec map[string]*podRecord) *cgroupSnapshot {
	s := tr.sides[side]
	snap := &cgroupSnapshot{parents: map[string]string{}, pods: map[string]map[string]string{}, tiers: map[string]map[string]string{}}
	for _, c := range cases {
		r := rec[c.name+"-"+nodeName]
		if r == nil || r.sandbox == nil {
			continue
		}
		parent := r.sandbox.GetConfig().GetLinux().GetCgroupParent()
		snap.parents[c.name] = parent
		if parent != "" {
			snap.pods[c.name] = cgroupFiles(tr.tree, parent)
		}
	}
	root := s.cgroups.Root().Cgroupfs()
	for _, tier := range []string{"", "/burstable", "/besteffort"} {
		snap.tiers["kubepods"+tier] = cgroupFiles(tr.tree, root+tier)
	}
	snap.uids = tr.podCgroups(side)
	return snap
}

// podCgroups lists the UIDs of the side's pod cgroups.
func (tr *tier) podCgroups(side string) []types.UID {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	found, err := tr.sides[side].cgroups.PodCgroups(ctx)
	if err != nil {
		tr.t.Errorf("%s: pod cgroups: %v", side, err)
	}
	var uids []types.UID
	for uid := range found {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	return uids
}

// unifiedPodCgroups lists the pod cgroups of a side in the cgroup2
// "unified" mount of a hybrid cgroup v1 host (none elsewhere), by the name
// of their directory under the cgroup root.
func (tr *tier) unifiedPodCgroups(side string) []string {
	var out []string
	root := tr.sides[side].cgroups.Root().Cgroupfs()
	for _, tier := range []string{"", "/burstable", "/besteffort"} {
		d := kubeletrun.HybridUnifiedDir(root + tier)
		if d == "" {
			return nil
		}
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), "pod") {
				out = append(out, strings.TrimPrefix(tier+"/"+e.Name(), "/"))
			}
		}
	}
	return out
}

// deleteKubeletPods removes the static pods' manifests and waits until
// kubelet has killed them and removed their pod cgroups (its housekeeping
// destroys the cgroup of a pod no longer running, every 2 s).
func (tr *tier) deleteKubeletPods(cases []podCase, exited chan error, deadline time.Duration) {
	t := tr.t
	for _, c := range cases {
		if err := os.Remove(filepath.Join(tr.dir, "manifests", c.name+".json")); err != nil {
			t.Error(err)
		}
	}
	start := time.Now()
	end := start.Add(deadline)
	for {
		left := tr.podCgroups("kubelet")
		if len(left) == 0 {
			// kubelet's libcontainer manager also destroys a pod's
			// cgroup in a hybrid host's unified mount.
			if u := tr.unifiedPodCgroups("kubelet"); len(u) > 0 {
				t.Errorf("kubelet: pod cgroups left in the unified hierarchy: %v", u)
			}
			t.Logf("kubelet removed its pod cgroups %v after its pods' manifests", time.Since(start).Round(100*time.Millisecond))
			return
		}
		select {
		case err := <-exited:
			exited <- err
			t.Errorf("kubelet exited while deleting its pods: %v", err)
			return
		default:
		}
		if time.Now().After(end) {
			t.Errorf("kubelet: pod cgroups left %v after its pods were deleted: %v", deadline, left)
			return
		}
		time.Sleep(500 * time.Millisecond) // poll the cgroup tree; kubelet cleans up on its own time
	}
}

// compareCgroups compares the two sides' cgroups: the same pods have
// cgroups, with the same values, and the tiers have the same values.
func (tr *tier) compareCgroups(cases []podCase, pods map[string]*corev1.Pod, k, p *cgroupSnapshot) {
	t := tr.t
	if !slices.Equal(k.uids, p.uids) {
		t.Errorf("cgroups: pod cgroups: kubelet's %v, podstart's %v", k.uids, p.uids)
	}
	m := tr.sides["podstart"].cgroups
	compared := 0
	for _, c := range cases {
		kf, kok := k.pods[c.name]
		pf, pok := p.pods[c.name]
		if pod := pods[c.name]; pok && pod != nil {
			if n, err := m.PodName(pod); err != nil || p.parents[c.name] != n.Cgroupfs() {
				t.Errorf("cgroups: %s: podstart's sandbox parent %q is not the pod cgroup the Manager made, %q (%v)", c.name, p.parents[c.name], n.Cgroupfs(), err)
			}
		}
		if !kok && !pok {
			continue
		}
		if kok != pok {
			t.Errorf("cgroups: %s: kubelet's parent %q, podstart's %q", c.name, k.parents[c.name], p.parents[c.name])
			continue
		}
		compared++
		diffFiles(t, "pod "+c.name, kf, pf)
		if slices.Contains(cgroupComparedPods, c.name) {
			t.Logf("cgroups: pod %s (%s): kubelet %s | podstart %s", c.name, criconfig.QOSClass(pods[c.name]), fmtFiles(kf), fmtFiles(pf))
		}
	}
	for _, tier := range sortedKeys(k.tiers) {
		diffFiles(t, tier, k.tiers[tier], p.tiers[tier])
		t.Logf("cgroups: %s: kubelet %s | podstart %s", tier, fmtFiles(k.tiers[tier]), fmtFiles(p.tiers[tier]))
	}
	t.Logf("cgroups: %d pod cgroups compared file by file, and kubepods and its two tiers", compared)
	for _, name := range cgroupComparedPods {
		if _, ok := k.pods[name]; !ok {
			t.Errorf("cgroups: %s: no pod cgroup to compare", name)
		}
	}
}

func diffFiles(t interface{ Errorf(string, ...any) }, what string, k, p map[string]string) {
	keys := map[string]bool{}
	for f := range k {
		keys[f] = true
	}
	for f := range p {
		keys[f] = true
	}
	for _, f := range sortedKeys(keys) {
		kv, kok := k[f]
		pv, pok := p[f]
		if kv != pv || kok != pok {
			t.Errorf("cgroups: %s: %s: kubelet %q, podstart %q", what, f, kv, pv)
		}
	}
}

func fmtFiles(m map[string]string) string {
	var parts []string
	for _, f := range sortedKeys(m) {
		parts = append(parts, f+"="+m[f])
	}
	return strings.Join(parts, " ")
}
