package cgroups

import (
	"math"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/podstart/podstart/criconfig"
)

// CPU and huge page constants of kubelet's cgroup manager.
const (
	// MinShares is the kernel's least cpu.shares, the BestEffort tier's.
	MinShares = 2
	// DefaultCPUPeriod is kubelet's default cpuCFSQuotaPeriod, in µs.
	DefaultCPUPeriod = 100000
	// UnboundedHugePages is the limit the QoS tiers get for every huge page
	// size (1<<62 bytes).
	UnboundedHugePages = int64(1) << 62
)

// PIDs is the resource name of process IDs in a node's internal capacity
// (kubelet's pidlimit.PIDs).
const PIDs corev1.ResourceName = "pid"

// cgroup v2 memory protection files (KEP-2570 MemoryQoS).
const (
	memoryMin  = "memory.min"
	memoryLow  = "memory.low"
	memoryHigh = "memory.high"
)

// ResourceConfig is the values one cgroup gets, kubelet's ResourceConfig.
// A nil field leaves the cgroup's file as it is.
type ResourceConfig struct {
	// CPUShares is cgroup v1's cpu.shares; cgroup v2's cpu.weight is
	// derived from it (CPUWeight).
	CPUShares *uint64
	// CPUQuota and CPUPeriod are the CFS quota and period in µs (v1
	// cpu.cfs_quota_us and cpu.cfs_period_us, v2 cpu.max); a quota of -1
	// is no limit.
	CPUQuota  *int64
	CPUPeriod *uint64
	// Memory is the memory limit in bytes (v1 memory.limit_in_bytes, v2
	// memory.max); -1 is no limit.
	Memory *int64
	// PidsLimit is pids.max (0 and below: "max").
	PidsLimit *int64
	// HugePageLimit is the limit in bytes by page size in bytes; sizes of
	// the node it lacks get 0, as kubelet's.
	HugePageLimit map[int64]int64
	// Unified are cgroup v2 files written as they are (memory.min,
	// memory.low, memory.high); ignored on cgroup v1, as kubelet does.
	Unified map[string]string
}

// PodOptions are the node settings ResourceConfigForPod depends on.
type PodOptions struct {
	// DisableCPUQuota is kubelet's cpuCFSQuota: false (the quota is -1,
	// no limit). Kubelet also disables it for pods with exclusive CPUs of
	// the static CPU manager, which podstart does not have.
	DisableCPUQuota bool
	// CPUPeriod is kubelet's cpuCFSQuotaPeriod in µs (0: 100000).
	CPUPeriod uint64
	// MemoryQoS is kubelet's enforceMemoryQoS: its MemoryQoS feature gate
	// on a cgroup v2 node.
	MemoryQoS bool
	// MemoryReservationPolicy is kubelet's memoryReservationPolicy
	// (criconfig.MemoryReservationNone or criconfig.MemoryReservationTiered).
	MemoryReservationPolicy string
}

// ResourceConfigForPod is kubelet v1.37.2's ResourceConfigForPod (with
// its default feature gates): the values of the pod's cgroup. CPU shares
// from the pod's CPU request (init containers at their peak, overhead
// and pod-level resources included); for Guaranteed pods, the CFS quota
// from the CPU limit and the memory limit; for Burstable pods the quota
// only when every container declares a CPU limit (or the pod does), the
// memory limit likewise (criconfig.PodMemoryLimit); BestEffort pods get 2
// shares only. Huge pages are limited at their requests. With MemoryQoS
// and the TieredReservation policy, memory.min (Guaranteed) or memory.low
// (Burstable) at the memory request.
func ResourceConfigForPod(pod *corev1.Pod, opts PodOptions) ResourceConfig {
	period := opts.CPUPeriod
	if period == 0 {
		period = DefaultCPUPeriod
	}
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})

	shares := uint64(criconfig.MilliCPUToShares(reqs.Cpu().MilliValue()))
	quota := criconfig.MilliCPUToQuota(limits.Cpu().MilliValue(), int64(period))
	if opts.DisableCPUQuota {
		quota = -1
	}
	class := criconfig.QOSClass(pod)
	var rc ResourceConfig
	switch class {
	case corev1.PodQOSGuaranteed, corev1.PodQOSBurstable:
		rc.CPUShares = &shares
		if class == corev1.PodQOSGuaranteed || cpuLimitsDeclared(pod) {
			rc.CPUQuota, rc.CPUPeriod = &quota, &period
		}
		if mem, ok := criconfig.PodMemoryLimit(pod); ok {
			rc.Memory = &mem
		}
	default:
		s := uint64(MinShares)
		rc.CPUShares = &s
	}
	rc.HugePageLimit = HugePageLimits(reqs)
	if opts.MemoryQoS && opts.MemoryReservationPolicy == criconfig.MemoryReservationTiered {
		if req := reqs.Memory().Value(); req > 0 {
			key := memoryLow
			if class == corev1.PodQOSGuaranteed {
				key = memoryMin
			}
			rc.Unified = map[string]string{key: strconv.FormatInt(req, 10)}
		}
	}
	return rc
}

// cpuLimitsDeclared: every init and app container has a CPU limit, or the
// pod has a pod-level one.
func cpuLimitsDeclared(pod *corev1.Pod) bool {
	if resourcehelper.IsPodLevelResourcesSet(pod) && !pod.Spec.Resources.Limits.Cpu().IsZero() {
		return true
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Resources.Limits.Cpu().IsZero() {
				return false
			}
		}
	}
	return true
}

// HugePageLimits is kubelet's HugePageLimits: the hugepages-<size>
// resources of l summed by page size in bytes (an unparsable size counts
// as size 0, as kubelet's).
func HugePageLimits(l corev1.ResourceList) map[int64]int64 {
	out := map[int64]int64{}
	for name, q := range l {
		s, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		var size int64
		if sz, err := resource.ParseQuantity(s); err == nil {
			size = sz.Value()
		}
		out[size] += q.Value()
	}
	return out
}

// MemoryHigh is kubelet's pod-level memory.high (KEP-2570, with
// PodLevelResources): for a pod with pod-level resources whose memory
// limits are declared, request + (limit − request) × factor rounded down
// to pageSize, when that is above the request; "" otherwise (also for
// request = limit).
func MemoryHigh(pod *corev1.Pod, factor float64, pageSize int64) string {
	if !resourcehelper.IsPodLevelResourcesSet(pod) {
		return ""
	}
	declared := !pod.Spec.Resources.Limits.Memory().IsZero()
	if !declared {
		declared = true
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if list[i].Resources.Limits.Memory().IsZero() {
					declared = false
				}
			}
		}
	}
	if !declared {
		return ""
	}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limit, req := limits.Memory().Value(), reqs.Memory().Value()
	if req == limit && req != 0 || limit == 0 {
		return ""
	}
	if pageSize <= 0 {
		pageSize = int64(os.Getpagesize())
	}
	high := int64(math.Floor(float64(req)+(float64(limit)-float64(req))*factor)/float64(pageSize)) * pageSize
	if high > 0 && high > req {
		return strconv.FormatInt(high, 10)
	}
	return ""
}

// CPUWeight is kubelet's cgroup v2 conversion of cpu.shares [2, 262144]
// to cpu.weight [1, 10000].
func CPUWeight(shares uint64) uint64 {
	if shares >= 262144 {
		return 10000
	}
	if shares < MinShares {
		shares = MinShares
	}
	return 1 + ((shares-2)*9999)/262142
}

// BurstableCPUShares is the Burstable tier's cpu.shares, kubelet's
// setCPUCgroupConfig: the shares of the summed CPU requests of the
// Burstable pods among active.
func BurstableCPUShares(active []*corev1.Pod) uint64 {
	var milli int64
	reuse := make(corev1.ResourceList, 4)
	for _, pod := range active {
		if criconfig.QOSClass(pod) != corev1.PodQOSBurstable {
			continue
		}
		req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{Reuse: reuse})
		milli += req.Cpu().MilliValue()
	}
	return uint64(criconfig.MilliCPUToShares(milli))
}

// QOSMemoryRequests sums the memory requests of the Guaranteed and the
// Burstable pods among active (kubelet's getQoSMemoryRequests, for the
// TieredReservation memory protection of cgroup v2).
func QOSMemoryRequests(active []*corev1.Pod) (guaranteed, burstable int64) {
	reuse := make(corev1.ResourceList, 4)
	for _, pod := range active {
		class := criconfig.QOSClass(pod)
		if class == corev1.PodQOSBestEffort {
			continue
		}
		reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{Reuse: reuse})
		req := reqs.Memory().Value()
		if class == corev1.PodQOSGuaranteed {
			guaranteed += req
		} else {
			burstable += req
		}
	}
	return guaranteed, burstable
}

// EvictionThreshold is a hard eviction threshold (operator "<") as far as
// it reserves capacity: memory.available and nodefs.available reserve
// their quantity (or percentage of the capacity); other signals none.
type EvictionThreshold struct {
	Signal     string
	Quantity   *resource.Quantity
	Percentage float32
}

// DefaultHardEviction are kubelet's default hard thresholds that reserve
// capacity on Linux: memory.available<100Mi, nodefs.available<10%.
func DefaultHardEviction() []EvictionThreshold {
	q := resource.MustParse("100Mi")
	return []EvictionThreshold{
		{Signal: "memory.available", Quantity: &q},
		{Signal: "nodefs.available", Percentage: 0.1},
	}
}

// Reservation is kubelet's GetNodeAllocatableReservation: for each
// resource of capacity, system-reserved + kube-reserved + what the hard
// eviction thresholds keep (memory, ephemeral-storage); zeros left out.
// capacity − Reservation is the allocatable the node reports
// (nodestatus.MachineConfig.Reserved takes it).
func Reservation(capacity, systemReserved, kubeReserved corev1.ResourceList, hard []EvictionThreshold) corev1.ResourceList {
	evict := corev1.ResourceList{}
	for _, t := range hard {
		var name corev1.ResourceName
		switch t.Signal {
		case "memory.available":
			name = corev1.ResourceMemory
		case "nodefs.available":
			name = corev1.ResourceEphemeralStorage
		default:
			continue
		}
		if t.Quantity != nil {
			evict[name] = t.Quantity.DeepCopy()
			continue
		}
		c := capacity[name]
		evict[name] = *resource.NewQuantity(int64(float64(c.Value())*float64(t.Percentage)), resource.BinarySI)
	}
	out := corev1.ResourceList{}
	for k := range capacity {
		v := resource.NewQuantity(0, resource.DecimalSI)
		v.Add(systemReserved[k])
		v.Add(kubeReserved[k])
		v.Add(evict[k])
		if !v.IsZero() {
			out[k] = *v
		}
	}
	return out
}

// EnforcedAllocatable is the node allocatable kubelet enforces on the
// kubepods cgroup (getNodeAllocatableInternalAbsolute): each resource of
// the internal capacity (capacity with PIDs) less system-reserved and
// kube-reserved, at least 0. Hard eviction thresholds are not taken off
// here: kubelet leaves them inside kubepods, for the eviction manager.
func EnforcedAllocatable(internalCapacity, systemReserved, kubeReserved corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(internalCapacity))
	for k, v := range internalCapacity {
		v = v.DeepCopy()
		if q, ok := systemReserved[k]; ok {
			v.Sub(q)
		}
		if q, ok := kubeReserved[k]; ok {
			v.Sub(q)
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[k] = v
	}
	return out
}

// NodeAllocatableConfig is kubelet's getCgroupConfig for the kubepods
// cgroup: memory, cpu shares, pids and huge pages of the allocatable.
func NodeAllocatableConfig(allocatable corev1.ResourceList) ResourceConfig {
	var rc ResourceConfig
	if q, ok := allocatable[corev1.ResourceMemory]; ok {
		v := q.Value()
		rc.Memory = &v
	}
	if q, ok := allocatable[corev1.ResourceCPU]; ok {
		v := uint64(criconfig.MilliCPUToShares(q.MilliValue()))
		rc.CPUShares = &v
	}
	if q, ok := allocatable[PIDs]; ok {
		v := q.Value()
		rc.PidsLimit = &v
	}
	rc.HugePageLimit = HugePageLimits(allocatable)
	return rc
}
