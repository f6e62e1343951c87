package eviction

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// PodStatsFunc gives a pod's stats from a summary, and false when the
// summary has none for it.
type PodStatsFunc func(pod *corev1.Pod) (statsapi.PodStats, bool)

// PodStatsByUID looks pods up in a summary's pod stats by UID, as kubelet.
func PodStatsByUID(pods []statsapi.PodStats) PodStatsFunc {
	byUID := make(map[string]statsapi.PodStats, len(pods))
	for i := range pods {
		byUID[pods[i].PodRef.UID] = pods[i]
	}
	return func(pod *corev1.Pod) (statsapi.PodStats, bool) {
		s, ok := byUID[string(pod.UID)]
		return s, ok
	}
}

// FsStatsType names a part of a pod's disk use that a disk ranking counts.
type FsStatsType string

// The parts of a pod's disk use (kubelet's fsStatsType).
const (
	// FsStatsRoot is the containers' writable layers (Rootfs).
	FsStatsRoot FsStatsType = "root"
	// FsStatsLogs is the containers' logs.
	FsStatsLogs FsStatsType = "logs"
	// FsStatsLocalVolumeSource is the pod's hostPath, disk-backed
	// emptyDir, gitRepo and configMap volumes.
	FsStatsLocalVolumeSource FsStatsType = "localVolumeSource"
	// FsStatsImages is listed by kubelet's rankings but counts nothing:
	// kubelet has no per-pod image use.
	FsStatsImages FsStatsType = "images"
)

// DiskLayout says which filesystems a node has: kubelet's
// HasDedicatedImageFs and HasDedicatedContainerFs.
type DiskLayout struct {
	// DedicatedImageFs: images are on a filesystem other than nodefs.
	DedicatedImageFs bool
	// SplitContainerFs: with a dedicated image filesystem, containers'
	// writable layers stay on nodefs.
	SplitContainerFs bool
}

// RankFunc orders pods in place, the first to evict first.
type RankFunc func(pods []*corev1.Pod, stats PodStatsFunc)

// RankFor is the ranking kubelet uses for a signal on a node with the
// given layout (buildSignalToRankFunc), and false for a signal with none.
func RankFor(signal Signal, layout DiskLayout) (RankFunc, bool) {
	switch signal {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return RankMemoryPressure, true
	case SignalPIDAvailable:
		return RankPIDPressure, true
	}
	var nodefs, imagefs, containerfs []FsStatsType
	switch {
	case layout.DedicatedImageFs && !layout.SplitContainerFs:
		nodefs = []FsStatsType{FsStatsLogs, FsStatsLocalVolumeSource}
		imagefs = []FsStatsType{FsStatsRoot, FsStatsImages}
		containerfs = imagefs
	case layout.DedicatedImageFs && layout.SplitContainerFs:
		nodefs = []FsStatsType{FsStatsLogs, FsStatsLocalVolumeSource, FsStatsRoot}
		imagefs = []FsStatsType{FsStatsImages}
		containerfs = nodefs
	default:
		nodefs = []FsStatsType{FsStatsImages, FsStatsRoot, FsStatsLogs, FsStatsLocalVolumeSource}
		imagefs, containerfs = nodefs, nodefs
	}
	var measure []FsStatsType
	switch signal {
	case SignalNodeFsAvailable, SignalNodeFsInodesFree:
		measure = nodefs
	case SignalImageFsAvailable, SignalImageFsInodesFree:
		measure = imagefs
	case SignalContainerFsAvailable, SignalContainerFsInodesFree:
		measure = containerfs
	default:
		return nil, false
	}
	res := signalResource[signal]
	return func(pods []*corev1.Pod, stats PodStatsFunc) { RankDiskPressure(pods, stats, measure, res) }, true
}

// podKey is what kubelet's comparisons compute of one pod, computed once.
type podKey struct {
	found    bool
	exceeds  bool
	priority int32
	usage    resource.Quantity // usage above the request
	procs    uint64
}

type ranked struct {
	pods []*corev1.Pod
	keys []podKey
	less func(a, b *podKey) bool
}

func (r *ranked) Len() int { return len(r.pods) }
func (r *ranked) Swap(i, j int) {
	r.pods[i], r.pods[j] = r.pods[j], r.pods[i]
	r.keys[i], r.keys[j] = r.keys[j], r.keys[i]
}
func (r *ranked) Less(i, j int) bool { return r.less(&r.keys[i], &r.keys[j]) }

// cmpBool places true before false.
func cmpBool(a, b bool) int {
	if a == b {
		return 0
	}
	if !b {
		return -1
	}
	return 1
}

func cmpPriority(a, b *podKey) int {
	switch {
	case a.priority == b.priority:
		return 0
	case a.priority > b.priority:
		return 1
	}
	return -1
}

// lessChain is kubelet's multiSorter.Less: the comparisons in order, the
// last one deciding.
func lessChain(cmps ...func(a, b *podKey) int) func(a, b *podKey) bool {
	return func(a, b *podKey) bool {
		k := 0
		for ; k < len(cmps)-1; k++ {
			if c := cmps[k](a, b); c != 0 {
				return c < 0
			}
		}
		return cmps[k](a, b) < 0
	}
}

// notFoundFirst compares pods when either has no stats: the one without
// stats first.
func notFoundFirst(a, b *podKey) (int, bool) {
	if !a.found || !b.found {
		return cmpBool(!a.found, !b.found), true
	}
	return 0, false
}

func cmpExceeds(a, b *podKey) int {
	if c, ok := notFoundFirst(a, b); ok {
		return c
	}
	return cmpBool(a.exceeds, b.exceeds)
}

func cmpUsage(a, b *podKey) int {
	if c, ok := notFoundFirst(a, b); ok {
		return c
	}
	return b.usage.Cmp(a.usage)
}

func cmpProcs(a, b *podKey) int {
	if c, ok := notFoundFirst(a, b); ok {
		return c
	}
	return int(b.procs - a.procs)
}

func priorityOf(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// RequestOf is kubelet's GetResourceRequestQuantity for eviction: the
// pod-level request when the pod sets pod-level resources (PodLevelResources
// is on in v1.37), else the sum of its containers' (init containers as
// kubelet's PodRequests takes them), plus the pod overhead when that sum
// is not zero.
func RequestOf(pod *corev1.Pod, name corev1.ResourceName) resource.Quantity {
	q := resource.Quantity{Format: resource.DecimalSI}
	switch name {
	case corev1.ResourceMemory, corev1.ResourceStorage, corev1.ResourceEphemeralStorage:
		q = resource.Quantity{Format: resource.BinarySI}
	}
	podLevel := resourcehelper.IsPodLevelResourcesSet(pod)
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{SkipContainerLevelResources: podLevel, ExcludeOverhead: true})
	if r, ok := reqs[name]; ok {
		q.Add(r)
	}
	if pod.Spec.Overhead != nil {
		if o, ok := pod.Spec.Overhead[name]; ok && !q.IsZero() {
			q.Add(o)
		}
	}
	return q
}

func workingSet(m *statsapi.MemoryStats) resource.Quantity {
	if m == nil || m.WorkingSetBytes == nil {
		return resource.Quantity{Format: resource.BinarySI}
	}
	return *resource.NewQuantity(int64(*m.WorkingSetBytes), resource.BinarySI)
}

// RankMemoryPressure is kubelet's rankMemoryPressure: pods with no stats
// first, then those whose working set exceeds their memory request, then
// by priority (lowest first), then by working set above the request
// (largest first). It sorts with sort.Sort and kubelet's comparisons, so
// ties end in kubelet's order.
func RankMemoryPressure(pods []*corev1.Pod, stats PodStatsFunc) {
	keys := make([]podKey, len(pods))
	for i, pod := range pods {
		k := &keys[i]
		k.priority = priorityOf(pod)
		s, ok := stats(pod)
		if !ok {
			continue
		}
		k.found = true
		use := workingSet(s.Memory)
		req := RequestOf(pod, corev1.ResourceMemory)
		k.exceeds = use.Cmp(req) == 1
		use.Sub(req)
		k.usage = use
	}
	sort.Sort(&ranked{pods: pods, keys: keys, less: lessChain(cmpExceeds, cmpPriority, cmpUsage)})
}

// RankPIDPressure is kubelet's rankPIDPressure: by priority (lowest
// first), then pods with no stats, then by process count (largest first).
func RankPIDPressure(pods []*corev1.Pod, stats PodStatsFunc) {
	keys := make([]podKey, len(pods))
	for i, pod := range pods {
		k := &keys[i]
		k.priority = priorityOf(pod)
		s, ok := stats(pod)
		if !ok {
			continue
		}
		k.found = true
		if s.ProcessStats != nil && s.ProcessStats.ProcessCount != nil {
			k.procs = *s.ProcessStats.ProcessCount
		}
	}
	sort.Sort(&ranked{pods: pods, keys: keys, less: lessChain(cmpPriority, cmpProcs)})
}

// RankDiskPressure is kubelet's rankDiskPressureFunc: pods with no stats
// first, then those whose use of res (ephemeral-storage or inodes, summed
// over the parts measured) exceeds their request of res, then by priority,
// then by use above the ephemeral-storage request (kubelet subtracts the
// ephemeral-storage request for inodes too), largest first.
func RankDiskPressure(pods []*corev1.Pod, stats PodStatsFunc, measure []FsStatsType, res corev1.ResourceName) {
	keys := make([]podKey, len(pods))
	for i, pod := range pods {
		k := &keys[i]
		k.priority = priorityOf(pod)
		s, ok := stats(pod)
		if !ok {
			continue
		}
		k.found = true
		bytes, inodes := PodDiskUsage(s, pod, measure)
		use := bytes
		if res != corev1.ResourceEphemeralStorage {
			use = inodes
			if res != ResourceInodes {
				use = resource.Quantity{}
			}
		}
		k.exceeds = use.Cmp(RequestOf(pod, res)) == 1
		use.Sub(RequestOf(pod, corev1.ResourceEphemeralStorage))
		k.usage = use
	}
	sort.Sort(&ranked{pods: pods, keys: keys, less: lessChain(cmpExceeds, cmpPriority, cmpUsage)})
}

func fsUsed(f *statsapi.FsStats) (bytes, inodes int64) {
	if f == nil {
		return 0, 0
	}
	if f.UsedBytes != nil {
		bytes = int64(*f.UsedBytes)
	}
	if f.InodesUsed != nil {
		inodes = int64(*f.InodesUsed)
	}
	return bytes, inodes
}

func has(list []FsStatsType, t FsStatsType) bool {
	for _, x := range list {
		if x == t {
			return true
		}
	}
	return false
}

// PodDiskUsage is kubelet's podDiskUsage: the bytes and inodes a pod uses
// in the parts measured — containers' writable layers and logs, and its
// local volumes (hostPath, emptyDir on disk, gitRepo, configMap) by name.
func PodDiskUsage(s statsapi.PodStats, pod *corev1.Pod, measure []FsStatsType) (bytes, inodes resource.Quantity) {
	var b, n int64
	root, logs := has(measure, FsStatsRoot), has(measure, FsStatsLogs)
	for _, c := range s.Containers {
		if root {
			x, y := fsUsed(c.Rootfs)
			b, n = b+x, n+y
		}
		if logs {
			x, y := fsUsed(c.Logs)
			b, n = b+x, n+y
		}
	}
	if has(measure, FsStatsLocalVolumeSource) {
		for _, v := range pod.Spec.Volumes {
			if !isLocalVolume(v) {
				continue
			}
			for i := range s.VolumeStats {
				if s.VolumeStats[i].Name == v.Name {
					x, y := fsUsed(&s.VolumeStats[i].FsStats)
					b, n = b+x, n+y
					break
				}
			}
		}
	}
	return *resource.NewQuantity(b, resource.BinarySI), *resource.NewQuantity(n, resource.DecimalSI)
}

// isLocalVolume is kubelet's localVolumeNames test.
func isLocalVolume(v corev1.Volume) bool {
	return v.HostPath != nil || v.GitRepo != nil || v.ConfigMap != nil ||
		(v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumDefault)
}
