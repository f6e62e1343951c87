package cgroups

import (
	"errors"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
)

// list builds a resource list from name/quantity pairs, skipping "".
func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
	return l
}

func req(cpu, mem string) corev1.ResourceList { return list("cpu", cpu, "memory", mem) }

func rr(requests, limits corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: requests, Limits: limits}
}

func podWith(uid string, rs ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{}
	p.UID = types.UID(uid)
	p.Name = "p-" + uid
	for i, r := range rs {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
	}
	return p
}

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

func TestResourceConfigForPod(t *testing.T) {
	t.Parallel()
	withInit := podWith("i", rr(req("100m", "100Mi"), req("200m", "200Mi")))
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: rr(req("1", "1Gi"), req("1", "1Gi"))}}
	withOverhead := podWith("o", rr(req("100m", "100Mi"), req("100m", "100Mi")))
	withOverhead.Spec.Overhead = req("50m", "10Mi")
	podLevel := podWith("pl", rr(req("100m", "100Mi"), nil))
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: req("500m", "300Mi"), Limits: req("1", "512Mi")}
	podLevelCPUOnly := podWith("plc", rr(nil, nil))
	podLevelCPUOnly.Spec.Resources = &corev1.ResourceRequirements{Limits: list("cpu", "2")}
	tiered := podWith("t", rr(req("100m", "100Mi"), req("100m", "100Mi")))
	tieredB := podWith("tb", rr(req("100m", "100Mi"), nil))

	tests := []struct {
		name string
		pod  *corev1.Pod
		opts PodOptions
		want ResourceConfig
	}{
		{"besteffort", podWith("1", rr(nil, nil)), PodOptions{}, ResourceConfig{CPUShares: u64(2)}},
		{"burstable no limits", podWith("2", rr(req("100m", "100Mi"), nil)), PodOptions{},
			ResourceConfig{CPUShares: u64(102)}},
		{"burstable with limits", podWith("3", rr(req("100m", "100Mi"), req("200m", "200Mi"))), PodOptions{},
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(20000), CPUPeriod: u64(100000), Memory: i64(200 * mi)}},
		{"burstable with limits, no CPU quota", podWith("4", rr(req("100m", "100Mi"), req("200m", "200Mi"))), PodOptions{DisableCPUQuota: true},
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(200 * mi)}},
		{"burstable partial limits", podWith("5", rr(req("100m", "100Mi"), req("200m", "200Mi")), rr(req("100m", "100Mi"), nil)), PodOptions{},
			ResourceConfig{CPUShares: u64(204)}},
		{"burstable with limits, 5ms period", podWith("6", rr(req("100m", "100Mi"), req("200m", "200Mi"))), PodOptions{CPUPeriod: 5000},
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(1000), CPUPeriod: u64(5000), Memory: i64(200 * mi)}},
		{"burstable, memory limits only", podWith("7", rr(req("100m", "100Mi"), list("memory", "200Mi"))), PodOptions{},
			ResourceConfig{CPUShares: u64(102), Memory: i64(200 * mi)}},
		{"guaranteed", podWith("8", rr(req("100m", "100Mi"), req("100m", "100Mi"))), PodOptions{},
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 * mi)}},
		{"guaranteed, no CPU quota", podWith("9", rr(req("100m", "100Mi"), req("100m", "100Mi"))), PodOptions{DisableCPUQuota: true},
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(100 * mi)}},
		{"guaranteed with huge pages",
			podWith("10", rr(list("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi"), list("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi"))), PodOptions{},
			ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(gi), HugePageLimit: map[int64]int64{2 * mi: 4 * mi}}},
		{"init container at its peak", withInit, PodOptions{},
			ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(gi)}},
		{"overhead added", withOverhead, PodOptions{},
			ResourceConfig{CPUShares: u64(153), CPUQuota: i64(15000), CPUPeriod: u64(100000), Memory: i64(110 * mi)}},
		{"pod-level resources", podLevel, PodOptions{},
			ResourceConfig{CPUShares: u64(512), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(512 * mi)}},
		{"pod-level CPU limit only", podLevelCPUOnly, PodOptions{},
			ResourceConfig{CPUShares: u64(2), CPUQuota: i64(200000), CPUPeriod: u64(100000)}},
		{"memory QoS tiered, guaranteed: memory.min", tiered, PodOptions{MemoryQoS: true, MemoryReservationPolicy: criconfig.MemoryReservationTiered},
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 * mi), Unified: map[string]string{"memory.min": "104857600"}}},
		{"memory QoS tiered, burstable: memory.low", tieredB, PodOptions{MemoryQoS: true, MemoryReservationPolicy: criconfig.MemoryReservationTiered},
			ResourceConfig{CPUShares: u64(102), Unified: map[string]string{"memory.low": "104857600"}}},
		{"memory QoS, policy none", tiered, PodOptions{MemoryQoS: true},
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(10000), CPUPeriod: u64(100000), Memory: i64(100 * mi)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ResourceConfigForPod(tc.pod, tc.opts)
			if len(got.HugePageLimit) == 0 {
				got.HugePageLimit = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ResourceConfigForPod (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHugePageLimits(t *testing.T) {
	t.Parallel()
	got := HugePageLimits(list("hugepages-2Mi", "4Mi", "hugepages-1Gi", "2Gi", "hugepages-2048Ki", "2Mi", "memory", "1Gi"))
	want := map[int64]int64{2 * mi: 6 * mi, gi: 2 * gi}
	if !maps.Equal(got, want) {
		t.Errorf("HugePageLimits = %v, want %v", got, want)
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                Name
		cgroupfs, systemd   string
		systemdErr          bool
		parsedFromSystemd   Name
		parsedFromCgroupfsN int
	}{
		{name: Name{}, cgroupfs: "/", systemd: "/", parsedFromSystemd: Name{""}},
		{name: Name{"Burstable"}, cgroupfs: "/Burstable", systemd: "/Burstable.slice", parsedFromSystemd: Name{"Burstable"}},
		{name: Name{"Burstable", "pod-123"}, cgroupfs: "/Burstable/pod-123", systemd: "/Burstable.slice/Burstable-pod_123.slice", parsedFromSystemd: Name{"Burstable", "pod-123"}},
		{name: Name{"BestEffort", "pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d"}, cgroupfs: "/BestEffort/pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d",
			systemd: "/BestEffort.slice/BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice", parsedFromSystemd: Name{"BestEffort", "pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d"}},
		{name: Name{"test", "a", "b", "Burstable"}, cgroupfs: "/test/a/b/Burstable", systemd: "/test.slice/test-a.slice/test-a-b.slice/test-a-b-Burstable.slice", parsedFromSystemd: Name{"test", "a", "b", "Burstable"}},
		{name: Name{"kubepods", ""}, cgroupfs: "/kubepods", systemdErr: true},
	} {
		if got := tc.name.Cgroupfs(); got != tc.cgroupfs {
			t.Errorf("%q.Cgroupfs() = %q, want %q", []string(tc.name), got, tc.cgroupfs)
		}
		got, err := tc.name.Systemd()
		if tc.systemdErr {
			if !errors.Is(err, ErrInvalidName) {
				t.Errorf("%q.Systemd() = %q, %v; want ErrInvalidName", []string(tc.name), got, err)
			}
			continue
		}
		if err != nil || got != tc.systemd {
			t.Errorf("%q.Systemd() = %q, %v; want %q", []string(tc.name), got, err, tc.systemd)
		}
		if p := ParseSystemd(got); !slices_Equal(p, tc.parsedFromSystemd) && len(tc.name) > 0 {
			t.Errorf("ParseSystemd(%q) = %q, want %q", got, []string(p), []string(tc.parsedFromSystemd))
		}
		if p := ParseCgroupfs(tc.cgroupfs); !slices_Equal(p, tc.name) {
			t.Errorf("ParseCgroupfs(%q) = %q, want %q", tc.cgroupfs, []string(p), []string(tc.name))
		}
	}
	if _, err := NewName(Name{"kubepods"}, "a_b"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("NewName with _ = %v, want ErrInvalidName", err)
	}
	if _, err := NewName(Name{"kubepods"}, "a/b"); !errors.Is(err, ErrInvalidName) {
		t.Errorf("NewName with / = %v, want ErrInvalidName", err)
	}
	if n, err := NewName(Name{"kubepods"}, "burstable"); err != nil || n.Cgroupfs() != "/kubepods/burstable" {
		t.Errorf("NewName = %q, %v", []string(n), err)
	}
}

func slices_Equal(a, b Name) bool {
	return len(a) == len(b) && (len(a) == 0 || cmp.Equal([]string(a), []string(b)))
}

// TestPodNameIsCgroupParent: the pod's cgroup is the parent criconfig
// gives its sandbox, under both drivers and with a cgroup root.
func TestPodNameIsCgroupParent(t *testing.T) {
	t.Parallel()
	pods := []*corev1.Pod{
		podWith("1a2b-3c4d", rr(req("1", "1Gi"), req("1", "1Gi"))),
		podWith("5e6f-7a8b", rr(req("100m", ""), nil)),
		podWith("9c0d-1e2f", rr(nil, nil)),
	}
	for _, driver := range []string{"", DriverCgroupfs, DriverSystemd} {
		for _, root := range []string{"", "/", "/custom", "/a/b-c"} {
			node := criconfig.Node{CgroupDriver: driver, CgroupRoot: root}
			for _, pod := range pods {
				got, err := mustName(t, Root(root, true), pod).Path(driver)
				if err != nil {
					t.Fatal(err)
				}
				if want := criconfig.CgroupParent(pod, node); got != want {
					t.Errorf("driver %q root %q pod %s: PodName = %q, criconfig.CgroupParent = %q", driver, root, pod.UID, got, want)
				}
			}
		}
	}
	if got := mustName(t, Root("", true), pods[0]).Cgroupfs(); got != "/kubepods/pod1a2b-3c4d" {
		t.Errorf("guaranteed pod cgroup = %q", got)
	}
	if got, _ := mustName(t, Root("", true), pods[1]).Systemd(); got != "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5e6f_7a8b.slice" {
		t.Errorf("burstable pod systemd cgroup = %q", got)
	}
}

func TestPodUID(t *testing.T) {
	t.Parallel()
	root := Root("", true)
	for _, tc := range []struct {
		in   string
		uid  types.UID
		isOK bool
	}{
		{"/kubepods/pod1234", "1234", true},
		{"/kubepods/burstable/pod1234", "1234", true},
		{"/kubepods/besteffort/pod1234", "1234", true},
		{"/kubepods/burstable", "", false},
		{"/kubepods/burstable/pod1234/container", "", false},
		{"/kubepods/other/pod1234", "", false},
		{"/kubepods/burstable/1234", "", false},
		{"/kubepods/burstable/podpod", "", false},
		{"/system/pod1234", "", false},
	} {
		uid, ok := PodUID(root, ParseCgroupfs(tc.in))
		if uid != tc.uid || ok != tc.isOK {
			t.Errorf("PodUID(%q) = %q, %v; want %q, %v", tc.in, uid, ok, tc.uid, tc.isOK)
		}
	}
}

func TestCPUWeight(t *testing.T) {
	t.Parallel()
	// 1 + (shares-2)*9999/262142, rounded down, over [2, 262144].
	for shares, weight := range map[uint64]uint64{0: 1, 2: 1, 28: 1, 29: 2, 1024: 39, 262143: 9999, 262144: 10000, 1 << 20: 10000} {
		if got := CPUWeight(shares); got != weight {
			t.Errorf("CPUWeight(%d) = %d, want %d", shares, got, weight)
		}
	}
}

func TestEnforcedAllocatable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kube, system, capacity, want corev1.ResourceList
	}{
		{req("100m", "100Mi"), req("50m", "50Mi"), req("10", "10Gi"), req("9850m", "10090Mi")},
		{corev1.ResourceList{}, corev1.ResourceList{}, req("10", "10Gi"), req("10", "10Gi")},
		{req("", "100Mi"), req("50m", "50Mi"), req("10", "10Gi"), req("9950m", "10090Mi")},
		{req("50m", "100Mi"), req("", "50Mi"), req("10", "10Gi"), req("9950m", "10090Mi")},
		{req("", "100Mi"), req("", "50Mi"), req("10", ""), req("10", "")},
		{req("20", ""), nil, list("cpu", "10", "pid", "4096"), list("cpu", "0", "pid", "4096")},
	} {
		got := EnforcedAllocatable(tc.capacity, tc.system, tc.kube)
		if len(got) != len(tc.want) {
			t.Errorf("EnforcedAllocatable(%v - %v - %v) = %v, want %v", tc.capacity, tc.system, tc.kube, got, tc.want)
		}
		for k, v := range tc.want {
			if g := got[k]; g.MilliValue() != v.MilliValue() {
				t.Errorf("EnforcedAllocatable(%v - %v - %v)[%s] = %v, want %v", tc.capacity, tc.system, tc.kube, k, g.String(), v.String())
			}
		}
	}
}

func TestReservation(t *testing.T) {
	t.Parallel()
	hundred := resource.MustParse("100Mi")
	for _, tc := range []struct {
		name              string
		kube, system, cap corev1.ResourceList
		hard              []EvictionThreshold
		want              corev1.ResourceList
	}{
		{"reserved only", req("100m", "100Mi"), req("50m", "50Mi"), req("10", "10Gi"), nil, req("150m", "150Mi")},
		{"memory quantity", req("100m", "100Mi"), req("50m", "50Mi"), req("10", "10Gi"),
			[]EvictionThreshold{{Signal: "memory.available", Quantity: &hundred}}, req("150m", "250Mi")},
		{"memory percentage", req("100m", "100Mi"), req("50m", "50Mi"), req("10", "10Gi"),
			[]EvictionThreshold{{Signal: "memory.available", Percentage: 0.05}}, req("150m", "694157320")},
		{"kubelet defaults", nil, nil, list("cpu", "2", "memory", "1Gi", "ephemeral-storage", "100Gi"), DefaultHardEviction(),
			list("memory", "100Mi", "ephemeral-storage", "10737418400")},
		{"other signals reserve nothing", nil, nil, req("1", "1Gi"),
			[]EvictionThreshold{{Signal: "pid.available", Percentage: 0.5}}, corev1.ResourceList{}},
	} {
		got := Reservation(tc.cap, tc.system, tc.kube, tc.hard)
		if len(got) != len(tc.want) {
			t.Errorf("%s: Reservation = %v, want %v", tc.name, got, tc.want)
		}
		for k, v := range tc.want {
			if g := got[k]; g.MilliValue() != v.MilliValue() {
				t.Errorf("%s: Reservation[%s] = %v, want %v", tc.name, k, g.String(), v.String())
			}
		}
	}
}

func TestMemoryHigh(t *testing.T) {
	t.Parallel()
	pl := func(containerLimit string, podReq, podLim corev1.ResourceList) *corev1.Pod {
		p := podWith("m", rr(nil, list("memory", containerLimit)))
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: podReq, Limits: podLim}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no pod-level resources", podWith("x", rr(req("", "100Mi"), req("", "200Mi"))), ""},
		{"request to limit at 0.9", pl("", req("", "100Mi"), req("", "200Mi")), "199229440"},
		{"request equals limit", pl("", req("", "200Mi"), req("", "200Mi")), ""},
		{"no limit declared", pl("", req("1", ""), nil), ""},
		{"container limits declared", pl("300Mi", req("", "100Mi"), nil), "293601280"},
	} {
		if got := MemoryHigh(tc.pod, 0.9, 4096); got != tc.want {
			t.Errorf("%s: MemoryHigh = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTierValues(t *testing.T) {
	t.Parallel()
	active := []*corev1.Pod{
		podWith("g", rr(req("1", "1Gi"), req("1", "1Gi"))),
		podWith("b1", rr(req("250m", "100Mi"), nil)),
		podWith("b2", rr(req("500m", ""), req("1", ""))),
		podWith("be", rr(nil, nil)),
	}
	if got, want := BurstableCPUShares(active), uint64(768); got != want {
		t.Errorf("BurstableCPUShares = %d, want %d", got, want)
	}
	if got := BurstableCPUShares(nil); got != 2 {
		t.Errorf("BurstableCPUShares(none) = %d, want 2", got)
	}
	g, b := QOSMemoryRequests(active)
	if g != gi || b != 100*mi {
		t.Errorf("QOSMemoryRequests = %d, %d; want %d, %d", g, b, gi, 100*mi)
	}
	rc := NodeAllocatableConfig(list("cpu", "1500m", "memory", "2Gi", "pid", "1000", "hugepages-2Mi", "8Mi", "ephemeral-storage", "5Gi"))
	want := ResourceConfig{CPUShares: u64(1536), Memory: i64(2 * gi), PidsLimit: i64(1000), HugePageLimit: map[int64]int64{2 * mi: 8 * mi}}
	if diff := cmp.Diff(want, rc); diff != "" {
		t.Errorf("NodeAllocatableConfig (-want +got):\n%s", diff)
	}
}
