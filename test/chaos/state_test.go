//go:build chaos

package chaos

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

const cgroupFS = "/sys/fs/cgroup"

// cgroupBases are the directories the agent's cgroup root is in: one per
// cgroup v1 hierarchy (/sys/fs/cgroup/<controllers>/<root>), or the one of
// cgroup v2 (/sys/fs/cgroup/<root>); only those that exist.
func cgroupBases(root string) []string {
	var bases []string
	if fi, err := os.Stat(filepath.Join(cgroupFS, root)); err == nil && fi.IsDir() {
		bases = append(bases, filepath.Join(cgroupFS, root))
	}
	entries, _ := os.ReadDir(cgroupFS)
	for _, e := range entries {
		d := filepath.Join(cgroupFS, e.Name(), root)
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && e.IsDir() {
			bases = append(bases, d)
		}
	}
	return bases
}

// podCgroups maps each pod UID to the cgroup directories named for it
// ("pod" + UID, or with the systemd driver's underscores) under the
// agent's cgroup root, in every hierarchy.
func podCgroups(root string) (map[types.UID][]string, error) {
	m := map[types.UID][]string{}
	for _, base := range cgroupBases(root) {
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil // removed while walking
				}
				return err
			}
			if !d.IsDir() {
				return nil
			}
			name := strings.TrimSuffix(d.Name(), ".slice")
			if i := strings.LastIndex(name, "-pod"); i >= 0 {
				name = name[i+1:]
			}
			if uid, ok := strings.CutPrefix(name, "pod"); ok && len(uid) >= 32 {
				u := types.UID(strings.ReplaceAll(uid, "_", "-"))
				m[u] = append(m[u], p)
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// removeCgroupTree removes the run's cgroup root, deepest first (every
// pod is gone by then; a cgroup that still holds a process stays, and is
// reported).
func removeCgroupTree(t *testing.T, root string) {
	for _, base := range cgroupBases(root) {
		var dirs []string
		filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && err != syscall.ENOENT {
				t.Errorf("cleanup: remove cgroup %s: %v", dirs[i], err)
			}
		}
	}
}

// State files the agent writes in a pod's directory, read back as JSON:
// podsync's applied resources and user-namespace ranges. Each is written
// through a temporary file ".<name>-*" and a rename.
var podStateFiles = []string{"actuated-resources", "userns"}

// checkStateFiles reads every state file the agent keeps under its root
// directory (the pods' records, and the image pull records of
// <root>/image_manager if any) and fails the run on one that is not
// valid JSON: a crash, a full disk, must leave the old content or the
// new. A temporary file left by a crash between its write and its rename
// is counted, not failed (kubelet's writers leave the same).
func (r *run) checkStateFiles(when string) {
	var bad []string
	read := func(p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", p, err))
			return
		}
		r.stateFiles++
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			bad = append(bad, fmt.Sprintf("%s (%d bytes): %v", p, len(b), err))
		}
	}
	pods, _ := os.ReadDir(filepath.Join(r.root, "pods"))
	for _, p := range pods {
		dir := filepath.Join(r.root, "pods", p.Name())
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			for _, name := range podStateFiles {
				switch {
				case e.Name() == name:
					read(filepath.Join(dir, name))
				case strings.HasPrefix(e.Name(), "."+name+"-"):
					r.strayTemp++
					r.t.Logf("%s: a temporary state file left: %s", when, filepath.Join(dir, e.Name()))
				}
			}
		}
	}
	filepath.WalkDir(filepath.Join(r.root, "image_manager"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasSuffix(p, ".tmp") {
			read(p)
		}
		return nil
	})
	if len(bad) > 0 {
		sort.Strings(bad)
		r.corrupt += len(bad)
		r.t.Errorf("corrupt state files %s:\n  %s", when, strings.Join(bad, "\n  "))
	}
}

// resized is whether a resize pod's container reports, in the API
// server's status, the resources of its spec after the last resize, with
// no resize pending or in progress.
func resized(info *podInfo, p *corev1.Pod) (bool, string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			return false, fmt.Sprintf("%s %s: %s", c.Type, c.Reason, c.Message)
		}
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.Resources == nil {
		return false, "no resources in the container's status"
	}
	want := info.res.requirements()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if !sameQuantity(cs.Resources.Requests, want.Requests, name) || !sameQuantity(cs.Resources.Limits, want.Limits, name) {
			return false, fmt.Sprintf("status requests %s limits %s, want %s and %s", fmtList(cs.Resources.Requests), fmtList(cs.Resources.Limits), fmtList(want.Requests), fmtList(want.Limits))
		}
	}
	return true, ""
}

func sameQuantity(a, b corev1.ResourceList, name corev1.ResourceName) bool {
	x, y := a[name], b[name]
	return x.Cmp(y) == 0
}

// checkResized compares, for every live resize pod, the container's
// resources on the runtime (CRI ContainerStatus) with its spec's:
// kubelet's CPU quota (limit × 100 µs per 100 ms period), CPU shares
// (request × 1024) and memory limit.
func (r *run) checkResized() {
	pods, err := r.apiPods()
	if err != nil {
		r.t.Fatal(err)
	}
	for _, info := range r.live() {
		p := pods[info.uid]
		if info.kind != kindResize || p == nil || len(p.Status.ContainerStatuses) != 1 {
			continue
		}
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		ctx, cancel := r.ctx()
		resp, err := r.rt.ContainerStatus(ctx, id, false)
		cancel()
		if err != nil {
			r.t.Errorf("resize: status of %s's container %s: %v", info.name, id, err)
			continue
		}
		l := resp.GetStatus().GetResources().GetLinux()
		cpuLim, cpuReq, memLim := resource.MustParse(info.res.cpuLim), resource.MustParse(info.res.cpuReq), resource.MustParse(info.res.memLim)
		wantQuota, wantShares, wantMem := cpuLim.MilliValue()*100, cpuReq.MilliValue()*1024/1000, memLim.Value()
		if l == nil || l.CpuQuota != wantQuota || l.CpuShares != wantShares || l.MemoryLimitInBytes != wantMem {
			r.t.Errorf("resize: %s's container %s has %+v on the runtime; want quota %d, shares %d, memory %d (%+v)",
				info.name, id, l, wantQuota, wantShares, wantMem, info.res)
			continue
		}
		r.resizesChecked++
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fmtList prints a resource list as "cpu=100m,memory=64Mi".
func fmtList(l corev1.ResourceList) string {
	var parts []string
	for name, q := range l {
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
