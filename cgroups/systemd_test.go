package cgroups

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
)

// unitCall is one call a fakeSystemd received.
type unitCall struct {
	Method, Unit string
	Props        []Property
}

func (c unitCall) String() string { return fmt.Sprintf("%s(%s, %v)", c.Method, c.Unit, c.Props) }

// fakeSystemd is systemd as far as the Manager can tell: a started slice
// gets its cgroup in the MemFS (on cgroup v1, in the name=systemd
// hierarchy and those of the controllers it accounts), a stopped one
// loses it when empty; every call is recorded.
type fakeSystemd struct {
	fs      *MemFS
	v2      bool
	version int

	mu    sync.Mutex
	units map[string]bool
	calls []unitCall
	// failSet fails SetUnitProperties of that unit.
	failSet string
}

// systemdV1Hierarchies are those a slice with accounting is made in.
var systemdV1Hierarchies = []string{"systemd", "blkio", "cpu", "cpuacct", "memory", "pids"}

func newFakeSystemd(fs *MemFS, v2 bool) *fakeSystemd {
	return &fakeSystemd{fs: fs, v2: v2, version: 252, units: map[string]bool{}}
}

// expandSlice is systemd's: "a-b.slice" is "/a.slice/a-b.slice".
func expandSlice(unit string) []string {
	var out []string
	prefix := ""
	for _, c := range strings.Split(strings.TrimSuffix(unit, ".slice"), "-") {
		out = append(out, prefix+c+".slice")
		prefix += c + "-"
	}
	return out
}

func (f *fakeSystemd) hierarchies() []string {
	if f.v2 {
		return []string{""}
	}
	return systemdV1Hierarchies
}

func (f *fakeSystemd) StartTransientUnit(ctx context.Context, name string, props []Property) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, unitCall{"StartTransientUnit", name, props})
	if f.units[name] {
		return fmt.Errorf("%w: %s", ErrUnitExists, name)
	}
	f.units[name] = true
	for _, h := range f.hierarchies() {
		dir := h
		for _, s := range expandSlice(name) {
			dir = path.Join(dir, s)
			if err := f.fs.Mkdir(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *fakeSystemd) SetUnitProperties(ctx context.Context, name string, props []Property) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, unitCall{"SetUnitProperties", name, props})
	if name == f.failSet {
		return errors.New("org.freedesktop.DBus.Error.AccessDenied")
	}
	if !f.units[name] {
		return fmt.Errorf("unit %s not loaded", name)
	}
	return nil
}

func (f *fakeSystemd) StopUnit(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, unitCall{"StopUnit", name, nil})
	delete(f.units, name)
	for _, h := range f.hierarchies() {
		_ = f.fs.Rmdir(path.Join(append([]string{h}, expandSlice(name)...)...))
	}
	return nil
}

func (f *fakeSystemd) Version(ctx context.Context) (int, error) { return f.version, nil }

func (f *fakeSystemd) take() []unitCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// of returns the calls of unit.
func callsOf(calls []unitCall, unit string) []unitCall {
	var out []unitCall
	for _, c := range calls {
		if c.Unit == unit {
			out = append(out, c)
		}
	}
	return out
}

func startProps(unit, parent, io string) []Property {
	return []Property{
		{"Description", "libcontainer container " + unit},
		{"Wants", []string{parent}},
		{"MemoryAccounting", true},
		{"CPUAccounting", true},
		{io, true},
		{"TasksAccounting", true},
		{"DefaultDependencies", false},
	}
}

const inf = SystemdInfinity

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n            Name
		unit, parent string
	}{
		{Name{"kubepods"}, "kubepods.slice", "-.slice"},
		{Name{"kubepods", "burstable"}, "kubepods-burstable.slice", "kubepods.slice"},
		{Name{"kubepods", "burstable", "pod1a-2b"}, "kubepods-burstable-pod1a_2b.slice", "kubepods-burstable.slice"},
		{Name{"kubepods", "pod1a-2b"}, "kubepods-pod1a_2b.slice", "kubepods.slice"},
		{Name{"custom", "kubepods"}, "custom-kubepods.slice", "custom.slice"},
	} {
		unit, parent, err := SystemdUnit(tc.n)
		if err != nil || unit != tc.unit || parent != tc.parent {
			t.Errorf("SystemdUnit(%q) = %q, %q, %v; want %q, %q", []string(tc.n), unit, parent, err, tc.unit, tc.parent)
		}
	}
	for _, n := range []Name{{}, {"kubepods", ""}} {
		if _, _, err := SystemdUnit(n); !errors.Is(err, ErrInvalidName) {
			t.Errorf("SystemdUnit(%q): %v, want ErrInvalidName", []string(n), err)
		}
	}
}

// TestSystemdResourceProperties: what libcontainer's Set sends for a
// kubelet ResourceConfig, and the quota it then writes.
func TestSystemdResourceProperties(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		rc        ResourceConfig
		v2        bool
		version   int
		want      []Property
		wantQuota *int64
	}{
		{name: "v1 guaranteed pod", rc: ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(128 * mi), PidsLimit: i64(1024)},
			version: 252,
			want: []Property{{"MemoryLimit", uint64(128 * mi)}, {"CPUShares", uint64(1024)}, {"CPUQuotaPeriodUSec", uint64(100000)},
				{"CPUQuotaPerSecUSec", uint64(1000000)}, {"TasksMax", uint64(1024)}}},
		{name: "v2 guaranteed pod", rc: ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(128 * mi), PidsLimit: i64(1024)},
			v2: true, version: 252,
			want: []Property{{"MemoryMax", uint64(128 * mi)}, {"CPUWeight", uint64(39)}, {"CPUQuotaPeriodUSec", uint64(100000)},
				{"CPUQuotaPerSecUSec", uint64(1000000)}, {"TasksMax", uint64(1024)}}},
		{name: "v1 burstable pod, quota rounded up to 10ms per second", rc: ResourceConfig{CPUShares: u64(102), CPUQuota: i64(123400), CPUPeriod: u64(100000)},
			version:   252,
			want:      []Property{{"CPUShares", uint64(102)}, {"CPUQuotaPeriodUSec", uint64(100000)}, {"CPUQuotaPerSecUSec", uint64(1240000)}},
			wantQuota: i64(124000)},
		{name: "v2 burstable pod, 15m CPU limit", rc: ResourceConfig{CPUShares: u64(10), CPUQuota: i64(1500), CPUPeriod: u64(100000), Memory: i64(64 * mi)},
			v2: true, version: 252,
			want: []Property{{"MemoryMax", uint64(64 * mi)}, {"CPUWeight", uint64(1)}, {"CPUQuotaPeriodUSec", uint64(100000)},
				{"CPUQuotaPerSecUSec", uint64(20000)}},
			wantQuota: i64(2000)},
		{name: "v1 besteffort pod", rc: ResourceConfig{CPUShares: u64(2)}, version: 252,
			want: []Property{{"CPUShares", uint64(2)}}},
		{name: "v2 besteffort pod", rc: ResourceConfig{CPUShares: u64(2)}, v2: true, version: 252,
			want: []Property{{"CPUWeight", uint64(1)}}},
		{name: "quota disabled: -1", rc: ResourceConfig{CPUShares: u64(512), CPUQuota: i64(-1), CPUPeriod: u64(100000)}, version: 252,
			want: []Property{{"CPUShares", uint64(512)}, {"CPUQuotaPeriodUSec", uint64(100000)}, {"CPUQuotaPerSecUSec", inf}}},
		{name: "systemd 241: no CPUQuotaPeriodUSec", rc: ResourceConfig{CPUQuota: i64(50000), CPUPeriod: u64(100000)}, version: 241,
			want: []Property{{"CPUQuotaPerSecUSec", uint64(500000)}}},
		{name: "custom period 50ms", rc: ResourceConfig{CPUQuota: i64(12345), CPUPeriod: u64(50000)}, version: 252,
			want:      []Property{{"CPUQuotaPeriodUSec", uint64(50000)}, {"CPUQuotaPerSecUSec", uint64(250000)}},
			wantQuota: i64(12500)},
		{name: "pids 0 is 1, -1 infinity", rc: ResourceConfig{PidsLimit: i64(0)}, version: 252, want: []Property{{"TasksMax", uint64(1)}}},
		{name: "pids -1", rc: ResourceConfig{PidsLimit: i64(-1)}, v2: true, version: 252, want: []Property{{"TasksMax", inf}}},
		{name: "v1 kubepods", rc: ResourceConfig{CPUShares: u64(3584), Memory: i64(6979321856), PidsLimit: i64(32000), HugePageLimit: map[int64]int64{twoMi: 64 * mi}},
			version: 252,
			want:    []Property{{"MemoryLimit", uint64(6979321856)}, {"CPUShares", uint64(3584)}, {"TasksMax", uint64(32000)}}},
		{name: "v2 unlimited memory: swap unlimited too", rc: ResourceConfig{Memory: i64(-1)}, v2: true, version: 252,
			want: []Property{{"MemoryMax", inf}, {"MemorySwapMax", inf}}},
		{name: "v2 unified memory files, sorted", rc: ResourceConfig{Unified: map[string]string{"memory.min": "0", "memory.low": "0", "memory.high": "104857600", "memory.oom.group": "1"}},
			v2: true, version: 252,
			want: []Property{{"MemoryHigh", uint64(104857600)}, {"MemoryLow", uint64(0)}, {"MemoryMin", uint64(0)}}},
		{name: "v1 ignores unified", rc: ResourceConfig{Unified: map[string]string{"memory.low": "0"}}, version: 252},
		{name: "huge pages only: nothing to send", rc: ResourceConfig{HugePageLimit: map[int64]int64{twoMi: 0}}, v2: true, version: 252},
	} {
		got, out, err := SystemdResourceProperties(tc.rc, tc.v2, tc.version)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
		wantQuota := tc.rc.CPUQuota
		if tc.wantQuota != nil {
			wantQuota = tc.wantQuota
		}
		if !reflect.DeepEqual(out.CPUQuota, wantQuota) {
			t.Errorf("%s: quota written %v, want %v", tc.name, deref(out.CPUQuota), deref(wantQuota))
		}
		if tc.rc.CPUQuota != nil && tc.wantQuota != nil && *tc.rc.CPUQuota == *tc.wantQuota {
			t.Errorf("%s: test case rounds nothing", tc.name)
		}
	}
	if _, _, err := SystemdResourceProperties(ResourceConfig{Unified: map[string]string{"memory/max": "1"}}, true, 252); err == nil {
		t.Error("unified key with a slash accepted")
	}
}

func TestParseSystemdVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{`"v245.4-1.fc32"`: 245, "245": 245, "v245-1.fc32": 245, `"252.31-1~deb12u1"`: 252} {
		if got, err := parseSystemdVersion(in); err != nil || got != want {
			t.Errorf("parseSystemdVersion(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseSystemdVersion(`"x"`); err == nil {
		t.Error("no version parsed from x")
	}
}

// newSystemdManager is a Manager under the systemd driver over a MemFS
// and a fakeSystemd, with a pod PIDs limit.
func newSystemdManager(t *testing.T, l layout, node criconfig.Node, opts ...Option) (*Manager, *MemFS, *fakeSystemd) {
	t.Helper()
	mfs := NewMemFS(l.v2, twoMi)
	sd := newFakeSystemd(mfs, l.v2)
	node.CgroupDriver = DriverSystemd
	node.HugePageSizes = []int64{twoMi}
	opts = append([]Option{WithKill(mfs.Kill), WithNodeAllocatable(testAllocatable()), WithPodPidsLimit(1024), WithSystemd(sd)}, opts...)
	m, err := NewManager(mfs.Tree(), node, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m, mfs, sd
}

// TestSystemdDriverCalls: the units kubelet's libcontainer manager
// starts and the properties it sets for the tiers and for a Guaranteed,
// a Burstable and a BestEffort pod, on cgroup v1 and v2.
func TestSystemdDriverCalls(t *testing.T) {
	t.Parallel()
	guaranteed := podWith("g-1", rr(req("1", "128Mi"), req("1", "128Mi")))
	burstable := podWith("b-2", rr(req("100m", "64Mi"), req("1234m", "128Mi")))
	bestEffort := podWith("e-3", rr(nil, nil))
	type want struct {
		unit, parent string
		set          [][]Property // SetUnitProperties, in order
	}
	for _, tc := range []struct {
		l     layout
		io    string
		tiers []want
		pods  []want
	}{
		{l: layout{v2: false}, io: "BlockIOAccounting",
			tiers: []want{
				{"kubepods.slice", "-.slice", [][]Property{
					{{"MemoryLimit", uint64(6979321856)}, {"CPUShares", uint64(3584)}, {"TasksMax", uint64(32000)}},
					{{"MemoryLimit", uint64(6979321856)}, {"CPUShares", uint64(3584)}, {"TasksMax", uint64(32000)}}}},
				{"kubepods-burstable.slice", "kubepods.slice", [][]Property{nil}},
				{"kubepods-besteffort.slice", "kubepods.slice", [][]Property{{{"CPUShares", uint64(2)}}}},
			},
			pods: []want{
				{"kubepods-podg_1.slice", "kubepods.slice", [][]Property{{{"MemoryLimit", uint64(128 * mi)}, {"CPUShares", uint64(1024)},
					{"CPUQuotaPeriodUSec", uint64(100000)}, {"CPUQuotaPerSecUSec", uint64(1000000)}, {"TasksMax", uint64(1024)}}}},
				{"kubepods-burstable-podb_2.slice", "kubepods-burstable.slice", [][]Property{{{"MemoryLimit", uint64(128 * mi)}, {"CPUShares", uint64(102)},
					{"CPUQuotaPeriodUSec", uint64(100000)}, {"CPUQuotaPerSecUSec", uint64(1240000)}, {"TasksMax", uint64(1024)}}}},
				{"kubepods-besteffort-pode_3.slice", "kubepods-besteffort.slice", [][]Property{{{"CPUShares", uint64(2)}, {"TasksMax", uint64(1024)}}}},
			}},
		{l: layout{v2: true}, io: "IOAccounting",
			tiers: []want{
				{"kubepods.slice", "-.slice", [][]Property{
					{{"MemoryMax", uint64(6979321856)}, {"CPUWeight", uint64(137)}, {"TasksMax", uint64(32000)}},
					{{"MemoryMax", uint64(6979321856)}, {"CPUWeight", uint64(137)}, {"TasksMax", uint64(32000)}},
					{{"MemoryLow", uint64(0)}, {"MemoryMin", uint64(0)}}}},
				{"kubepods-burstable.slice", "kubepods.slice", [][]Property{{{"MemoryLow", uint64(0)}}}},
				{"kubepods-besteffort.slice", "kubepods.slice", [][]Property{{{"CPUWeight", uint64(1)}}}},
			},
			pods: []want{
				{"kubepods-podg_1.slice", "kubepods.slice", [][]Property{{{"MemoryMax", uint64(128 * mi)}, {"CPUWeight", uint64(39)},
					{"CPUQuotaPeriodUSec", uint64(100000)}, {"CPUQuotaPerSecUSec", uint64(1000000)}, {"TasksMax", uint64(1024)}}}},
				{"kubepods-burstable-podb_2.slice", "kubepods-burstable.slice", [][]Property{{{"MemoryMax", uint64(128 * mi)}, {"CPUWeight", uint64(4)},
					{"CPUQuotaPeriodUSec", uint64(100000)}, {"CPUQuotaPerSecUSec", uint64(1240000)}, {"TasksMax", uint64(1024)}}}},
				{"kubepods-besteffort-pode_3.slice", "kubepods-besteffort.slice", [][]Property{{{"CPUWeight", uint64(1)}, {"TasksMax", uint64(1024)}}}},
			}},
	} {
		t.Run(tc.l.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			m, _, sd := newSystemdManager(t, tc.l, criconfig.Node{})
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			check := func(calls []unitCall, w want) {
				t.Helper()
				got := callsOf(calls, w.unit)
				exp := []unitCall{{"StartTransientUnit", w.unit, startProps(w.unit, w.parent, tc.io)}}
				for _, p := range w.set {
					exp = append(exp, unitCall{"SetUnitProperties", w.unit, p})
				}
				if !reflect.DeepEqual(got, exp) {
					t.Errorf("calls of %s:\n got %v\nwant %v", w.unit, got, exp)
				}
			}
			calls := sd.take()
			for _, w := range tc.tiers {
				check(calls, w)
			}
			for i, pod := range []*corev1.Pod{guaranteed, burstable, bestEffort} {
				if err := m.EnsurePod(ctx, pod); err != nil {
					t.Fatal(err)
				}
				check(sd.take(), tc.pods[i])
			}
			// Made once: a pod's cgroup that exists is left alone, the
			// tiers are updated (SetUnitProperties only).
			if err := m.EnsurePod(ctx, guaranteed); err != nil {
				t.Fatal(err)
			}
			if err := m.EnsureQoS(ctx); err != nil {
				t.Fatal(err)
			}
			for _, c := range sd.take() {
				if c.Method != "SetUnitProperties" || strings.Contains(c.Unit, "-pod") {
					t.Errorf("again: %v", c)
				}
			}
		})
	}
}

// TestSystemdDriverFiles: under the systemd driver the cgroup files hold
// what they hold under cgroupfs, in the systemd paths, but for the CPU
// quota libcontainer rounds up; the pod cgroups are found, resized and
// removed with their units stopped.
func TestSystemdDriverFiles(t *testing.T) {
	t.Parallel()
	guaranteed := podWith("g-1", rr(req("1", "128Mi"), req("1", "128Mi")))
	burstable := podWith("b-2", rr(req("100m", "64Mi"), req("1234m", "128Mi")))
	bestEffort := podWith("e-3", rr(nil, nil))
	for _, l := range layouts {
		t.Run(l.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			sdm, sfs, sd := newSystemdManager(t, l, criconfig.Node{})
			fsm, ffs := newTestManager(t, l, criconfig.Node{}, WithPodPidsLimit(1024))
			for _, m := range []*Manager{sdm, fsm} {
				if err := m.EnsureQoS(ctx); err != nil {
					t.Fatal(err)
				}
				for _, p := range []*corev1.Pod{guaranteed, burstable, bestEffort} {
					if err := m.EnsurePod(ctx, p); err != nil {
						t.Fatal(err)
					}
				}
			}
			quota, quotaFile := "124000", "cpu.cfs_quota_us"
			if l.v2 {
				quota, quotaFile = "124000 100000", "cpu.max"
			}
			compareTrees(t, l, ffs, sfs, map[string]string{
				path.Join(l.dir("cpu", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb_2.slice"), quotaFile): quota})

			// Found by UID with kubelet's internal names.
			found, err := sdm.PodCgroups(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := map[types.UID]Name{
				"g-1": {"kubepods", "podg-1"}, "b-2": {"kubepods", "burstable", "podb-2"}, "e-3": {"kubepods", "besteffort", "pode-3"},
			}
			if !reflect.DeepEqual(found, want) {
				t.Errorf("PodCgroups = %v, want %v", found, want)
			}
			if cfg, err := sdm.PodCgroupConfig(ctx, burstable); err != nil || deref(cfg.CPUQuota) != 124000 {
				t.Errorf("PodCgroupConfig = %+v, %v", cfg, err)
			}
			// A resize to the same values changes nothing, the rounded
			// quota included.
			sd.take()
			if err := sdm.UpdatePod(ctx, burstable); err != nil {
				t.Fatal(err)
			}
			// (On v2 the shares read back from cpu.weight differ, 102 ->
			// weight 4 -> 80, so UpdatePod writes, as under cgroupfs.)
			if c := sd.take(); len(c) != 0 && !l.v2 {
				t.Errorf("UpdatePod without a change: %v", c)
			}
			resized := burstable.DeepCopy()
			resized.Spec.Containers[0].Resources = rr(req("100m", "64Mi"), req("2", "256Mi"))
			if err := sdm.UpdatePod(ctx, resized); err != nil {
				t.Fatal(err)
			}
			mem := []Property{{"MemoryLimit", uint64(256 * mi)}}
			if l.v2 {
				mem = []Property{{"MemoryMax", uint64(256 * mi)}, {"CPUWeight", uint64(4)}}
			} else {
				mem = append(mem, Property{"CPUShares", uint64(102)})
			}
			wantSet := []unitCall{{"SetUnitProperties", "kubepods-burstable-podb_2.slice",
				append(mem, Property{"CPUQuotaPeriodUSec", uint64(100000)}, Property{"CPUQuotaPerSecUSec", uint64(2000000)})}}
			if got := sd.take(); !reflect.DeepEqual(got, wantSet) {
				t.Errorf("UpdatePod:\n got %v\nwant %v", got, wantSet)
			}

			// A process left in the Burstable pod's cgroup is killed,
			// its unit stopped, its directories removed.
			podDir := l.dir("cpu", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb_2.slice")
			if err := sfs.AddProcess(podDir, 4242); err != nil {
				t.Fatal(err)
			}
			if err := sdm.RemovePod(ctx, burstable); err != nil {
				t.Fatal(err)
			}
			if got, want := sd.take(), []unitCall{{"StopUnit", "kubepods-burstable-podb_2.slice", nil}}; !reflect.DeepEqual(got, want) {
				t.Errorf("RemovePod: %v, want %v", got, want)
			}
			for _, d := range sfs.Dirs() {
				if strings.Contains(d, "podb_2") {
					t.Errorf("%s left", d)
				}
			}
			// The orphan sweep: the BestEffort pod's kept, the
			// Guaranteed pod's removed with its unit.
			removed, err := sdm.RemoveOrphans(ctx, func(uid types.UID) bool { return uid == "e-3" }, nil)
			if err != nil || !reflect.DeepEqual(removed, []types.UID{"g-1"}) {
				t.Errorf("RemoveOrphans = %v, %v", removed, err)
			}
			if got, want := sd.take(), []unitCall{{"StopUnit", "kubepods-podg_1.slice", nil}}; !reflect.DeepEqual(got, want) {
				t.Errorf("RemoveOrphans: %v, want %v", got, want)
			}
			if sfs.Exists(l.dir("memory", "kubepods.slice/kubepods-podg_1.slice")) {
				t.Error("orphan's cgroup left")
			}
			if !sfs.Exists(l.dir("memory", "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode_3.slice")) {
				t.Error("kept pod's cgroup removed")
			}
		})
	}
}

// compareTrees checks that every cgroup of the cgroupfs tree a exists in
// the systemd tree b at its systemd path, with the same files and values
// (but for those in override, by b's path).
func compareTrees(t *testing.T, l layout, a, b *MemFS, override map[string]string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for dir, ad := range a.dirs {
		h, cg := "", dir
		if !l.v2 {
			h, cg, _ = strings.Cut(dir, "/")
		}
		sp, err := ParseCgroupfs(cg).Systemd()
		if err != nil {
			t.Fatal(err)
		}
		bdir := strings.TrimPrefix(path.Join(h, sp), "/")
		bd, ok := b.dirs[bdir]
		if !ok {
			t.Errorf("%s: no %s under systemd", dir, bdir)
			continue
		}
		for f, v := range ad.files {
			if o, ok := override[path.Join(bdir, f)]; ok {
				v = o
				delete(override, path.Join(bdir, f))
			}
			if f == "cgroup.subtree_control" {
				// Order of enabling differs (systemd made the cgroup).
				v = strings.Join(slices.Sorted(slices.Values(strings.Fields(v))), " ")
				bv := strings.Join(slices.Sorted(slices.Values(strings.Fields(bd.files[f]))), " ")
				if v != bv {
					t.Errorf("%s/%s = %q, want %q", bdir, f, bv, v)
				}
				continue
			}
			if bd.files[f] != v {
				t.Errorf("%s/%s = %q, want %q (cgroupfs %s)", bdir, f, bd.files[f], v, dir)
			}
			n++
		}
	}
	if len(a.dirs) != len(b.dirs) {
		t.Errorf("%d cgroups under cgroupfs, %d under systemd", len(a.dirs), len(b.dirs))
	}
	for p := range override {
		t.Errorf("override %s not met", p)
	}
	if n < 50 {
		t.Errorf("only %d files compared", n)
	}
}

func TestSystemdDriverRefusedWithout(t *testing.T) {
	t.Parallel()
	mfs := NewMemFS(true)
	_, err := NewManager(mfs.Tree(), criconfig.Node{CgroupDriver: DriverSystemd})
	if !errors.Is(err, ErrUnsupportedDriver) || !strings.Contains(err.Error(), "WithSystemd") {
		t.Errorf("systemd driver without a connection: %v", err)
	}
	if _, err := NewManager(mfs.Tree(), criconfig.Node{CgroupDriver: "other"}, WithSystemd(newFakeSystemd(mfs, true))); !errors.Is(err, ErrUnsupportedDriver) {
		t.Errorf("driver other: %v", err)
	}
	if _, err := NewManager(mfs.Tree(), criconfig.Node{CgroupDriver: DriverSystemd}, WithSystemd(newFakeSystemd(mfs, true))); err != nil {
		t.Errorf("with a connection: %v", err)
	}
}

func TestSystemdSetFails(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		m, mfs, sd := newSystemdManager(t, l, criconfig.Node{})
		sd.failSet = "kubepods-besteffort.slice"
		err := m.EnsureQoS(context.Background())
		if err == nil || !strings.Contains(err.Error(), "kubepods-besteffort.slice") {
			t.Errorf("%v: EnsureQoS = %v, want the unit's error", l, err)
		}
		// The files are not written when systemd refused (libcontainer's Set).
		if v, _ := mfs.ReadFile(l.dir("cpu", "kubepods.slice/kubepods-besteffort.slice/cpu.weight")); l.v2 && v != "100" {
			t.Errorf("cpu.weight = %q", v)
		}
	}
}
