package eviction

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

const (
	lowPriority     = -1
	defaultPriority = 0
	highPriority    = 1
)

func u64(v uint64) *uint64 { return &v }

func resources(cpu, memory, storage string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	if storage != "" {
		l[corev1.ResourceEphemeralStorage] = resource.MustParse(storage)
	}
	return l
}

func newPod(name string, priority int32, containers []corev1.Container, volumes []corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Containers: containers, Volumes: volumes, Priority: &priority},
	}
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func podRef(pod *corev1.Pod) statsapi.PodReference {
	return statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}
}

// memoryPod is a one-container pod using workingSet of memory.
func memoryPod(name string, priority int32, requests, limits corev1.ResourceList, workingSet string) (*corev1.Pod, statsapi.PodStats) {
	pod := newPod(name, priority, []corev1.Container{container(name, requests, limits)}, nil)
	ws := uint64(qp(workingSet).Value())
	return pod, statsapi.PodStats{
		PodRef:     podRef(pod),
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: u64(ws)},
		Containers: []statsapi.ContainerStats{{Name: name, Memory: &statsapi.MemoryStats{WorkingSetBytes: u64(ws)}}},
	}
}

// diskPod is a one-container pod using rootfs, logs and, per local
// volume, perVolume bytes (and as many inodes as MiB).
func diskPod(name string, priority int32, requests, limits corev1.ResourceList, rootfs, logs, perVolume string, volumes []corev1.Volume) (*corev1.Pod, statsapi.PodStats) {
	pod := newPod(name, priority, []corev1.Container{container(name, requests, limits)}, volumes)
	fs := func(q string) *statsapi.FsStats {
		v := uint64(qp(q).Value())
		return &statsapi.FsStats{UsedBytes: u64(v), InodesUsed: u64(v >> 20)}
	}
	s := statsapi.PodStats{PodRef: podRef(pod), Containers: []statsapi.ContainerStats{{Name: name, Rootfs: fs(rootfs), Logs: fs(logs)}}}
	for _, v := range volumes {
		s.VolumeStats = append(s.VolumeStats, statsapi.VolumeStats{Name: v.Name, FsStats: *fs(perVolume)})
	}
	return pod, s
}

func pidPod(name string, priority int32, processes uint64) (*corev1.Pod, statsapi.PodStats) {
	pod := newPod(name, priority, []corev1.Container{container(name, nil, nil)}, nil)
	return pod, statsapi.PodStats{PodRef: podRef(pod), ProcessStats: &statsapi.ProcessStats{ProcessCount: u64(processes)}}
}

// memorySummary: the node (and the pods cgroup) with available memory
// and as much again in use, as kubelet's makeMemoryStats.
func memorySummary(available string, pods ...statsapi.PodStats) *statsapi.Summary {
	v := uint64(qp(available).Value())
	m := &statsapi.MemoryStats{AvailableBytes: u64(v), WorkingSetBytes: u64(v)}
	return &statsapi.Summary{
		Node: statsapi.NodeStats{Memory: m, SystemContainers: []statsapi.ContainerStats{{Name: PodsContainerName, Memory: m}}},
		Pods: pods,
	}
}

// diskSummary: nodefs and imagefs with available bytes, each of twice
// that capacity, as kubelet's makeDiskStats.
func diskSummary(nodefs, imagefs string, pods ...statsapi.PodStats) *statsapi.Summary {
	fs := func(q string) *statsapi.FsStats {
		v := uint64(qp(q).Value())
		return &statsapi.FsStats{AvailableBytes: u64(v), CapacityBytes: u64(2 * v), InodesFree: u64(v >> 20), Inodes: u64(2 * v >> 20)}
	}
	return &statsapi.Summary{
		Node: statsapi.NodeStats{Fs: fs(nodefs), Runtime: &statsapi.RuntimeStats{ImageFs: fs(imagefs)}},
		Pods: pods,
	}
}

func pidSummary(maxPID, running int64, pods ...statsapi.PodStats) *statsapi.Summary {
	return &statsapi.Summary{Node: statsapi.NodeStats{Rlimit: &statsapi.RlimitStats{MaxPID: &maxPID, NumOfRunningProcesses: &running}}, Pods: pods}
}

type fakeStats struct {
	mu      sync.Mutex
	summary *statsapi.Summary
	err     error
	calls   int
}

func (f *fakeStats) Summary(context.Context) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.summary, f.err
}

func (f *fakeStats) set(s *statsapi.Summary) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.summary = s
}

type fakeKiller struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	evicted []Eviction
	err     error
}

func (k *fakeKiller) ActivePods() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods
}

func (k *fakeKiller) Evict(_ context.Context, e Eviction) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.evicted = append(k.evicted, e)
	return k.err
}

// take returns and forgets the evictions so far.
func (k *fakeKiller) take() []Eviction {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.evicted
	k.evicted = nil
	return e
}

// fakeGC records its calls and can swap the summary, as a collector that
// freed space would.
type fakeGC struct {
	stats            *fakeStats
	after            *statsapi.Summary
	images, contains int
	err              error
}

func (g *fakeGC) DeleteUnusedImages(context.Context) error {
	g.images++
	if g.after != nil {
		g.stats.set(g.after)
	}
	return g.err
}

func (g *fakeGC) DeleteAllUnusedContainers(context.Context) error {
	g.contains++
	if g.after != nil {
		g.stats.set(g.after)
	}
	return g.err
}

type recorder struct {
	mu     sync.Mutex
	events []string
	ann    []map[string]string
}

func (r *recorder) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason+" "+fmt.Sprintf(format, args...))
}

func (r *recorder) AnnotatedEventf(_ apiruntime.Object, ann map[string]string, typ, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason+" "+fmt.Sprintf(format, args...))
	r.ann = append(r.ann, ann)
}

var errGC = errors.New("gc failed")

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func qp(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
