package eviction

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// memoryPods are kubelet's TestMemoryPressure pods; the last is the one to
// evict.
func memoryPods() ([]*corev1.Pod, []statsapi.PodStats) {
	var pods []*corev1.Pod
	var stats []statsapi.PodStats
	for _, x := range []struct {
		name             string
		priority         int32
		requests, limits corev1.ResourceList
		workingSet       string
	}{
		{"guaranteed-low-priority-high-usage", lowPriority, resources("100m", "1Gi", ""), resources("100m", "1Gi", ""), "900Mi"},
		{"burstable-below-requests", defaultPriority, resources("100m", "100Mi", ""), resources("200m", "1Gi", ""), "50Mi"},
		{"burstable-above-requests", defaultPriority, resources("100m", "100Mi", ""), resources("200m", "1Gi", ""), "400Mi"},
		{"best-effort-high-priority-high-usage", highPriority, nil, nil, "400Mi"},
		{"best-effort-low-priority-low-usage", lowPriority, nil, nil, "100Mi"},
	} {
		pod, s := memoryPod(x.name, x.priority, x.requests, x.limits, x.workingSet)
		pods, stats = append(pods, pod), append(stats, s)
	}
	return pods, stats
}

func one(t *testing.T, k *fakeKiller) *Eviction {
	t.Helper()
	e := k.take()
	switch len(e) {
	case 0:
		return nil
	case 1:
		return &e[0]
	}
	t.Fatalf("%d pods evicted in one pass, want at most one", len(e))
	return nil
}

// Ported from kubelet's TestMemoryPressure: a soft threshold with a grace
// period, a hard one, the transition period and admission.
func TestMemoryPressure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pods, podStats := memoryPods()
	toEvict := pods[4]
	clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
	stats := &fakeStats{summary: memorySummary("2Gi", podStats...)}
	killer := &fakeKiller{pods: pods}
	rec := &recorder{}
	m := New(stats, killer, WithClock(clk), WithMaxPodGracePeriodSeconds(5), WithRecorder(rec), WithNodeRef(&corev1.ObjectReference{Kind: "Node", Name: "n"}),
		WithThresholds([]Threshold{
			{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: qp("1Gi")}},
			{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: qp("2Gi")}, GracePeriod: 2 * time.Minute},
		}))
	bestEffort, _ := memoryPod("best-admit", defaultPriority, nil, nil, "0")
	burstable, _ := memoryPod("burst-admit", defaultPriority, resources("100m", "100Mi", ""), resources("200m", "200Mi", ""), "0")
	admits := func(want ...bool) {
		t.Helper()
		for i, pod := range []*corev1.Pod{bestEffort, burstable} {
			if got := m.Admit(pod) == nil; got != want[i] {
				t.Errorf("admit %s: %v, want %v", pod.Name, got, want[i])
			}
		}
	}
	sync := func(available string) {
		t.Helper()
		stats.set(memorySummary(available, podStats...))
		if _, err := m.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
	}

	sync("2Gi")
	if m.IsUnderMemoryPressure() {
		t.Error("memory pressure with 2Gi available")
	}
	admits(true, true)

	// the soft threshold is met, its grace period not yet over
	clk.Step(time.Minute)
	sync("1500Mi")
	if !m.IsUnderMemoryPressure() {
		t.Error("no memory pressure with the soft threshold met")
	}
	if e := one(t, killer); e != nil {
		t.Errorf("%s evicted before the grace period", e.Pod.Name)
	}

	// past the grace period: the right pod, with the maximum grace period
	clk.Step(3 * time.Minute)
	sync("1500Mi")
	e := one(t, killer)
	if e == nil || e.Pod != toEvict {
		t.Fatalf("evicted %v, want %s", e, toEvict.Name)
	}
	if e.GracePeriodSeconds != 5 || e.Signal != SignalMemoryAvailable || !e.DisruptionTarget {
		t.Errorf("eviction %+v: want grace 5 for the soft threshold", e)
	}
	wantMsg := "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. " +
		"Container best-effort-low-priority-low-usage was using 100Mi, request is 0, has larger consumption of memory. "
	if e.Message != wantMsg {
		t.Errorf("message %q, want %q", e.Message, wantMsg)
	}
	st := corev1.PodStatus{}
	e.Status(&st, metav1.NewTime(clk.Now()))
	if st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != wantMsg || len(st.Conditions) != 1 ||
		st.Conditions[0].Type != corev1.DisruptionTarget || st.Conditions[0].Reason != corev1.PodReasonTerminationByKubelet {
		t.Errorf("status %+v", st)
	}

	// pressure gone for longer than the transition period
	clk.Step(20 * time.Minute)
	sync("3Gi")
	if m.IsUnderMemoryPressure() {
		t.Error("memory pressure with 3Gi available")
	}

	// the hard threshold: one second of grace
	clk.Step(time.Minute)
	sync("500Mi")
	if e := one(t, killer); e == nil || e.Pod != toEvict || e.GracePeriodSeconds != 1 {
		t.Errorf("evicted %+v, want %s with 1 s", e, toEvict.Name)
	}
	admits(false, true)

	// below the thresholds, within the transition period: still pressure
	clk.Step(time.Minute)
	sync("2Gi")
	if !m.IsUnderMemoryPressure() {
		t.Error("pressure dropped within the transition period")
	}
	if e := one(t, killer); e != nil {
		t.Errorf("%s evicted without pressure", e.Pod.Name)
	}
	admits(false, true)

	// past the transition period
	clk.Step(5 * time.Minute)
	sync("2Gi")
	if m.IsUnderMemoryPressure() {
		t.Error("pressure after the transition period")
	}
	admits(true, true)
	if len(rec.events) == 0 || rec.events[0] != "Warning EvictionThresholdMet Attempting to reclaim memory" {
		t.Errorf("events %q", rec.events)
	}
}

// Ported from kubelet's TestMinReclaim: once met, a threshold stays until
// the signal is min-reclaim above it.
func TestMinReclaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pods, podStats := memoryPods()
	clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
	stats := &fakeStats{summary: memorySummary("2Gi", podStats...)}
	killer := &fakeKiller{pods: pods}
	m := New(stats, killer, WithClock(clk), WithThresholds([]Threshold{
		{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: qp("1Gi")}, MinReclaim: &ThresholdValue{Quantity: qp("500Mi")}},
	}))
	for _, step := range []struct {
		available string
		evict     bool
		pressure  bool
		advance   time.Duration
	}{
		{"2Gi", false, false, 0},
		{"500Mi", true, true, time.Minute},
		{"1.2Gi", true, true, time.Minute}, // above 1Gi, below 1Gi + 500Mi
		{"2Gi", false, true, time.Minute},
		{"2Gi", false, false, 5 * time.Minute},
	} {
		clk.Step(step.advance)
		stats.set(memorySummary(step.available, podStats...))
		if _, err := m.Synchronize(ctx); err != nil {
			t.Fatal(err)
		}
		e := one(t, killer)
		if (e != nil) != step.evict || (e != nil && e.Pod != pods[4]) {
			t.Errorf("%s available: evicted %v, want %v", step.available, e, step.evict)
		}
		if m.IsUnderMemoryPressure() != step.pressure {
			t.Errorf("%s available: pressure %v, want %v", step.available, !step.pressure, step.pressure)
		}
	}
}

// After kubelet's TestPIDPressure.
func TestPIDPressure(t *testing.T) {
	t.Parallel()
	var pods []*corev1.Pod
	var podStats []statsapi.PodStats
	for _, x := range []struct {
		name     string
		priority int32
		procs    uint64
	}{{"high-priority-high-usage", highPriority, 900}, {"default-priority-low-usage", defaultPriority, 100}, {"low-priority-high-usage", lowPriority, 600}, {"low-priority-low-usage", lowPriority, 50}} {
		pod, s := pidPod(x.name, x.priority, x.procs)
		pods, podStats = append(pods, pod), append(podStats, s)
	}
	stats := &fakeStats{summary: pidSummary(4000, 1000, podStats...)}
	killer := &fakeKiller{pods: pods}
	m := New(stats, killer, WithThresholds([]Threshold{{Signal: SignalPIDAvailable, Value: ThresholdValue{Quantity: qp("1200")}}}))
	if _, err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m.IsUnderPIDPressure() || one(t, killer) != nil {
		t.Fatal("pressure with 3000 PIDs free")
	}
	stats.set(pidSummary(4000, 3000, podStats...))
	if _, err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := one(t, killer)
	if !m.IsUnderPIDPressure() || e == nil || e.Pod.Name != "low-priority-high-usage" {
		t.Fatalf("pressure %v, evicted %+v", m.IsUnderPIDPressure(), e)
	}
	if want := "The node was low on resource: pids. Threshold quantity: 1200, available: 1k. "; e.Message != want {
		t.Errorf("message %q, want %q", e.Message, want)
	}
	pod, _ := pidPod("new", 0, 0)
	if err := m.Admit(pod); !errors.Is(err, ErrNodePressure) {
		t.Errorf("admitted under PID pressure: %v", err)
	}
}

// After kubelet's TestNodeReclaimFuncs: disk pressure runs the collectors
// kubelet runs for the layout, and evicts only if they did not reclaim
// enough.
func TestNodeReclaim(t *testing.T) {
	t.Parallel()
	threshold := func(s Signal) []Threshold {
		return []Threshold{{Signal: s, Value: ThresholdValue{Quantity: qp("1Gi")}, MinReclaim: &ThresholdValue{Quantity: qp("500Mi")}}}
	}
	tests := []struct {
		name                  string
		layout                DiskLayout
		signal                Signal
		pressure              *statsapi.Summary // nodefs, imagefs available
		afterGC               *statsapi.Summary
		wantImages, wantConts int
		wantEvict             bool
	}{
		{name: "nodefs, one filesystem: containers and images, enough", signal: SignalNodeFsAvailable,
			pressure: diskSummary("500Mi", "16Gi"), afterGC: diskSummary("16Gi", "16Gi"), wantImages: 1, wantConts: 1},
		{name: "nodefs, one filesystem: not enough past min-reclaim", signal: SignalNodeFsAvailable,
			pressure: diskSummary("500Mi", "16Gi"), afterGC: diskSummary("1.2Gi", "16Gi"), wantImages: 1, wantConts: 1, wantEvict: true},
		{name: "imagefs, image filesystem: containers and images", signal: SignalImageFsAvailable, layout: DiskLayout{DedicatedImageFs: true},
			pressure: diskSummary("16Gi", "500Mi"), afterGC: diskSummary("16Gi", "16Gi"), wantImages: 1, wantConts: 1},
		{name: "nodefs, image filesystem: nothing to collect", signal: SignalNodeFsAvailable, layout: DiskLayout{DedicatedImageFs: true},
			pressure: diskSummary("500Mi", "16Gi"), afterGC: diskSummary("16Gi", "16Gi"), wantEvict: true},
		{name: "imagefs, split: images only", signal: SignalImageFsAvailable, layout: DiskLayout{DedicatedImageFs: true, SplitContainerFs: true},
			pressure: diskSummary("16Gi", "500Mi"), afterGC: diskSummary("16Gi", "16Gi"), wantImages: 1},
		{name: "nodefs, split: containers only", signal: SignalNodeFsAvailable, layout: DiskLayout{DedicatedImageFs: true, SplitContainerFs: true},
			pressure: diskSummary("500Mi", "16Gi"), afterGC: diskSummary("16Gi", "16Gi"), wantConts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pod, s := diskPod("filler", 0, nil, nil, "900Mi", "50Mi", "0", nil)
			stats := &fakeStats{}
			tt.pressure.Pods = []statsapi.PodStats{s}
			tt.afterGC.Pods = []statsapi.PodStats{s}
			stats.set(tt.pressure)
			gc := &fakeGC{stats: stats, after: tt.afterGC, err: errGC}
			killer := &fakeKiller{pods: []*corev1.Pod{pod}}
			m := New(stats, killer, WithThresholds(threshold(tt.signal)), WithDiskLayout(tt.layout), WithImageGC(gc), WithContainerGC(gc))
			if _, err := m.Synchronize(context.Background()); err != nil {
				t.Fatal(err)
			}
			if gc.images != tt.wantImages || gc.contains != tt.wantConts {
				t.Errorf("collectors: images %d containers %d, want %d %d", gc.images, gc.contains, tt.wantImages, tt.wantConts)
			}
			if e := one(t, killer); (e != nil) != tt.wantEvict {
				t.Errorf("evicted %+v, want %v", e, tt.wantEvict)
			}
			if !m.IsUnderDiskPressure() {
				t.Error("no disk pressure")
			}
		})
	}
}

// After kubelet's TestStaticCriticalPodsAreNotEvicted.
func TestCriticalPodsAreNotEvicted(t *testing.T) {
	t.Parallel()
	critical, cs := memoryPod("critical", lowPriority, nil, nil, "800Mi")
	critical.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	other, os := memoryPod("other", highPriority, resources("", "1Gi", ""), nil, "10Mi")
	stats := &fakeStats{summary: memorySummary("50Mi", cs, os)}
	killer := &fakeKiller{pods: []*corev1.Pod{critical}}
	m := New(stats, killer)
	if _, err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := one(t, killer); e != nil {
		t.Fatalf("evicted the critical pod: %+v", e)
	}
	if !m.IsUnderMemoryPressure() {
		t.Fatal("no memory pressure with 50Mi available")
	}
	// the next in rank goes instead
	killer.pods = []*corev1.Pod{critical, other}
	if _, err := m.Synchronize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := one(t, killer); e == nil || e.Pod != other {
		t.Fatalf("evicted %+v, want other", e)
	}
}

// After kubelet's TestStorageLimitEvictions: every pod over a local
// storage limit goes in one pass, before any threshold, with no
// DisruptionTarget condition.
func TestStorageLimitEvictions(t *testing.T) {
	t.Parallel()
	over, os := diskPod("over", 0, nil, resources("", "", "100Mi"), "90Mi", "20Mi", "0", nil)
	over2, os2 := diskPod("over2", 0, nil, resources("", "", "10Mi"), "90Mi", "20Mi", "0", nil)
	under, us := diskPod("under", 0, nil, resources("", "", "1Gi"), "90Mi", "20Mi", "0", nil)
	stats := &fakeStats{summary: diskSummary("16Gi", "16Gi", os, os2, us)}
	killer := &fakeKiller{pods: []*corev1.Pod{over, under, over2}}
	m := New(stats, killer)
	evicted, err := m.Synchronize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"over", "over2"}, names(evicted)); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}
	for _, e := range killer.take() {
		if e.DisruptionTarget || e.GracePeriodSeconds != 1 || e.Signal != "" {
			t.Errorf("storage eviction %+v", e)
		}
	}
	// off: nothing
	killer2 := &fakeKiller{pods: []*corev1.Pod{over}}
	m = New(stats, killer2, WithLocalStorageCapacityIsolation(false))
	if evicted, _ := m.Synchronize(context.Background()); len(evicted) != 0 {
		t.Errorf("evicted %v with local storage isolation off", names(evicted))
	}
}

func TestSynchronizeErrors(t *testing.T) {
	t.Parallel()
	errStats := errors.New("no stats")
	m := New(&fakeStats{err: errStats}, &fakeKiller{})
	if _, err := m.Synchronize(context.Background()); !errors.Is(err, ErrStats) || !errors.Is(err, errStats) {
		t.Errorf("error %v, want ErrStats wrapping the source's", err)
	}
	pods, podStats := memoryPods()
	errKill := errors.New("kill failed")
	killer := &fakeKiller{pods: pods, err: errKill}
	m = New(&fakeStats{summary: memorySummary("10Mi", podStats...)}, killer)
	evicted, err := m.Synchronize(context.Background())
	if !errors.Is(err, ErrEvict) || !errors.Is(err, errKill) || len(evicted) != 1 {
		t.Errorf("evicted %v, error %v: want one pod and ErrEvict", names(evicted), err)
	}
}

// Observations whose stats are not newer than the last pass's drive no
// eviction (kubelet's thresholdsUpdatedStats).
func TestStaleStatsDoNotEvict(t *testing.T) {
	t.Parallel()
	pods, podStats := memoryPods()
	s := memorySummary("10Mi", podStats...)
	s.Node.Memory.Time.Time = time.Unix(100, 0)
	killer := &fakeKiller{pods: pods}
	m := New(&fakeStats{summary: s}, killer, WithThresholds([]Threshold{{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: qp("1Gi")}}}))
	for i, want := range []bool{true, false} {
		if _, err := m.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
		if e := one(t, killer); (e != nil) != want {
			t.Errorf("pass %d: evicted %v, want %v", i, e != nil, want)
		}
	}
}

// notifyClock is a fake clock that says when a timer or ticker is made,
// so a test steps it only once Run waits on it.
type notifyClock struct {
	*testingclock.FakeClock
	made chan string
}

func (c *notifyClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.made <- "timer " + d.String()
	return t
}

func (c *notifyClock) NewTicker(d time.Duration) clock.Ticker {
	t := c.FakeClock.NewTicker(d)
	c.made <- "ticker " + d.String()
	return t
}

func TestRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	pods, podStats := memoryPods()
	clk := &notifyClock{FakeClock: testingclock.NewFakeClock(time.Unix(1e9, 0)), made: make(chan string)}
	stats := &fakeStats{summary: memorySummary("2Gi", podStats...)}
	killer := &fakeKiller{pods: pods}
	cleaned := make(chan *corev1.Pod, 10)
	m := New(stats, killer, WithClock(clk), WithPodCleanedUp(func(p *corev1.Pod) bool {
		cleaned <- p
		return true
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			if got := <-clk.made; got != w {
				t.Fatalf("Run made a %s, want a %s", got, w)
			}
		}
	}

	// a pass, then a wait of one interval
	expect("timer 10s")
	if killer.take() != nil {
		t.Fatal("evicted without pressure")
	}
	// pressure: the pass after 10 s evicts, then waits for the cleanup
	stats.set(memorySummary("10Mi", podStats...))
	clk.Step(DefaultInterval)
	expect("timer 30s", "ticker 1s")
	if e := killer.take(); len(e) != 1 || e[0].Pod != pods[4] {
		t.Fatalf("evicted %v, want %s", e, pods[4].Name)
	}
	// a second later it asks; cleaned up, it synchronizes again at once
	stats.set(memorySummary("2Gi", podStats...))
	clk.Step(PodCleanupPollInterval)
	if p := <-cleaned; p != pods[4] {
		t.Errorf("asked about %s", p.Name)
	}
	expect("timer 10s")
	stats.mu.Lock()
	calls := stats.calls
	stats.mu.Unlock()
	if calls != 3 {
		t.Errorf("%d passes, want 3", calls)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
}
