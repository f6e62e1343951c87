package cgroups

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
)

// layout names where a controller's files live in a MemFS of either
// version.
type layout struct {
	v2 bool
}

func (l layout) dir(controller, cgroup string) string {
	cgroup = strings.TrimPrefix(cgroup, "/")
	if l.v2 {
		return cgroup
	}
	return path.Join(controller, cgroup)
}

func (l layout) String() string {
	if l.v2 {
		return "v2"
	}
	return "v1"
}

var layouts = []layout{{v2: false}, {v2: true}}

const twoMi = 2 << 20

func testAllocatable() NodeAllocatable {
	return NodeAllocatable{
		Capacity:       list("cpu", "4", "memory", "8Gi", "pid", "32768", "hugepages-2Mi", "64Mi"),
		SystemReserved: list("cpu", "500m", "memory", "1Gi"),
		KubeReserved:   list("memory", "512Mi", "pid", "768"),
	}
}

func newTestManager(t *testing.T, l layout, node criconfig.Node, opts ...Option) (*Manager, *MemFS) {
	t.Helper()
	mfs := NewMemFS(l.v2, twoMi)
	node.HugePageSizes = []int64{twoMi}
	opts = append([]Option{WithKill(mfs.Kill), WithNodeAllocatable(testAllocatable())}, opts...)
	m, err := NewManager(mfs.Tree(), node, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m, mfs
}

// expect checks cgroup files: controller, cgroup, file → value.
type fileValue struct{ controller, cgroup, file, value string }

func checkFiles(t *testing.T, mfs *MemFS, l layout, want []fileValue) {
	t.Helper()
	for _, w := range want {
		p := path.Join(l.dir(w.controller, w.cgroup), w.file)
		got, err := mfs.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got != w.value {
			t.Errorf("%s = %q, want %q", p, got, w.value)
		}
	}
}

func TestEnsureQoS(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			m, mfs := newTestManager(t, l, criconfig.Node{})
			ctx := context.Background()
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			// kubepods: capacity − system − kube reserved: 3500m, 6.5Gi,
			// 32000 PIDs, 64Mi of 2Mi pages; the tiers unbounded.
			unbounded := "4611686018427387904"
			want := []fileValue{
				{"pids", "/kubepods", "pids.max", "32000"},
				{"hugetlb", "/kubepods", "hugetlb.2MB.limit_in_bytes", "67108864"},
				{"hugetlb", "/kubepods/burstable", "hugetlb.2MB.limit_in_bytes", unbounded},
				{"hugetlb", "/kubepods/besteffort", "hugetlb.2MB.limit_in_bytes", unbounded},
			}
			if l.v2 {
				want = []fileValue{
					{"cpu", "/kubepods", "cpu.weight", "137"},
					{"memory", "/kubepods", "memory.max", "6979321856"},
					{"pids", "/kubepods", "pids.max", "32000"},
					{"hugetlb", "/kubepods", "hugetlb.2MB.max", "67108864"},
					{"memory", "/kubepods", "memory.min", "0"},
					{"memory", "/kubepods", "memory.low", "0"},
					{"memory", "/kubepods/burstable", "memory.low", "0"},
					{"cpu", "/kubepods/burstable", "cpu.weight", "100"},
					{"cpu", "/kubepods/besteffort", "cpu.weight", "1"},
					{"hugetlb", "/kubepods/burstable", "hugetlb.2MB.max", unbounded},
					{"hugetlb", "/kubepods/besteffort", "hugetlb.2MB.max", unbounded},
					{"", "", "cgroup.subtree_control", "cpuset cpu io memory hugetlb pids"},
					{"", "/kubepods", "cgroup.subtree_control", "cpuset cpu io memory hugetlb pids"},
				}
			} else {
				want = append(want,
					fileValue{"cpu", "/kubepods", "cpu.shares", "3584"},
					fileValue{"memory", "/kubepods", "memory.limit_in_bytes", "6979321856"},
					fileValue{"cpu", "/kubepods/burstable", "cpu.shares", "1024"},
					fileValue{"cpu", "/kubepods/besteffort", "cpu.shares", "2"},
					fileValue{"cpuset", "/kubepods", "cpuset.cpus", "0-1"},
					fileValue{"cpuset", "/kubepods/besteffort", "cpuset.mems", "0"},
				)
				// every hierarchy has the tiers
				for _, h := range DefaultV1Hierarchies {
					for _, c := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
						if !mfs.Exists(path.Join(h, c)) {
							t.Errorf("%s/%s not made", h, c)
						}
					}
				}
			}
			checkFiles(t, mfs, l, want)

			// A second start updates in place.
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			checkFiles(t, mfs, l, want)

			// UpdateQoS: burstable from the active Burstable pods, kubepods'
			// huge pages unbounded as kubelet's loop leaves them.
			active := []*corev1.Pod{
				podWith("g", rr(req("1", "1Gi"), req("1", "1Gi"))),
				podWith("b1", rr(req("250m", "100Mi"), nil)),
				podWith("b2", rr(req("750m", ""), nil)),
			}
			if err := m.UpdateQoS(ctx, active); err != nil {
				t.Fatal(err)
			}
			if l.v2 {
				checkFiles(t, mfs, l, []fileValue{
					{"cpu", "/kubepods/burstable", "cpu.weight", "39"},
					{"cpu", "/kubepods/besteffort", "cpu.weight", "1"},
					{"hugetlb", "/kubepods", "hugetlb.2MB.max", unbounded},
				})
			} else {
				checkFiles(t, mfs, l, []fileValue{
					{"cpu", "/kubepods/burstable", "cpu.shares", "1024"},
					{"cpu", "/kubepods/besteffort", "cpu.shares", "2"},
					{"hugetlb", "/kubepods", "hugetlb.2MB.limit_in_bytes", unbounded},
				})
			}
		})
	}
}

func TestEnsureQoSTieredReservation(t *testing.T) {
	t.Parallel()
	l := layout{v2: true}
	m, mfs := newTestManager(t, l, criconfig.Node{MemoryReservationPolicy: criconfig.MemoryReservationTiered})
	ctx := context.Background()
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	active := []*corev1.Pod{
		podWith("g", rr(req("1", "1Gi"), req("1", "1Gi"))),
		podWith("b", rr(req("250m", "100Mi"), nil)),
	}
	if err := m.UpdateQoS(ctx, active); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, mfs, l, []fileValue{
		{"memory", "/kubepods", "memory.min", "1178599424"},
		{"memory", "/kubepods", "memory.low", "104857600"},
		{"memory", "/kubepods/burstable", "memory.low", "104857600"},
	})
	if err := m.EnsurePod(ctx, active[0]); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, mfs, l, []fileValue{{"memory", "/kubepods/podg", "memory.min", "1073741824"}})
}

func TestEnsurePod(t *testing.T) {
	t.Parallel()
	guaranteed := podWith("g-1", rr(list("cpu", "500m", "memory", "256Mi", "hugepages-2Mi", "4Mi"), list("cpu", "500m", "memory", "256Mi", "hugepages-2Mi", "4Mi")))
	burstable := podWith("b-1", rr(req("250m", "64Mi"), req("1", "128Mi")))
	bestEffort := podWith("e-1", rr(nil, nil))
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			m, mfs := newTestManager(t, l, criconfig.Node{}, WithPodPidsLimit(1024))
			ctx := context.Background()
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			for _, p := range []*corev1.Pod{guaranteed, burstable, bestEffort} {
				if err := m.EnsurePod(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			var want []fileValue
			if l.v2 {
				want = []fileValue{
					{"cpu", "/kubepods/podg-1", "cpu.weight", "20"},
					{"cpu", "/kubepods/podg-1", "cpu.max", "50000 100000"},
					{"memory", "/kubepods/podg-1", "memory.max", "268435456"},
					{"pids", "/kubepods/podg-1", "pids.max", "1024"},
					{"hugetlb", "/kubepods/podg-1", "hugetlb.2MB.max", "4194304"},
					{"cpu", "/kubepods/burstable/podb-1", "cpu.weight", "10"},
					{"cpu", "/kubepods/burstable/podb-1", "cpu.max", "100000 100000"},
					{"memory", "/kubepods/burstable/podb-1", "memory.max", "134217728"},
					{"hugetlb", "/kubepods/burstable/podb-1", "hugetlb.2MB.max", "0"},
					{"cpu", "/kubepods/besteffort/pode-1", "cpu.weight", "1"},
					{"cpu", "/kubepods/besteffort/pode-1", "cpu.max", "max 100000"},
					{"memory", "/kubepods/besteffort/pode-1", "memory.max", "max"},
					{"pids", "/kubepods/besteffort/pode-1", "pids.max", "1024"},
				}
			} else {
				want = []fileValue{
					{"cpu", "/kubepods/podg-1", "cpu.shares", "512"},
					{"cpu", "/kubepods/podg-1", "cpu.cfs_quota_us", "50000"},
					{"cpu", "/kubepods/podg-1", "cpu.cfs_period_us", "100000"},
					{"memory", "/kubepods/podg-1", "memory.limit_in_bytes", "268435456"},
					{"pids", "/kubepods/podg-1", "pids.max", "1024"},
					{"hugetlb", "/kubepods/podg-1", "hugetlb.2MB.limit_in_bytes", "4194304"},
					{"cpu", "/kubepods/burstable/podb-1", "cpu.shares", "256"},
					{"cpu", "/kubepods/burstable/podb-1", "cpu.cfs_quota_us", "100000"},
					{"memory", "/kubepods/burstable/podb-1", "memory.limit_in_bytes", "134217728"},
					{"hugetlb", "/kubepods/burstable/podb-1", "hugetlb.2MB.limit_in_bytes", "0"},
					{"cpu", "/kubepods/besteffort/pode-1", "cpu.shares", "2"},
					{"cpu", "/kubepods/besteffort/pode-1", "cpu.cfs_quota_us", "-1"},
					{"memory", "/kubepods/besteffort/pode-1", "memory.limit_in_bytes", "9223372036854771712"},
					{"pids", "/kubepods/besteffort/pode-1", "pids.max", "1024"},
					{"cpuset", "/kubepods/besteffort/pode-1", "cpuset.cpus", "0-1"},
				}
			}
			checkFiles(t, mfs, l, want)

			// An existing pod cgroup is left alone.
			file := path.Join(l.dir("pids", "/kubepods/podg-1"), "pids.max")
			before := mfs.Writes(file)
			if err := m.EnsurePod(ctx, guaranteed); err != nil {
				t.Fatal(err)
			}
			if mfs.Writes(file) != before {
				t.Errorf("EnsurePod of an existing pod cgroup wrote %s again", file)
			}

			// A pod-level resize: the new CPU and memory values.
			resized := burstable.DeepCopy()
			resized.Spec.Containers[0].Resources = rr(req("500m", "64Mi"), req("2", "256Mi"))
			if err := m.UpdatePod(ctx, resized); err != nil {
				t.Fatal(err)
			}
			if l.v2 {
				checkFiles(t, mfs, l, []fileValue{
					{"cpu", "/kubepods/burstable/podb-1", "cpu.weight", "20"},
					{"cpu", "/kubepods/burstable/podb-1", "cpu.max", "200000 100000"},
					{"memory", "/kubepods/burstable/podb-1", "memory.max", "268435456"},
				})
			} else {
				checkFiles(t, mfs, l, []fileValue{
					{"cpu", "/kubepods/burstable/podb-1", "cpu.shares", "512"},
					{"cpu", "/kubepods/burstable/podb-1", "cpu.cfs_quota_us", "200000"},
					{"memory", "/kubepods/burstable/podb-1", "memory.limit_in_bytes", "268435456"},
				})
			}
		})
	}
}

func TestEnsurePodUpdatesTiersFirst(t *testing.T) {
	t.Parallel()
	l := layout{}
	b := podWith("b", rr(req("2", ""), nil))
	m, mfs := newTestManager(t, l, criconfig.Node{}, WithActivePods(func() []*corev1.Pod { return []*corev1.Pod{b} }))
	ctx := context.Background()
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(ctx, b); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, mfs, l, []fileValue{{"cpu", "/kubepods/burstable", "cpu.shares", "2048"}})
}

func TestRemovePod(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			var killed []int
			mfs := NewMemFS(l.v2, twoMi)
			m, err := NewManager(mfs.Tree(), criconfig.Node{}, WithNodeAllocatable(testAllocatable()),
				WithKill(func(pid int) error { killed = append(killed, pid); return mfs.Kill(pid) }))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			pod := podWith("r", rr(req("100m", ""), nil))
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.EnsurePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			// A container cgroup the runtime left, with a process, and a
			// process in the pod cgroup itself.
			podDir := l.dir("memory", "/kubepods/burstable/podr")
			if err := mfs.Mkdir(path.Join(podDir, "ctr")); err != nil {
				t.Fatal(err)
			}
			if err := mfs.AddProcess(path.Join(podDir, "ctr"), 42); err != nil {
				t.Fatal(err)
			}
			if err := mfs.AddProcess(podDir, 7); err != nil {
				t.Fatal(err)
			}
			if pids, err := m.Pids(mustPodName(t, m, pod)); err != nil || !slices.Equal(pids, []int{7, 42}) {
				t.Fatalf("Pids = %v, %v; want [7 42]", pids, err)
			}
			if err := m.RemovePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(killed, []int{7, 42}) {
				t.Errorf("killed %v, want [7 42]", killed)
			}
			for _, d := range mfs.Dirs() {
				if strings.Contains(d, "podr") {
					t.Errorf("%s left after RemovePod", d)
				}
			}
			if ok, err := m.Exists(m.QOS().Burstable); !ok || err != nil {
				t.Errorf("burstable tier gone after RemovePod: %v, %v", ok, err)
			}
			// Removing again is no error.
			if err := m.RemovePod(ctx, pod); err != nil {
				t.Errorf("second RemovePod: %v", err)
			}
		})
	}
}

func TestRemovePodKillFails(t *testing.T) {
	t.Parallel()
	mfs := NewMemFS(false, twoMi)
	boom := errors.New("operation not permitted")
	calls := 0
	m, err := NewManager(mfs.Tree(), criconfig.Node{}, WithNodeAllocatable(testAllocatable()),
		WithKill(func(int) error { calls++; return boom }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := podWith("k", rr(nil, nil))
	if err := m.EnsureQoS(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsurePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := mfs.AddProcess("pids/kubepods/besteffort/podk", 9); err != nil {
		t.Fatal(err)
	}
	err = m.RemovePod(ctx, pod)
	if !errors.Is(err, ErrKillFailed) || !errors.Is(err, boom) {
		t.Fatalf("RemovePod = %v, want ErrKillFailed wrapping the kill error", err)
	}
	if calls != 5 {
		t.Errorf("kill tried %d times, want 5 (kubelet's attempts)", calls)
	}
	if !mfs.Exists("pids/kubepods/besteffort/podk") {
		t.Error("pod cgroup removed although its process lives")
	}
}

func TestRemoveOrphans(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			m, mfs := newTestManager(t, l, criconfig.Node{})
			ctx := context.Background()
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			pods := []*corev1.Pod{
				podWith("keep", rr(req("1", "1Gi"), req("1", "1Gi"))),
				podWith("gone-g", rr(req("1", "1Gi"), req("1", "1Gi"))),
				podWith("gone-b", rr(req("1", ""), nil)),
				podWith("gone-e", rr(nil, nil)),
				podWith("vol", rr(req("1", ""), nil)),
			}
			for _, p := range pods {
				if err := m.EnsurePod(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			// Not a pod cgroup: left alone.
			if err := mfs.Mkdir(l.dir("cpu", "/kubepods/burstable/other")); err != nil {
				t.Fatal(err)
			}
			found, err := m.PodCgroups(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 5 || found["gone-b"].Cgroupfs() != "/kubepods/burstable/podgone-b" || found["keep"].Cgroupfs() != "/kubepods/podkeep" {
				t.Fatalf("PodCgroups = %v", found)
			}
			removed, err := m.RemoveOrphans(ctx,
				func(uid types.UID) bool { return uid == "keep" },
				func(uid types.UID) bool { return uid == "vol" })
			if err != nil {
				t.Fatal(err)
			}
			if want := []types.UID{"gone-b", "gone-e", "gone-g"}; !slices.Equal(removed, want) {
				t.Errorf("RemoveOrphans removed %v, want %v", removed, want)
			}
			found, _ = m.PodCgroups(ctx)
			if len(found) != 2 || found["keep"] == nil || found["vol"] == nil {
				t.Errorf("left %v, want keep and vol", found)
			}
			// The pod whose volumes remain is at the least CPU shares.
			if l.v2 {
				checkFiles(t, mfs, l, []fileValue{{"cpu", "/kubepods/burstable/podvol", "cpu.weight", "1"}})
			} else {
				checkFiles(t, mfs, l, []fileValue{{"cpu", "/kubepods/burstable/podvol", "cpu.shares", "2"}})
			}
			if !mfs.Exists(l.dir("cpu", "/kubepods/burstable/other")) {
				t.Error("a cgroup that is not a pod's was removed")
			}
		})
	}
}

func TestNewManagerRefuses(t *testing.T) {
	t.Parallel()
	mfs := NewMemFS(false)
	if _, err := NewManager(mfs.Tree(), criconfig.Node{CgroupDriver: "systemd"}); !errors.Is(err, ErrUnsupportedDriver) {
		t.Errorf("systemd driver without WithSystemd: %v, want ErrUnsupportedDriver", err)
	}
	tree := mfs.Tree()
	tree.Hierarchies = slices.DeleteFunc(tree.Hierarchies, func(h string) bool { return h == "pids" })
	if _, err := NewManager(tree, criconfig.Node{}); !errors.Is(err, ErrMissingController) {
		t.Errorf("no pids hierarchy: %v, want ErrMissingController", err)
	}
	v2 := NewMemFS(true)
	if err := v2.WriteFile("cgroup.controllers", "cpu memory"); err != nil {
		t.Fatal(err)
	}
	if _, err := NewManager(v2.Tree(), criconfig.Node{}); !errors.Is(err, ErrMissingController) {
		t.Errorf("v2 without pids: %v, want ErrMissingController", err)
	}
}

func TestMissingCgroupRoot(t *testing.T) {
	t.Parallel()
	m, _ := newTestManager(t, layout{}, criconfig.Node{CgroupRoot: "/custom"})
	if err := m.EnsureQoS(context.Background()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("EnsureQoS under a missing cgroup root = %v, want fs.ErrNotExist", err)
	}
}

func TestCgroupRoot(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			m, mfs := newTestManager(t, l, criconfig.Node{CgroupRoot: "/custom"})
			for _, h := range mustDirs(t, m, Name{"custom"}) {
				if err := mfs.Mkdir(h); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			pod := podWith("c", rr(nil, nil))
			if err := m.EnsurePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			want := criconfig.CgroupParent(pod, criconfig.Node{CgroupRoot: "/custom"})
			if !mfs.Exists(l.dir("memory", want)) {
				t.Errorf("pod cgroup %s (criconfig's parent) not made; have %v", want, mfs.Dirs())
			}
		})
	}
}

func TestCgroupsPerQOSOff(t *testing.T) {
	t.Parallel()
	off := false
	m, mfs := newTestManager(t, layout{}, criconfig.Node{CgroupsPerQOS: &off})
	ctx := context.Background()
	pod := podWith("x", rr(nil, nil))
	for _, err := range []error{m.EnsureQoS(ctx), m.EnsurePod(ctx, pod), m.UpdatePod(ctx, pod), m.RemovePod(ctx, pod), m.UpdateQoS(ctx, nil)} {
		if err != nil {
			t.Error(err)
		}
	}
	if d := mfs.Dirs(); len(d) != len(DefaultV1Hierarchies) {
		t.Errorf("cgroupsPerQOS false made cgroups: %v", d)
	}
}

func TestMemFSKernelRules(t *testing.T) {
	t.Parallel()
	m := NewMemFS(true)
	if err := m.Mkdir("a/b"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mkdir without parent: %v", err)
	}
	if err := m.Mkdir("a"); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile("a/cpu.weight", "5"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cpu.weight without the cpu controller enabled: %v", err)
	}
	if err := m.WriteFile("cgroup.subtree_control", "+rdma"); err == nil {
		t.Error("enabling a controller the cgroup lacks succeeded")
	}
	if err := m.Mkdir("a/b"); err != nil {
		t.Fatal(err)
	}
	if err := m.Rmdir("a"); !errors.Is(err, ErrBusy) {
		t.Errorf("rmdir with a child: %v, want ErrBusy", err)
	}
}
