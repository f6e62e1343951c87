package diff

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	v1qos "k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm"

	"github.com/podstart/podstart/cgroups"
	"github.com/podstart/podstart/criconfig"
)

// randCgroupPod is randResourcePod with huge pages and overhead now and
// then.
func randCgroupPod(r *rand.Rand) *corev1.Pod {
	pod := randResourcePod(r)
	pages := []corev1.ResourceName{"hugepages-2Mi", "hugepages-1Gi", "hugepages-2048Ki"}
	for i := range pod.Spec.Containers {
		if r.IntN(4) == 0 {
			q := resource.MustParse(pick(r, []string{"2Mi", "4Mi", "1Gi", "0"}))
			res := &pod.Spec.Containers[i].Resources
			name := pick(r, pages)
			if res.Requests == nil {
				res.Requests = corev1.ResourceList{}
			}
			res.Requests[name] = q
			if r.IntN(2) == 0 {
				if res.Limits == nil {
					res.Limits = corev1.ResourceList{}
				}
				res.Limits[name] = q
			}
		}
	}
	if r.IntN(5) == 0 {
		pod.Spec.Overhead = randList(r)
	}
	pod.UID = types.UID(fmt.Sprintf("%08x-%04x", r.Uint32(), r.Uint32()&0xffff))
	return pod
}

func optInt64(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func optUint64(p *uint64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestCgroupsResourceConfigForPod compares cgroups.ResourceConfigForPod
// with kubelet's cm.ResourceConfigForPod (default feature gates) on random
// pods, CPU quota on or off, random CFS periods, MemoryQoS on or off and
// both memory reservation policies.
func TestCgroupsResourceConfigForPod(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		pod := randCgroupPod(r)
		enforce := r.IntN(4) != 0
		period := pick(r, []uint64{100000, 100000, 5000, 50000, 1000000})
		memQoS := r.IntN(2) == 0
		policy := pick(r, []kubeletconfig.MemoryReservationPolicy{kubeletconfig.NoneMemoryReservationPolicy, kubeletconfig.TieredReservationMemoryReservationPolicy})
		want := cm.ResourceConfigForPod(pod, enforce, period, memQoS, policy)
		ourPolicy := criconfig.MemoryReservationNone
		if policy == kubeletconfig.TieredReservationMemoryReservationPolicy {
			ourPolicy = criconfig.MemoryReservationTiered
		}
		got := cgroups.ResourceConfigForPod(pod, cgroups.PodOptions{DisableCPUQuota: !enforce, CPUPeriod: period, MemoryQoS: memQoS, MemoryReservationPolicy: ourPolicy})
		g := fmt.Sprintf("shares %s quota %s period %s memory %s pids %s huge %v unified %v",
			optUint64(got.CPUShares), optInt64(got.CPUQuota), optUint64(got.CPUPeriod), optInt64(got.Memory), optInt64(got.PidsLimit), got.HugePageLimit, got.Unified)
		w := fmt.Sprintf("shares %s quota %s period %s memory %s pids %s huge %v unified %v",
			optUint64(want.CPUShares), optInt64(want.CPUQuota), optUint64(want.CPUPeriod), optInt64(want.Memory), optInt64(want.PidsLimit), want.HugePageLimit, want.Unified)
		if !equalButHuge(got, want) || !maps.Equal(got.HugePageLimit, want.HugePageLimit) {
			d.add("ResourceConfigForPod(%+v, enforce %v, period %d, memQoS %v, %s):\n got  %s\n kubelet %s", pod.Spec, enforce, period, memQoS, policy, g, w)
		}
	}
	d.report(n, "pods")
}

// equalButHuge compares all but huge pages (compared with maps.Equal: an
// empty map and nil are the same to the cgroup files).
func equalButHuge(got cgroups.ResourceConfig, want *cm.ResourceConfig) bool {
	return optUint64(got.CPUShares) == optUint64(want.CPUShares) && optInt64(got.CPUQuota) == optInt64(want.CPUQuota) &&
		optUint64(got.CPUPeriod) == optUint64(want.CPUPeriod) && optInt64(got.Memory) == optInt64(want.Memory) &&
		optInt64(got.PidsLimit) == optInt64(want.PidsLimit) && maps.Equal(got.Unified, want.Unified)
}

// TestCgroupsHugePageLimitsAndCPU compares HugePageLimits and the CPU
// conversions with kubelet's on random lists and values.
func TestCgroupsHugePageLimitsAndCPU(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	names := []corev1.ResourceName{"hugepages-2Mi", "hugepages-1Gi", "hugepages-2048Ki", "hugepages-", "hugepages-x", "memory", "cpu", "hugepages-1G"}
	for range n {
		l := corev1.ResourceList{}
		for range r.IntN(5) {
			l[pick(r, names)] = resource.MustParse(pick(r, []string{"0", "2Mi", "4Mi", "1Gi", "3"}))
		}
		if got, want := cgroups.HugePageLimits(l), cm.HugePageLimits(l); !maps.Equal(got, want) {
			d.add("HugePageLimits(%v) = %v, kubelet %v", l, got, want)
		}
		milli := pick(r, []int64{0, 1, 2, 9, 10, 11, 100, 999, 1000, 1001, 256000, 257000, 1 << 30}) + r.Int64N(3)
		if got, want := criconfig.MilliCPUToShares(milli), cm.MilliCPUToShares(milli); uint64(got) != want {
			d.add("MilliCPUToShares(%d) = %d, kubelet %d", milli, got, want)
		}
		period := pick(r, []int64{1000, 5000, 100000, 1000000})
		if got, want := criconfig.MilliCPUToQuota(milli, period), cm.MilliCPUToQuota(milli, period); got != want {
			d.add("MilliCPUToQuota(%d, %d) = %d, kubelet %d", milli, period, got, want)
		}
	}
	d.report(n, "cases")
}

var cgroupComponents = []string{"kubepods", "burstable", "besteffort", "pod", "pod-123", "Burstable", "a", "b-c", "d-e-f", "x.y", "é"}

// TestCgroupsNames compares Name's cgroupfs and systemd forms and their
// parsing with kubelet's CgroupName, and Root with NodeAllocatableRoot.
func TestCgroupsNames(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		var parts []string
		for range r.IntN(5) {
			parts = append(parts, pick(r, cgroupComponents))
		}
		kn := cm.NewCgroupName(cm.RootCgroupName, parts...)
		ours, err := cgroups.NewName(nil, parts...)
		if err != nil {
			d.add("NewName(%q): %v", parts, err)
			continue
		}
		if got, want := ours.Cgroupfs(), kn.ToCgroupfs(); got != want {
			d.add("Cgroupfs(%q) = %q, kubelet %q", parts, got, want)
		}
		if got, err := ours.Systemd(); err != nil || got != kn.ToSystemd() {
			d.add("Systemd(%q) = %q, %v; kubelet %q", parts, got, err, kn.ToSystemd())
		}

		s := "/"
		for range r.IntN(4) {
			s += pick(r, []string{"a", "b", "-", "_", ".slice", "/", "kubepods", "pod1", ""})
		}
		if got, want := cgroups.ParseCgroupfs(s), cm.ParseCgroupfsToCgroupName(s); !slices.Equal([]string(got), []string(want)) {
			d.add("ParseCgroupfs(%q) = %q, kubelet %q", s, []string(got), []string(want))
		}
		if got, want := cgroups.ParseSystemd(s), cm.ParseSystemdToCgroupName(s); !slices.Equal([]string(got), []string(want)) {
			d.add("ParseSystemd(%q) = %q, kubelet %q", s, []string(got), []string(want))
		}

		root := pick(r, []string{"", "/", "/custom", "/a/b", "/a-b/c", "/x/", "//y"})
		perQOS := r.IntN(2) == 0
		driver := pick(r, []string{"cgroupfs", "systemd"})
		want, panicked := nodeAllocatableRoot(root, perQOS, driver)
		got, err := cgroups.Root(root, perQOS).Path(driver)
		if panicked != (err != nil) || !panicked && got != want {
			d.add("Root(%q, %v).Path(%s) = %q, %v; kubelet %q (panicked %v)", root, perQOS, driver, got, err, want, panicked)
		}
	}
	d.report(n, "cases")
}

func nodeAllocatableRoot(root string, perQOS bool, driver string) (s string, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return cm.NodeAllocatableRoot(root, perQOS, driver), false
}

// TestCgroupsPodName compares a pod's cgroup with kubelet's
// GetPodContainerName (a method of an unexported type, restated over the
// exported NewCgroupName, GetPodQOS and GetPodCgroupNameSuffix) under both
// drivers and random cgroup roots, and with criconfig's CgroupParent.
func TestCgroupsPodName(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		pod := randCgroupPod(r)
		root := pick(r, []string{"", "/", "/custom", "/a/b"})
		driver := pick(r, []string{"cgroupfs", "systemd"})
		kroot := cm.NewCgroupName(cm.ParseCgroupfsToCgroupName(root), "kubepods")
		tier := kroot
		switch v1qos.GetPodQOS(pod) {
		case corev1.PodQOSBurstable:
			tier = cm.NewCgroupName(kroot, "burstable")
		case corev1.PodQOSBestEffort:
			tier = cm.NewCgroupName(kroot, "besteffort")
		}
		kn := cm.NewCgroupName(tier, cm.GetPodCgroupNameSuffix(pod.UID))
		want := kn.ToCgroupfs()
		if driver == "systemd" {
			want = kn.ToSystemd()
		}
		n, err := cgroups.PodName(cgroups.Root(root, true), pod)
		got := ""
		if err == nil {
			got, err = n.Path(driver)
		}
		if err != nil || got != want {
			d.add("PodName(%s, root %q, %s) = %q, %v; kubelet %q", pod.UID, root, driver, got, err, want)
		}
		if p := criconfig.CgroupParent(pod, criconfig.Node{CgroupRoot: root, CgroupDriver: driver}); p != want {
			d.add("criconfig.CgroupParent(%s, root %q, %s) = %q; kubelet %q", pod.UID, root, driver, p, want)
		}
	}
	d.report(n, "pods")
}

// recordingCgroups is a kubelet CgroupManager that records the configs
// its QoS container manager writes. Each UpdateCgroups round starts a new
// record when it asks for the active pods.
type recordingCgroups struct {
	cm.CgroupManager // methods the QoS manager does not call
	mu               sync.Mutex
	created          []*cm.CgroupConfig
	rounds           [][]*cm.CgroupConfig
}

func (f *recordingCgroups) Create(_ klog.Logger, c *cm.CgroupConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, c)
	return nil
}

func (f *recordingCgroups) Update(_ klog.Logger, c *cm.CgroupConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rounds) == 0 {
		f.created = append(f.created, c)
		return nil
	}
	f.rounds[len(f.rounds)-1] = append(f.rounds[len(f.rounds)-1], c)
	return nil
}

func (f *recordingCgroups) newRound() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rounds = append(f.rounds, nil)
}

func (f *recordingCgroups) Validate(cm.CgroupName) error { return nil }
func (f *recordingCgroups) Exists(cm.CgroupName) bool    { return false }
func (f *recordingCgroups) Name(n cm.CgroupName) string  { return n.ToCgroupfs() }

// TestCgroupsQoSTiers runs kubelet's QoS container manager
// (NewQOSContainerManager over a recording CgroupManager, default
// configuration) and compares the tiers it creates and the values of its
// UpdateCgroups rounds for random active pods with cgroups'
// BurstableCPUShares and the besteffort minimum. kubelet's Start leaves a
// goroutine that repeats UpdateCgroups every minute (it cannot be
// stopped); the comparison takes the round each direct call records.
func TestCgroupsQoSTiers(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	rec := &recordingCgroups{}
	qm, err := cm.NewQOSContainerManager(&cm.CgroupSubsystems{}, cm.NewCgroupName(cm.RootCgroupName, "kubepods"),
		cm.NodeConfig{CgroupsPerQOS: true, MemoryReservationPolicy: kubeletconfig.NoneMemoryReservationPolicy}, rec)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var active []*corev1.Pod
	first := make(chan struct{})
	var once sync.Once
	activePods := func() []*corev1.Pod {
		rec.newRound()
		once.Do(func() { close(first) })
		mu.Lock()
		defer mu.Unlock()
		return active
	}
	if err := qm.Start(t.Context(), func() corev1.ResourceList { return nil }, activePods); err != nil {
		t.Fatal(err)
	}
	<-first // Start's own first round has begun; ours wait for its lock.

	// Start made the burstable tier with no CPU shares and besteffort with 2.
	rec.mu.Lock()
	for _, c := range rec.created {
		name := c.Name.ToCgroupfs()
		shares := optUint64(c.ResourceParameters.CPUShares)
		want := map[string]string{"/kubepods/burstable": "nil", "/kubepods/besteffort": "2"}[name]
		if shares != want {
			d.add("kubelet's Start made %s with shares %s, cgroups.EnsureQoS gives %s", name, shares, want)
		}
	}
	if len(rec.created) != 2 {
		d.add("kubelet's Start made %d tiers, want 2", len(rec.created))
	}
	rec.mu.Unlock()

	n := cases(2000)
	for range n {
		pods := make([]*corev1.Pod, r.IntN(8))
		for i := range pods {
			pods[i] = randCgroupPod(r)
		}
		mu.Lock()
		active = pods
		mu.Unlock()
		if err := qm.UpdateCgroups(klog.Background()); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		round := rec.rounds[len(rec.rounds)-1]
		rec.mu.Unlock()
		got := map[string]string{
			"/kubepods":            "nil",
			"/kubepods/burstable":  fmt.Sprint(cgroups.BurstableCPUShares(pods)),
			"/kubepods/besteffort": fmt.Sprint(cgroups.MinShares),
		}
		for _, c := range round {
			name := c.Name.ToCgroupfs()
			if w := optUint64(c.ResourceParameters.CPUShares); got[name] != w {
				d.add("tier %s: shares %s, kubelet %s (pods %d)", name, got[name], w, len(pods))
			}
			if c.ResourceParameters.Memory != nil || len(c.ResourceParameters.Unified) > 0 {
				d.add("tier %s: kubelet sets memory %s unified %v, cgroups none", name, optInt64(c.ResourceParameters.Memory), c.ResourceParameters.Unified)
			}
		}
		if len(round) != 3 {
			d.add("kubelet updated %d tiers, want 3", len(round))
		}
	}
	d.report(n, "rounds")
}

// TestCgroupsV2Conversions compares the cgroup v2 values with kubelet's:
// cpu.weight written with CPUWeight and read back with
// CPUSharesFromWeight is what kubelet's CPUSharesEqualAfterV2RoundTrip
// accepts (and only that), and MemoryHigh is the memory.high of
// ApplyPodLevelMemoryHigh for random pods and throttling factors.
func TestCgroupsV2Conversions(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(20000)
	for range n {
		shares := pick(r, []uint64{0, 1, 2, 3, 27, 28, 29, 1024, 262143, 262144, 1 << 20}) + uint64(r.IntN(3))
		if r.IntN(2) == 0 {
			shares = uint64(r.IntN(262145))
		}
		back := cgroups.CPUSharesFromWeight(cgroups.CPUWeight(shares))
		if shares >= 2 && !cm.CPUSharesEqualAfterV2RoundTrip(shares, back) {
			d.add("shares %d: weight %d read back as %d, which kubelet does not accept", shares, cgroups.CPUWeight(shares), back)
		}
		if shares >= 2 && cm.CPUSharesEqualAfterV2RoundTrip(shares, back+1) {
			d.add("shares %d: kubelet also accepts %d", shares, back+1)
		}

		pod := randCgroupPod(r)
		factor := pick(r, []float64{0, 0.5, 0.8, 0.9, 1})
		rc := &cm.ResourceConfig{}
		cm.ApplyPodLevelMemoryHigh(pod, rc, factor)
		if got, want := cgroups.MemoryHigh(pod, factor, int64(os.Getpagesize())), rc.Unified["memory.high"]; got != want {
			d.add("MemoryHigh(%+v, %v) = %q, kubelet %q", pod.Spec, factor, got, want)
		}
	}
	d.report(n, "cases")
}
