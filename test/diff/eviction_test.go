package diff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	kubeeviction "k8s.io/kubernetes/pkg/kubelet/eviction"
	evictionapi "k8s.io/kubernetes/pkg/kubelet/eviction/api"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/eviction"
)

var evictionSignals = []string{
	"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
	"imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree",
	"allocatableMemory.available", "pid.available",
}

// randThresholdValue gives a threshold or reclaim value, valid or not.
func randThresholdValue(r *rand.Rand) string {
	if r.IntN(12) == 0 {
		return pick(r, []string{"0", "-1Mi", "101%", "-5%", "abc", "x%", "1e"})
	}
	return pick(r, []string{
		"100Mi", "1Gi", "10%", "0%", "100%", "5.5%", "1.5Gi", "200k", "0.0%", "7", "0.5",
		fmt.Sprintf("%d%%", r.IntN(100)), fmt.Sprintf("%dMi", r.IntN(4096)),
	})
}

// invalidOK lets randStatements use an unknown signal now and then.
var invalidOK bool

func randStatements(r *rand.Rand, keys []string, value func() string) map[string]string {
	if r.IntN(4) == 0 {
		return nil
	}
	m := map[string]string{}
	for i := r.IntN(4); i >= 0; i-- {
		k := pick(r, keys)
		if invalidOK && r.IntN(40) == 0 {
			k = "memory.used"
		}
		m[k] = value()
	}
	return m
}

// canonThreshold writes a kubelet or podstart threshold the same way.
func canonThreshold(signal string, q *resource.Quantity, pct float32, grace time.Duration, mrQ *resource.Quantity, mrPct float32, hasMR bool) string {
	v := fmt.Sprintf("%g", pct)
	if q != nil {
		v = "q" + q.String()
	}
	mr := "-"
	if hasMR {
		mr = fmt.Sprintf("%g", mrPct)
		if mrQ != nil {
			mr = "q" + mrQ.String()
		}
	}
	return fmt.Sprintf("%s<%s grace=%s minReclaim=%s", signal, v, grace, mr)
}

func canonKubelet(ts []evictionapi.Threshold) []string {
	var out []string
	for _, t := range ts {
		var mrQ *resource.Quantity
		var mrP float32
		if t.MinReclaim != nil {
			mrQ, mrP = t.MinReclaim.Quantity, t.MinReclaim.Percentage
		}
		op := ""
		if t.Operator != evictionapi.OpLessThan {
			op = "op=" + string(t.Operator) + " "
		}
		out = append(out, op+canonThreshold(string(t.Signal), t.Value.Quantity, t.Value.Percentage, t.GracePeriod, mrQ, mrP, t.MinReclaim != nil))
	}
	return out
}

func canonPodstart(ts []eviction.Threshold, derived bool) []string {
	var out []string
	for _, t := range ts {
		var mrQ *resource.Quantity
		var mrP float32
		if t.MinReclaim != nil {
			mrQ, mrP = t.MinReclaim.Quantity, t.MinReclaim.Percentage
		}
		op := ""
		// kubelet appends containerfs thresholds with no operator when the
		// threshold they copy is missing: a zero value never met.
		if derived && t.Value.Quantity == nil && t.Value.Percentage == 0 && t.MinReclaim == nil && t.GracePeriod == 0 &&
			(t.Signal == eviction.SignalContainerFsAvailable || t.Signal == eviction.SignalContainerFsInodesFree) {
			op = "op= "
		}
		out = append(out, op+canonThreshold(string(t.Signal), t.Value.Quantity, t.Value.Percentage, t.GracePeriod, mrQ, mrP, t.MinReclaim != nil))
	}
	return out
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// TestEvictionParseThresholds compares eviction.ParseThresholds with
// kubelet's ParseThresholdConfig on random flag maps: the same error or
// not, and the same thresholds (as a set within hard and within soft:
// kubelet's order there is Go's map order).
func TestEvictionParseThresholds(t *testing.T) {
	r := newRand(t)
	invalidOK = true
	defer func() { invalidOK = false }()
	d := &differences{t: t}
	n, ok := cases(3000), 0
	for i := 0; i < n; i++ {
		hard := randStatements(r, evictionSignals, func() string { return randThresholdValue(r) })
		soft := randStatements(r, evictionSignals, func() string { return randThresholdValue(r) })
		grace := randStatements(r, evictionSignals, func() string {
			return pick(r, []string{"1m", "30s", "0s", "-1s", "bad", "1h30m"})
		})
		if r.IntN(4) > 0 && soft != nil {
			grace = map[string]string{}
			for k := range soft {
				grace[k] = pick(r, []string{"1m", "90s"})
			}
		}
		minReclaim := randStatements(r, evictionSignals, func() string { return randThresholdValue(r) })
		alloc := r.IntN(2) == 0
		var allocCfg []string
		if alloc {
			allocCfg = []string{"pods"}
		}
		want, wantErr := kubeeviction.ParseThresholdConfig(allocCfg, hard, soft, grace, minReclaim)
		got, gotErr := eviction.ParseThresholds(eviction.Config{Hard: hard, Soft: soft, SoftGracePeriod: grace, MinimumReclaim: minReclaim, EnforceNodeAllocatable: alloc})
		if (wantErr == nil) != (gotErr == nil) {
			d.add("hard %v soft %v grace %v minReclaim %v: kubelet error %v, podstart %v", hard, soft, grace, minReclaim, wantErr, gotErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		ok++
		w, g := sortedCopy(canonKubelet(want)), sortedCopy(canonPodstart(got, false))
		if strings.Join(w, "\n") != strings.Join(g, "\n") {
			d.add("hard %v soft %v grace %v minReclaim %v:\nkubelet  %q\npodstart %q", hard, soft, grace, minReclaim, w, g)
		}
	}
	d.report(n, "threshold configurations")
	t.Logf("%d random configurations, %d valid", n, ok)
}

// TestEvictionUpdateContainerFsThresholds compares the containerfs
// thresholds derived for each disk layout, in order.
func TestEvictionUpdateContainerFsThresholds(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(2000)
	for i := 0; i < n; i++ {
		hard := randStatements(r, evictionSignals, func() string { return pick(r, []string{"10%", "1Gi", "5%"}) })
		soft := randStatements(r, evictionSignals, func() string { return pick(r, []string{"20%", "2Gi"}) })
		grace := map[string]string{}
		for k := range soft {
			grace[k] = "1m"
		}
		minReclaim := randStatements(r, evictionSignals, func() string { return pick(r, []string{"1%", "500Mi"}) })
		kts, err := kubeeviction.ParseThresholdConfig(nil, hard, soft, grace, minReclaim)
		if err != nil {
			t.Fatal(err)
		}
		// the same list, in the same order, on both sides
		pts := make([]eviction.Threshold, len(kts))
		for j, k := range kts {
			pts[j] = eviction.Threshold{Signal: eviction.Signal(k.Signal), Value: eviction.ThresholdValue{Quantity: k.Value.Quantity, Percentage: k.Value.Percentage}, GracePeriod: k.GracePeriod}
			if k.MinReclaim != nil {
				pts[j].MinReclaim = &eviction.ThresholdValue{Quantity: k.MinReclaim.Quantity, Percentage: k.MinReclaim.Percentage}
			}
		}
		imageFs, split := r.IntN(2) == 0, r.IntN(2) == 0
		want, wantErr := kubeeviction.UpdateContainerFsThresholds(append([]evictionapi.Threshold(nil), kts...), imageFs, split)
		got, gotErr := eviction.UpdateContainerFsThresholds(pts, imageFs, split)
		if (wantErr == nil) != (gotErr == nil) {
			d.add("imageFs %v split %v %q: kubelet error %v, podstart %v", imageFs, split, canonKubelet(kts), wantErr, gotErr)
		}
		w, g := canonKubelet(want), canonPodstart(got, true)
		if strings.Join(w, "\n") != strings.Join(g, "\n") {
			d.add("imageFs %v split %v:\nkubelet  %q\npodstart %q", imageFs, split, w, g)
		}
	}
	d.report(n, "threshold lists")
	t.Logf("%d random threshold lists and layouts", n)
}

// ---- the manager, one pass of kubelet's against one of podstart's ----

type fakeSummary struct {
	mu      sync.Mutex
	calls   int
	gcSince bool // a collector ran since the last Get
	first   *statsapi.Summary
	after   *statsapi.Summary // after a collector ran
	done    chan struct{}
	cancel  context.CancelFunc
}

func (f *fakeSummary) Get(ctx context.Context, _ bool) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	switch {
	case f.calls == 1:
		return f.first, nil
	case f.gcSince:
		f.gcSince = false
		return f.after, nil
	}
	// the monitoring loop came round: the pass is over
	f.cancel()
	select {
	case f.done <- struct{}{}:
	default:
	}
	return nil, fmt.Errorf("no more summaries")
}

func (f *fakeSummary) GetCPUAndMemoryStats(context.Context) (*statsapi.Summary, error) {
	return nil, fmt.Errorf("not used")
}

type fakeGC struct {
	s      *fakeSummary
	images int
	conts  int
}

func (g *fakeGC) DeleteUnusedImages(context.Context) error {
	g.s.mu.Lock()
	g.s.gcSince = true
	g.s.mu.Unlock()
	g.images++
	return nil
}

func (g *fakeGC) DeleteAllUnusedContainers(context.Context) error {
	g.s.mu.Lock()
	g.s.gcSince = true
	g.s.mu.Unlock()
	g.conts++
	return nil
}

type fakeDiskInfo struct{ image, container bool }

func (f fakeDiskInfo) HasDedicatedImageFs(context.Context) (bool, error)     { return f.image, nil }
func (f fakeDiskInfo) HasDedicatedContainerFs(context.Context) (bool, error) { return f.container, nil }

// signalClock is a fake clock whose NewTimer (called by kubelet's loop
// only when it waits for evicted pods' cleanup) says the pass is over.
type signalClock struct {
	*testingclock.FakeClock
	done chan struct{}
}

func (c *signalClock) NewTimer(d time.Duration) clock.Timer {
	select {
	case c.done <- struct{}{}:
	default:
	}
	return c.FakeClock.NewTimer(d)
}

type kill struct {
	pod    *corev1.Pod
	grace  int64
	status corev1.PodStatus
}

type eventRec struct {
	mu     sync.Mutex
	events []string
}

func (e *eventRec) add(obj apiruntime.Object, ann map[string]string, typ, reason, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	name := ""
	switch o := obj.(type) {
	case *corev1.Pod:
		name = "pod/" + o.Name
	case *corev1.ObjectReference:
		name = "node/" + o.Name
	}
	keys := make([]string, 0, len(ann))
	for k, v := range ann {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	e.events = append(e.events, fmt.Sprintf("%s %s %s %q %v", name, typ, reason, msg, keys))
}
func (e *eventRec) Event(obj apiruntime.Object, typ, reason, msg string) {
	e.add(obj, nil, typ, reason, msg)
}
func (e *eventRec) Eventf(obj apiruntime.Object, typ, reason, f string, args ...interface{}) {
	e.add(obj, nil, typ, reason, fmt.Sprintf(f, args...))
}
func (e *eventRec) AnnotatedEventf(obj apiruntime.Object, ann map[string]string, typ, reason, f string, args ...interface{}) {
	e.add(obj, ann, typ, reason, fmt.Sprintf(f, args...))
}

type podstartKiller struct {
	pods  []*corev1.Pod
	kills []kill
}

func (k *podstartKiller) ActivePods() []*corev1.Pod { return k.pods }
func (k *podstartKiller) Evict(_ context.Context, e eviction.Eviction) error {
	st := corev1.PodStatus{}
	e.Status(&st, metav1.Time{})
	k.kills = append(k.kills, kill{pod: e.Pod, grace: e.GracePeriodSeconds, status: st})
	return nil
}

type summarySource struct {
	s     *fakeSummary
	calls int
}

func (p *summarySource) Summary(context.Context) (*statsapi.Summary, error) {
	p.calls++
	if p.calls == 1 {
		return p.s.first, nil
	}
	return p.s.after, nil
}

func u64(v uint64) *uint64 { return &v }

var evictionPriorities = []*int32{nil, ptr32(-10), ptr32(0), ptr32(1000), ptr32(2000000000), ptr32(2000001000)}

func ptr32(v int32) *int32 { return &v }

func randQty(r *rand.Rand, units ...string) resource.Quantity {
	return resource.MustParse(fmt.Sprintf("%d%s", 1+r.IntN(600), pick(r, units)))
}

func randEvictionPod(r *rand.Rand, i int) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("pod-%d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", i)), Generation: int64(r.IntN(3)),
	}}
	pod.Spec.Priority = pick(r, evictionPriorities)
	switch r.IntN(12) {
	case 0:
		pod.Annotations = map[string]string{"kubernetes.io/config.source": pick(r, []string{"file", "api", "http"})}
	case 1:
		pod.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
	}
	res := func() corev1.ResourceRequirements {
		var rr corev1.ResourceRequirements
		if r.IntN(3) > 0 {
			rr.Requests = corev1.ResourceList{}
			if r.IntN(2) == 0 {
				rr.Requests[corev1.ResourceMemory] = randQty(r, "Mi")
			}
			if r.IntN(2) == 0 {
				rr.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
			}
			if r.IntN(3) == 0 {
				rr.Requests[corev1.ResourceEphemeralStorage] = randQty(r, "Mi")
			}
		}
		if r.IntN(2) == 0 {
			rr.Limits = corev1.ResourceList{}
			if r.IntN(2) == 0 {
				rr.Limits[corev1.ResourceMemory] = randQty(r, "Mi", "Gi")
			}
			if r.IntN(3) == 0 {
				rr.Limits[corev1.ResourceEphemeralStorage] = randQty(r, "Mi", "Gi")
			}
		}
		return rr
	}
	for c := r.IntN(2); c >= 0; c-- {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", c), Resources: res()})
	}
	if r.IntN(4) == 0 {
		ic := corev1.Container{Name: "init", Resources: res()}
		if r.IntN(2) == 0 {
			always := corev1.ContainerRestartPolicyAlways
			ic.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, ic)
	}
	if r.IntN(6) == 0 {
		rr := res()
		pod.Spec.Resources = &rr
	}
	if r.IntN(8) == 0 {
		pod.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: randQty(r, "Mi")}
	}
	if r.IntN(3) == 0 {
		pod.Spec.TerminationGracePeriodSeconds = func(v int64) *int64 { return &v }(int64(r.IntN(60)))
	}
	for v := r.IntN(3); v > 0; v-- {
		vol := corev1.Volume{Name: fmt.Sprintf("v%d", v)}
		switch r.IntN(4) {
		case 0:
			vol.EmptyDir = &corev1.EmptyDirVolumeSource{}
			if r.IntN(2) == 0 {
				q := randQty(r, "Mi")
				vol.EmptyDir.SizeLimit = &q
			}
			if r.IntN(4) == 0 {
				vol.EmptyDir.Medium = corev1.StorageMediumMemory
			}
		case 1:
			vol.HostPath = &corev1.HostPathVolumeSource{Path: "/x"}
		case 2:
			vol.ConfigMap = &corev1.ConfigMapVolumeSource{}
		default:
			vol.Secret = &corev1.SecretVolumeSource{}
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
	}
	if r.IntN(4) == 0 {
		pod.Spec.Tolerations = []corev1.Toleration{pick(r, []corev1.Toleration{
			{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists},
			{Operator: corev1.TolerationOpExists},
			{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		})}
	}
	return pod
}

func randMiB(r *rand.Rand, max int) uint64 { return uint64(r.IntN(max)) << 20 }

func randFs(r *rand.Rand) *statsapi.FsStats {
	if r.IntN(3) == 0 {
		return nil
	}
	return &statsapi.FsStats{UsedBytes: u64(randMiB(r, 800) + uint64(r.IntN(1000))), InodesUsed: u64(uint64(r.IntN(5000)))}
}

func randPodStats(r *rand.Rand, pod *corev1.Pod) statsapi.PodStats {
	s := statsapi.PodStats{PodRef: statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}}
	if r.IntN(5) > 0 {
		s.Memory = &statsapi.MemoryStats{WorkingSetBytes: u64(randMiB(r, 1000) + uint64(r.IntN(4096)))}
	}
	if r.IntN(5) > 0 {
		s.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(uint64(r.IntN(200)))}
	}
	if r.IntN(3) > 0 {
		s.EphemeralStorage = &statsapi.FsStats{UsedBytes: u64(randMiB(r, 2000))}
	}
	names := []string{"init", "ephemeral"}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, name := range names {
		if r.IntN(3) == 0 {
			continue
		}
		cs := statsapi.ContainerStats{Name: name, Rootfs: randFs(r), Logs: randFs(r)}
		if r.IntN(4) > 0 {
			cs.Memory = &statsapi.MemoryStats{WorkingSetBytes: u64(randMiB(r, 600))}
		}
		s.Containers = append(s.Containers, cs)
	}
	for _, v := range pod.Spec.Volumes {
		if r.IntN(3) > 0 {
			vs := statsapi.VolumeStats{Name: v.Name}
			vs.UsedBytes = u64(randMiB(r, 700))
			vs.InodesUsed = u64(uint64(r.IntN(3000)))
			s.VolumeStats = append(s.VolumeStats, vs)
		}
	}
	return s
}

// randNodeSummary makes node stats around the thresholds' values.
func randNodeSummary(r *rand.Rand, pods []statsapi.PodStats) *statsapi.Summary {
	s := &statsapi.Summary{Pods: pods}
	if r.IntN(8) > 0 {
		s.Node.Memory = &statsapi.MemoryStats{AvailableBytes: u64(randMiB(r, 3000)), WorkingSetBytes: u64(randMiB(r, 8000))}
	}
	if r.IntN(3) > 0 {
		s.Node.SystemContainers = []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods,
			Memory: &statsapi.MemoryStats{AvailableBytes: u64(randMiB(r, 3000)), WorkingSetBytes: u64(randMiB(r, 6000))}}}
	}
	fs := func() *statsapi.FsStats {
		if r.IntN(8) == 0 {
			return nil
		}
		capacity := uint64(100 << 30)
		inodes := uint64(1000000)
		return &statsapi.FsStats{
			CapacityBytes: u64(capacity), AvailableBytes: u64(capacity / 100 * uint64(r.IntN(40))),
			Inodes: u64(inodes), InodesFree: u64(inodes / 100 * uint64(r.IntN(20))),
		}
	}
	s.Node.Fs = fs()
	if r.IntN(6) > 0 {
		s.Node.Runtime = &statsapi.RuntimeStats{ImageFs: fs()}
	}
	if r.IntN(4) > 0 {
		maxPID := int64(4194304)
		running := maxPID - int64(r.IntN(20000))
		s.Node.Rlimit = &statsapi.RlimitStats{MaxPID: &maxPID, NumOfRunningProcesses: &running}
	}
	return s
}

// randEvictionConfig gives thresholds on the signals podstart and
// kubelet order alike: kubelet picks among several met disk thresholds,
// or two met memory ones, in Go's map order (see below).
func randEvictionConfig(r *rand.Rand) (hard, soft, grace, minReclaim map[string]string) {
	hard, soft, grace, minReclaim = map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
	signals := []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available", "allocatableMemory.available"}
	value := func(s string) string {
		switch s {
		case "memory.available", "allocatableMemory.available":
			return pick(r, []string{"100Mi", "1Gi", "2Gi", "5%"})
		case "pid.available":
			return pick(r, []string{"10000", "5%", "1%"})
		}
		return pick(r, []string{"10%", "15%", "5%", "20Gi"})
	}
	for i := r.IntN(3); i >= 0; i-- {
		s := pick(r, signals)
		hard[s] = value(s)
	}
	if r.IntN(2) == 0 {
		s := pick(r, signals)
		soft[s] = value(s)
		grace[s] = "1m"
	}
	if r.IntN(3) == 0 {
		minReclaim[pick(r, signals)] = pick(r, []string{"500Mi", "5%"})
	}
	return
}

func toKubelet(ts []eviction.Threshold) []evictionapi.Threshold {
	out := make([]evictionapi.Threshold, len(ts))
	for i, t := range ts {
		out[i] = evictionapi.Threshold{Signal: evictionapi.Signal(t.Signal), Operator: evictionapi.OpLessThan,
			Value: evictionapi.ThresholdValue{Quantity: t.Value.Quantity, Percentage: t.Value.Percentage}, GracePeriod: t.GracePeriod}
		if t.MinReclaim != nil {
			out[i].MinReclaim = &evictionapi.ThresholdValue{Quantity: t.MinReclaim.Quantity, Percentage: t.MinReclaim.Percentage}
		}
	}
	return out
}

func conditionsSet(cs []corev1.NodeConditionType) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func statusString(st corev1.PodStatus) string {
	var conds []string
	for _, c := range st.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s reason=%s gen=%d msg=%q", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message))
	}
	return fmt.Sprintf("phase=%s reason=%s msg=%q conditions=%v", st.Phase, st.Reason, st.Message, conds)
}

// TestEvictionManager runs one pass of kubelet's eviction manager
// (NewManager, Start with a fake summary provider, disk info and a
// collector that changes the summary) and one Synchronize of podstart's
// on the same random node, thresholds and pods, and compares the pods
// killed (which, grace period, the status written), the events, the
// node's pressure conditions and the admission of random pods after the
// pass.
//
// kubelet's choice is left out where kubelet itself is not deterministic:
// when more than one threshold could drive the eviction and no memory
// threshold goes first (kubelet takes them from a map, and its priority
// sort keeps that order), and when two memory thresholds are met. The
// conditions are compared as sets and an admission refusal's message only
// under one condition, for kubelet lists its conditions in map order.
func TestEvictionManager(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	n := cases(1000)
	var compared, ambiguous, evicted, reclaimed, pressured, refused, storage int
	for i := 0; i < n; i++ {
		hard, soft, grace, minReclaim := randEvictionConfig(r)
		alloc := r.IntN(2) == 0
		ths, err := eviction.ParseThresholds(eviction.Config{Hard: hard, Soft: soft, SoftGracePeriod: grace, MinimumReclaim: minReclaim, EnforceNodeAllocatable: alloc})
		if err != nil {
			t.Fatal(err)
		}
		if len(ths) == 0 {
			continue
		}
		layout := eviction.DiskLayout{DedicatedImageFs: r.IntN(2) == 0}
		layout.SplitContainerFs = layout.DedicatedImageFs && r.IntN(2) == 0
		localStorage := r.IntN(3) == 0
		maxGrace := int64(r.IntN(40))

		var pods []*corev1.Pod
		var stats []statsapi.PodStats
		for p := r.IntN(6); p >= 0; p-- {
			pod := randEvictionPod(r, p)
			pods = append(pods, pod)
			if r.IntN(8) > 0 {
				stats = append(stats, randPodStats(r, pod))
			}
		}
		first := randNodeSummary(r, stats)
		after := randNodeSummary(r, stats)

		// is kubelet's choice deterministic? Only hard thresholds can be
		// past their grace period in one pass.
		cfg, _ := eviction.UpdateContainerFsThresholds(ths, layout.DedicatedImageFs, layout.SplitContainerFs)
		var mem, other int
		for _, th := range eviction.ThresholdsMet(cfg, eviction.Observe(first), false) {
			if !th.Hard() {
				continue
			}
			if res, _ := th.Signal.Resource(); res == corev1.ResourceMemory {
				mem++
			} else {
				other++
			}
		}
		deterministic := mem == 1 || (mem == 0 && other <= 1)

		// kubelet
		fs := &fakeSummary{first: first, after: after, done: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		fs.cancel = cancel
		clk := &signalClock{FakeClock: testingclock.NewFakeClock(time.Unix(1e9, 0)), done: fs.done}
		gc := &fakeGC{s: fs}
		var kmu sync.Mutex
		var kkills []kill
		killFn := func(pod *corev1.Pod, _ bool, grace *int64, fn func(*corev1.PodStatus)) error {
			st := corev1.PodStatus{}
			fn(&st)
			kmu.Lock()
			kkills = append(kkills, kill{pod: pod, grace: *grace, status: st})
			kmu.Unlock()
			return nil
		}
		krec := &eventRec{}
		nodeRef := &corev1.ObjectReference{Kind: "Node", Name: "node"}
		km, admit := kubeeviction.NewManager(fs, kubeeviction.Config{
			PressureTransitionPeriod: 5 * time.Minute, MaxPodGracePeriodSeconds: maxGrace, Thresholds: toKubelet(ths),
		}, killFn, gc, gc, krec, nodeRef, clk, localStorage)
		km.Start(ctx, fakeDiskInfo{layout.DedicatedImageFs, layout.SplitContainerFs}, func() []*corev1.Pod {
			return append([]*corev1.Pod(nil), pods...)
		}, func(*corev1.Pod) bool { return true }, time.Nanosecond)
		<-fs.done
		cancel()
		clk.Step(time.Minute) // ends a wait for cleanup

		// podstart
		pgc := &fakeGC{s: &fakeSummary{}}
		prec := &eventRec{}
		killer := &podstartKiller{pods: pods}
		pm := eviction.New(&summarySource{s: fs}, killer,
			eviction.WithThresholds(ths), eviction.WithDiskLayout(layout), eviction.WithImageGC(pgc), eviction.WithContainerGC(pgc),
			eviction.WithRecorder(prec), eviction.WithNodeRef(nodeRef), eviction.WithLocalStorageCapacityIsolation(localStorage),
			eviction.WithMaxPodGracePeriodSeconds(maxGrace), eviction.WithClock(testingclock.NewFakeClock(time.Unix(1e9, 0))))
		if _, err := pm.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}

		kconds := []corev1.NodeConditionType{}
		for _, c := range []struct {
			on   bool
			cond corev1.NodeConditionType
		}{{km.IsUnderMemoryPressure(), corev1.NodeMemoryPressure}, {km.IsUnderDiskPressure(), corev1.NodeDiskPressure}, {km.IsUnderPIDPressure(), corev1.NodePIDPressure}} {
			if c.on {
				kconds = append(kconds, c.cond)
			}
		}
		if a, b := conditionsSet(kconds), conditionsSet(pm.Conditions()); a != b {
			d.add("case %d: conditions: kubelet %s, podstart %s", i, a, b)
		}
		if len(kconds) > 0 {
			pressured++
		}
		for j := 0; j < 3; j++ {
			pod := randEvictionPod(r, 100+j)
			kr := admit.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: pod})
			perr := pm.Admit(pod)
			if kr.Admit != (perr == nil) {
				d.add("case %d: admit %+v under %v: kubelet %v, podstart %v", i, pod.Spec, kconds, kr.Admit, perr)
				continue
			}
			if perr != nil {
				refused++
				ae := perr.(*eviction.AdmitError)
				if kr.Reason != ae.Reason() || (len(kconds) == 1 && kr.Message != ae.Message()) {
					d.add("case %d: refusal: kubelet %q %q, podstart %q %q", i, kr.Reason, kr.Message, ae.Reason(), ae.Message())
				}
			}
		}
		if gc.images+gc.conts > 0 {
			reclaimed++
		}
		if !deterministic {
			ambiguous++
			continue
		}
		compared++
		if gc.images != pgc.images || gc.conts != pgc.conts {
			d.add("case %d: collectors: kubelet images %d containers %d, podstart %d %d", i, gc.images, gc.conts, pgc.images, pgc.conts)
		}
		kmu.Lock()
		var kdesc, pdesc []string
		for _, k := range kkills {
			kdesc = append(kdesc, fmt.Sprintf("%s grace=%d %s", k.pod.Name, k.grace, statusString(k.status)))
		}
		kmu.Unlock()
		for _, k := range killer.kills {
			pdesc = append(pdesc, fmt.Sprintf("%s grace=%d %s", k.pod.Name, k.grace, statusString(k.status)))
		}
		if strings.Join(kdesc, "\n") != strings.Join(pdesc, "\n") {
			d.add("case %d (layout %+v, thresholds %q):\nkubelet  %q\npodstart %q", i, layout, canonPodstart(cfg, true), kdesc, pdesc)
		}
		if len(kkills) > 0 {
			evicted++
			if kkills[0].status.Conditions == nil {
				storage++
			}
		}
		krec.mu.Lock()
		if a, b := strings.Join(krec.events, "\n"), strings.Join(prec.events, "\n"); a != b {
			d.add("case %d: events:\nkubelet  %q\npodstart %q", i, krec.events, prec.events)
		}
		krec.mu.Unlock()
	}
	d.report(n, "eviction passes")
	t.Logf("%d random nodes: %d compared in full (%d evicted a pod, %d of them for a storage limit), %d where kubelet's choice is map-ordered; %d under pressure, %d admissions refused alike, %d passes ran collectors",
		n, compared, evicted, storage, ambiguous, pressured, refused, reclaimed)
}
