package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// Memory eviction against containerd, with stats from CRI
// (eviction.CRISource over ListPodSandboxStats). The node's own free
// memory is shared with every other process on the machine, so the test
// does not put a threshold on memory.available: it enforces an
// allocatable for its pods instead, as kubelet does on the kubepods
// cgroup. The pods' memory (allocatableMemory.available's source) is the
// working set of this test's pods, from CRI, under an allocatable of what
// they use before the hog starts plus 200Mi, with kubelet's hard
// threshold allocatableMemory.available<100Mi. Three pods run: a
// Burstable one within its request, a BestEffort one, and a hog that
// keeps 150 MB in a shell variable against a 50Mi request. Passes of the
// Manager find no pressure until the hog has grown; then the hog, and
// only the hog, is evicted (1 s grace) with kubelet's reason and message
// naming its usage and request, the others keep running, and while
// MemoryPressure holds a new BestEffort pod is refused with kubelet's
// reason and message and a Burstable one admitted.
func TestMemoryEvictionOnContainerd(t *testing.T) {
	e, rt := setup(t)
	a := newAgent(t, rt, t.TempDir())
	mem := func(req, lim string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(req)}}
		if lim != "" {
			r.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(lim)}
		}
		return r
	}
	steadyC := sleeper("app", e.openImage)
	steadyC.Resources = mem("50Mi", "")
	steady := newPod(t, rt, "evict-steady", steadyC)
	idle := newPod(t, rt, "evict-besteffort", sleeper("app", e.openImage))
	hogC := corev1.Container{Name: "hog", Image: e.openImage, ImagePullPolicy: corev1.PullIfNotPresent, Resources: mem("50Mi", "400Mi"),
		// The shell keeps the variable; "; true" keeps it from exec'ing sleep.
		Command: []string{"sh", "-c", `x=$(head -c 150000000 /dev/zero | tr '\000' a); sleep 3600; true`}}
	hog := newPod(t, rt, "evict-hog", hogC)
	pods := []*corev1.Pod{steady, idle, hog}

	a.converge(steady)
	a.converge(idle)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	podsMem := &podsMemory{rt: rt, pods: pods}
	base, err := podsMem.workingSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	podsMem.allocatable = base + 200<<20
	thresholds, err := eviction.ParseThresholds(eviction.Config{Hard: map[string]string{"allocatableMemory.available": "100Mi"}})
	if err != nil {
		t.Fatal(err)
	}
	k := &agentKiller{a: a, pods: pods, statuses: map[*corev1.Pod]*corev1.PodStatus{}}
	rec := &evictionEvents{}
	m := eviction.New(eviction.NewCRISource(rt, rt, eviction.WithRootDir(a.root), eviction.WithPodsMemory(podsMem.stats)), k,
		eviction.WithThresholds(thresholds), eviction.WithRecorder(rec))

	evicted := synchronize(t, ctx, m)
	if len(evicted) != 0 || len(m.Conditions()) != 0 {
		t.Fatalf("before the hog: evicted %v, conditions %v", names(evicted), m.Conditions())
	}
	bestEffort := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late-besteffort", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{sleeper("app", e.openImage)}}}
	if err := m.Admit(bestEffort); err != nil {
		t.Fatalf("admission without pressure: %v", err)
	}

	a.converge(hog)
	start := time.Now()
	passes := 0
	for len(evicted) == 0 {
		if time.Since(start) > 45*time.Second {
			ws, _ := podsMem.workingSet(ctx)
			t.Fatalf("no eviction in 45 s (%d passes); pods' working set %d of allocatable %d", passes, ws, podsMem.allocatable)
		}
		time.Sleep(250 * time.Millisecond) // the hog fills its memory on its own time
		passes++
		evicted = synchronize(t, ctx, m)
	}
	t.Logf("pods' working set before the hog %d bytes, allocatable %d; evicted after %d passes (%v)", base, podsMem.allocatable, passes, time.Since(start).Round(time.Millisecond))
	if len(evicted) != 1 || evicted[0] != hog {
		t.Fatalf("evicted %v, want the hog", names(evicted))
	}
	ev := k.evictions[0]
	t.Logf("eviction: grace %d s, signal %s, message %q, annotations %v", ev.GracePeriodSeconds, ev.Signal, ev.Message, ev.Annotations)
	msg := regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: 100Mi, available: (\d+)(Ki|Mi)?\. ` +
		`Container hog was using (\d+)(Ki|Mi)?, request is 50Mi, has larger consumption of memory\. $`)
	if !msg.MatchString(ev.Message) {
		t.Errorf("message %q is not kubelet's for the hog", ev.Message)
	}
	if ev.GracePeriodSeconds != 1 || ev.Signal != eviction.SignalAllocatableMemoryAvailable || !ev.DisruptionTarget ||
		ev.Annotations[eviction.OffendingContainersKey] != "hog" || ev.Annotations[eviction.StarvedResourceKey] != "memory" {
		t.Errorf("eviction %+v", ev)
	}
	st := k.statuses[hog]
	if st == nil || st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != ev.Message || !hasDisruptionTarget(st) {
		t.Errorf("hog status %+v", st)
	}
	if got := rec.reasons(); len(got) != 1 || got[0] != "Evicted" {
		t.Errorf("events %v, want one Evicted", got)
	}
	if cs := a.status(hog).FindContainerStatusByName("hog"); cs == nil || cs.State != podsync.ContainerStateExited {
		t.Errorf("the hog's container is not stopped: %+v", cs)
	}
	for _, p := range []*corev1.Pod{steady, idle} {
		if !running(p, a.status(p)) {
			t.Errorf("%s is not running after the eviction", p.Name)
		}
	}

	// MemoryPressure holds for the transition period (5 minutes).
	if c := m.Conditions(); len(c) != 1 || c[0] != corev1.NodeMemoryPressure || !m.IsUnderMemoryPressure() {
		t.Fatalf("conditions %v, want [MemoryPressure]", c)
	}
	err = m.Admit(bestEffort)
	var ae *eviction.AdmitError
	if !errors.Is(err, eviction.ErrNodePressure) || !errors.As(err, &ae) || ae.Reason() != "Evicted" ||
		ae.Message() != "The node had condition: [MemoryPressure]. " {
		t.Errorf("BestEffort pod under MemoryPressure: %v, want refused with kubelet's reason and message", err)
	} else {
		t.Logf("BestEffort pod refused: reason %s, message %q", ae.Reason(), ae.Message())
	}
	burstable := bestEffort.DeepCopy()
	burstable.Spec.Containers[0].Resources = mem("10Mi", "")
	if err := m.Admit(burstable); err != nil {
		t.Errorf("Burstable pod under MemoryPressure refused: %v", err)
	}
}

// synchronize makes one pass of the Manager that got its stats. A pass
// whose stats failed is made again, as Run would on its next tick:
// containerd 1.6 fails ListPodSandboxStats as a whole while any sandbox on
// it (another test's) is being stopped ("task ... not found").
func synchronize(t *testing.T, ctx context.Context, m *eviction.Manager) []*corev1.Pod {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		evicted, err := m.Synchronize(ctx)
		switch {
		case err == nil:
			return evicted
		case !errors.Is(err, eviction.ErrStats) || time.Now().After(deadline):
			t.Fatal(err)
		}
		t.Logf("pass without stats, made again: %v", err)
		time.Sleep(100 * time.Millisecond) // the sandbox's stop takes its own time
	}
}

// podsMemory is the pods cgroup as kubelet's allocatable enforcement
// would see it if only the test's pods ran: their working sets, from CRI,
// under a set allocatable.
type podsMemory struct {
	rt          *runtime.Client
	pods        []*corev1.Pod
	allocatable uint64
}

func (p *podsMemory) workingSet(ctx context.Context) (uint64, error) {
	var ws uint64
	for _, pod := range p.pods {
		sbs, err := p.rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{podsync.LabelPodUID: string(pod.UID)}})
		if err != nil {
			return 0, err
		}
		for _, sb := range sbs {
			ws += sb.GetLinux().GetMemory().GetWorkingSetBytes().GetValue()
		}
	}
	return ws, nil
}

func (p *podsMemory) stats(ctx context.Context) (*statsapi.MemoryStats, error) {
	ws, err := p.workingSet(ctx)
	if err != nil {
		return nil, err
	}
	avail := p.allocatable - min(ws, p.allocatable)
	return &statsapi.MemoryStats{Time: metav1.Now(), WorkingSetBytes: &ws, AvailableBytes: &avail}, nil
}

// agentKiller is the pod worker's side of eviction: the test's pods not
// evicted yet, and an eviction that kills the pod through podsync with
// the eviction's grace period and keeps the status it writes.
type agentKiller struct {
	a         *agent
	mu        sync.Mutex
	pods      []*corev1.Pod
	evictions []eviction.Eviction
	statuses  map[*corev1.Pod]*corev1.PodStatus
}

func (k *agentKiller) ActivePods() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range k.pods {
		if k.statuses[p] == nil {
			out = append(out, p)
		}
	}
	return out
}

func (k *agentKiller) Evict(ctx context.Context, e eviction.Eviction) error {
	st, err := k.a.syncer.Status(ctx, e.Pod)
	if err != nil {
		return err
	}
	grace := e.GracePeriodSeconds
	r := k.a.syncer.KillPod(ctx, e.Pod, st, &grace)
	status := &corev1.PodStatus{}
	e.Status(status, metav1.Now())
	k.mu.Lock()
	k.evictions = append(k.evictions, e)
	k.statuses[e.Pod] = status
	k.mu.Unlock()
	return r.Error()
}

func hasDisruptionTarget(st *corev1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// evictionEvents records the reasons of the events a Manager sends.
type evictionEvents struct {
	mu   sync.Mutex
	list []string
}

func (l *evictionEvents) Eventf(_ apiruntime.Object, _, reason, _ string, _ ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, reason)
}

func (l *evictionEvents) AnnotatedEventf(o apiruntime.Object, _ map[string]string, t, reason, f string, args ...interface{}) {
	l.Eventf(o, t, reason, f, args...)
}

func (l *evictionEvents) reasons() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.list...)
}

// Disk eviction against containerd, the same way: the node's disk is
// shared with every other process, so the test gives CRISource a statfs
// (WithStatfs) of a filesystem whose used bytes are its pods' writable
// layers as containerd reports them (ListPodSandboxStats) and whose
// capacity is what they use before the filler starts plus 200Mi, one
// filesystem for nodefs and the image filesystem (kubelet's single-disk
// layout), with nodefs.available<100Mi. A filler writes 150 MB into its
// writable layer next to a pod that writes nothing; the filler alone is
// evicted with kubelet's ephemeral-storage message (without the
// container's usage: CRISource does not measure logs, and kubelet's line
// for a container needs them), and under DiskPressure every new pod that
// is not critical is refused. containerd 1.6 measures writable layers in
// the background (every 10 s by default), so the eviction may take that
// long.
func TestDiskEvictionOnContainerd(t *testing.T) {
	e, rt := setup(t)
	a := newAgent(t, rt, t.TempDir())
	quiet := newPod(t, rt, "evict-quiet", sleeper("app", e.openImage))
	fillerC := corev1.Container{Name: "filler", Image: e.openImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("10Mi")}},
		Command:   []string{"sh", "-c", `dd if=/dev/zero of=/fill bs=1M count=150 && exec sleep 3600`}}
	filler := newPod(t, rt, "evict-filler", fillerC)
	pods := []*corev1.Pod{quiet, filler}
	a.converge(quiet)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	disk := &podsDisk{rt: rt, pods: pods}
	base, err := disk.used(ctx)
	if err != nil {
		t.Fatal(err)
	}
	disk.capacity = base + 200<<20
	thresholds, err := eviction.ParseThresholds(eviction.Config{Hard: map[string]string{"nodefs.available": "100Mi"}})
	if err != nil {
		t.Fatal(err)
	}
	k := &agentKiller{a: a, pods: pods, statuses: map[*corev1.Pod]*corev1.PodStatus{}}
	src := &lastSummary{StatsSource: eviction.NewCRISource(rt, rt, eviction.WithRootDir(a.root), eviction.WithStatfs(disk.statfs))}
	m := eviction.New(src, k, eviction.WithThresholds(thresholds))
	evicted := synchronize(t, ctx, m)
	if len(evicted) != 0 || len(m.Conditions()) != 0 {
		t.Fatalf("before the filler: evicted %v, conditions %v", names(evicted), m.Conditions())
	}

	a.converge(filler)
	start := time.Now()
	passes := 0
	for len(evicted) == 0 {
		if time.Since(start) > 45*time.Second {
			used, _ := disk.used(ctx)
			t.Fatalf("no eviction in 45 s (%d passes); pods' writable layers %d bytes of %d; the last pass's stats: %s", passes, used, disk.capacity, src.pods(pods))
		}
		time.Sleep(250 * time.Millisecond) // containerd measures the layers on its own time
		passes++
		evicted = synchronize(t, ctx, m)
	}
	t.Logf("pods' writable layers before the filler %d bytes, capacity %d; evicted after %d passes (%v)", base, disk.capacity, passes, time.Since(start).Round(time.Millisecond))
	if len(evicted) != 1 || evicted[0] != filler {
		t.Fatalf("evicted %v, want the filler; the pass's stats: %s", names(evicted), src.pods(pods))
	}
	ev := k.evictions[0]
	t.Logf("eviction: grace %d s, signal %s, message %q, annotations %v", ev.GracePeriodSeconds, ev.Signal, ev.Message, ev.Annotations)
	msg := regexp.MustCompile(`^The node was low on resource: ephemeral-storage\. Threshold quantity: 100Mi, available: (\d+)(Ki|Mi)?\. $`)
	if !msg.MatchString(ev.Message) || ev.GracePeriodSeconds != 1 || ev.Annotations[eviction.StarvedResourceKey] != "ephemeral-storage" {
		t.Errorf("eviction %+v: not kubelet's for the filler", ev)
	}
	if st := k.statuses[filler]; st == nil || st.Phase != corev1.PodFailed || st.Reason != "Evicted" || !hasDisruptionTarget(st) {
		t.Errorf("filler status %+v", st)
	}
	if cs := a.status(filler).FindContainerStatusByName("filler"); cs == nil || cs.State != podsync.ContainerStateExited {
		t.Errorf("the filler's container is not stopped: %+v", cs)
	}
	if !running(quiet, a.status(quiet)) {
		t.Error("the quiet pod is not running after the eviction")
	}
	if c := m.Conditions(); len(c) != 1 || c[0] != corev1.NodeDiskPressure || !m.IsUnderDiskPressure() {
		t.Fatalf("conditions %v, want [DiskPressure]", c)
	}
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{sleeper("app", e.openImage)}}}
	late.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Mi")}
	var ae *eviction.AdmitError
	if err := m.Admit(late); !errors.As(err, &ae) || ae.Reason() != "Evicted" || ae.Message() != "The node had condition: [DiskPressure]. " {
		t.Errorf("Burstable pod under DiskPressure: %v, want refused with kubelet's reason and message", err)
	}
}

// podsDisk is a filesystem as if only the test's pods used it: their
// writable layers, from CRI, on a set capacity.
type podsDisk struct {
	rt       *runtime.Client
	pods     []*corev1.Pod
	capacity uint64
	mu       sync.Mutex
	last     uint64 // the use the previous statfs measured
}

func (d *podsDisk) used(ctx context.Context) (uint64, error) {
	var used uint64
	for _, pod := range d.pods {
		sbs, err := d.rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{podsync.LabelPodUID: string(pod.UID)}})
		if err != nil {
			return 0, err
		}
		for _, sb := range sbs {
			for _, c := range sb.GetLinux().GetContainers() {
				used += c.GetWritableLayer().GetUsedBytes().GetValue()
			}
		}
	}
	return used, nil
}

// statfs reports the use measured at its previous call: CRISource reads
// the pods' stats and the filesystem in separate calls, and containerd
// may finish measuring the filler's layer between them; one pass late,
// the pods' stats the ranking reads already hold what the filesystem
// says (else the quiet pod, at 0 bytes like a filler not measured yet,
// can be ranked first).
func (d *podsDisk) statfs(string) (eviction.FsUsage, error) {
	used, err := d.used(context.Background())
	if err != nil {
		return eviction.FsUsage{}, err
	}
	d.mu.Lock()
	prev := d.last
	d.last = used
	d.mu.Unlock()
	return eviction.FsUsage{CapacityBytes: d.capacity, AvailableBytes: d.capacity - min(prev, d.capacity), Inodes: 1 << 20, InodesFree: 1 << 20}, nil
}

// lastSummary keeps the Summary of the latest pass, so that an eviction
// of the wrong pod shows what the ranking read.
type lastSummary struct {
	eviction.StatsSource
	mu   sync.Mutex
	last *statsapi.Summary
}

func (l *lastSummary) Summary(ctx context.Context) (*statsapi.Summary, error) {
	s, err := l.StatsSource.Summary(ctx)
	l.mu.Lock()
	l.last = s
	l.mu.Unlock()
	return s, err
}

// pods describes the test pods in the latest Summary: each one's
// containers' writable layers and logs, or that it is missing (a pod
// without stats is ranked first, as in kubelet).
func (l *lastSummary) pods(pods []*corev1.Pod) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		return "no summary"
	}
	var b strings.Builder
	if fs := l.last.Node.Fs; fs != nil && fs.AvailableBytes != nil {
		fmt.Fprintf(&b, "nodefs available %d; ", *fs.AvailableBytes)
	}
	for _, p := range pods {
		found := false
		for _, ps := range l.last.Pods {
			if ps.PodRef.UID != string(p.UID) {
				continue
			}
			found = true
			fmt.Fprintf(&b, "%s:", p.Name)
			for _, c := range ps.Containers {
				fmt.Fprintf(&b, " %s rootfs %s logs %s;", c.Name, fsUsed(c.Rootfs), fsUsed(c.Logs))
			}
			if len(ps.Containers) == 0 {
				b.WriteString(" no containers;")
			}
		}
		if !found {
			fmt.Fprintf(&b, "%s: no stats;", p.Name)
		}
		b.WriteString(" ")
	}
	return b.String()
}

func fsUsed(f *statsapi.FsStats) string {
	if f == nil || f.UsedBytes == nil {
		return "-"
	}
	return strconv.FormatUint(*f.UsedBytes, 10)
}
