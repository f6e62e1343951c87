package criconfig

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CPU constants of kubelet's cgroup manager (pkg/kubelet/cm).
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	milliPerCPU   = 1000
	quotaPeriod   = 100000 // µs, kubelet's default cpuCFSQuotaPeriod
	minQuotaValue = 1000
)

func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	return min(max(milli*sharesPerCPU/milliPerCPU, minShares), maxShares)
}

func milliCPUToQuota(milli, period int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*period/milliPerCPU, minQuotaValue)
}

// linuxResources is kubelet's calculateLinuxResources with CFS quota on
// (its default): shares from the request (the limit when there is no
// request), quota from the limit, period 100ms, the memory limit.
func linuxResources(cpuRequest, cpuLimit, memoryLimit *resource.Quantity, node Node) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	if cpuRequest == nil && cpuLimit != nil {
		r.CpuShares = milliCPUToShares(cpuLimit.MilliValue())
	} else {
		r.CpuShares = milliCPUToShares(cpuRequest.MilliValue())
	}
	r.MemoryLimitInBytes = memoryLimit.Value()
	r.CpuQuota = milliCPUToQuota(cpuLimit.MilliValue(), quotaPeriod)
	r.CpuPeriod = quotaPeriod
	if node.CgroupV2 && !node.SingleProcessOOMKill {
		r.Unified = map[string]string{"memory.oom.group": "1"}
	}
	return r
}

// containerResources is kubelet's generateLinuxContainerResources: CPU and
// memory (the pod-level limits where the container sets none), the OOM
// score by QoS class, a limit for every huge page size of the node,
// kubelet's NoSwap swap setting and, on cgroup v2, MemoryQoS.
func containerResources(pod *corev1.Pod, c *corev1.Container, node Node) (*runtimeapi.LinuxContainerResources, error) {
	var cpuRequest *resource.Quantity
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		cpuRequest = c.Resources.Requests.Cpu()
	}
	cpuLimit, memLimit := c.Resources.Limits.Cpu(), c.Resources.Limits.Memory()
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if cpuLimit.IsZero() {
			cpuLimit = pod.Spec.Resources.Limits.Cpu()
		}
		if memLimit.IsZero() {
			memLimit = pod.Spec.Resources.Limits.Memory()
		}
	}
	r := linuxResources(cpuRequest, cpuLimit, memLimit, node)
	if node.MemoryCapacity <= 0 && !isNodeCriticalPod(pod) && QOSClass(pod) == corev1.PodQOSBurstable {
		// A Burstable container's OOM score is its share of the node's
		// memory; kubelet always knows it (cAdvisor).
		return nil, unknownNodeFact("container %q: the OOM score of a Burstable pod needs the node's memory capacity (Node.MemoryCapacity)", c.Name)
	}
	r.OomScoreAdj = OOMScoreAdj(pod, c, node.MemoryCapacity)
	r.HugepageLimits = hugepageLimits(pod, c, node)
	if node.SwapController {
		if node.CgroupV2 {
			setUnified(r, "memory.swap.max", "0")
		} else {
			r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
		}
	}
	if node.CgroupV2 {
		if err := memoryQoS(r, pod, c, node); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func setUnified(r *runtimeapi.LinuxContainerResources, key, value string) {
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified[key] = value
}

// memoryQoS is the cgroup v2 part of kubelet v1.37's
// generateLinuxContainerResources (KEP-2570, MemoryQoS beta and on by
// default). With MemoryQoS on: memory.min or memory.low at the memory
// request under the TieredReservation policy (Guaranteed pods min,
// others low), both "0" otherwise (the None policy, kubelet's default, or
// no request); memory.high only with a throttling factor, for a container
// whose request differs from its limit (or has no request), at
// request + factor × (limit or node allocatable memory − request),
// rounded down to a page, when above the request; none when the
// container has no memory limit but the pod has a pod-level one (the pod
// cgroup throttles). With MemoryQoS off: memory.high "max", which clears a
// throttle left from when it was on.
func memoryQoS(r *runtimeapi.LinuxContainerResources, pod *corev1.Pod, c *corev1.Container, node Node) error {
	if !node.memoryQoS() {
		setUnified(r, "memory.high", "max")
		return nil
	}
	request := c.Resources.Requests.Memory().Value()
	limit := c.Resources.Limits.Memory().Value()
	switch node.MemoryReservationPolicy {
	case "", MemoryReservationNone, MemoryReservationTiered:
	default:
		return unsupported("Node.MemoryReservationPolicy %q: kubelet knows %q and %q", node.MemoryReservationPolicy, MemoryReservationNone, MemoryReservationTiered)
	}
	switch {
	case request == 0 || node.MemoryReservationPolicy != MemoryReservationTiered:
		setUnified(r, "memory.min", "0")
		setUnified(r, "memory.low", "0")
	case QOSClass(pod) == corev1.PodQOSGuaranteed:
		setUnified(r, "memory.min", strconv.FormatInt(request, 10))
	default:
		setUnified(r, "memory.low", strconv.FormatInt(request, 10))
	}
	factor := node.MemoryThrottlingFactor
	if factor == nil || request == limit && request != 0 {
		return nil
	}
	if limit == 0 && resourcehelper.IsPodLevelResourcesSet(pod) && !pod.Spec.Resources.Limits.Memory().IsZero() {
		return nil
	}
	ceiling := limit
	if ceiling == 0 {
		alloc, ok := node.Allocatable[corev1.ResourceMemory]
		if !ok || alloc.Value() <= 0 {
			return unknownNodeFact("node allocatable memory (Node.Allocatable), for memory.high of container %q (MemoryQoS with a memoryThrottlingFactor)", c.Name)
		}
		ceiling = alloc.Value()
	}
	page := node.pageSize()
	high := int64(math.Floor(float64(request)+(float64(ceiling)-float64(request))*(*factor))/float64(page)) * page
	if high != 0 && high > request {
		setUnified(r, "memory.high", strconv.FormatInt(high, 10))
	}
	return nil
}

// ContainerResources is what kubelet's generateContainerResources gives
// a container on Linux: the Linux.Resources of its CreateContainer config,
// and what an in-place resize sends with UpdateContainerResources
// (MemoryQoS included, as kubelet sends it on both).
func ContainerResources(pod *corev1.Pod, c *corev1.Container, node Node) (*runtimeapi.ContainerResources, error) {
	r, err := containerResources(pod, c, node)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerResources{Linux: r}, nil
}

// hugepageLimits is kubelet's GetHugepageLimitsFromResources: every page
// size of the node at 0, then the pod-level and the container's limits.
func hugepageLimits(pod *corev1.Pod, c *corev1.Container, node Node) []*runtimeapi.HugepageLimit {
	var out []*runtimeapi.HugepageLimit
	for _, size := range node.HugePageSizes {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: hugePageUnit(size)})
	}
	want := map[string]uint64{}
	read := func(l corev1.ResourceList) {
		for name, q := range l {
			s, ok := strings.CutPrefix(string(name), corev1.ResourceHugePagesPrefix)
			if !ok {
				continue
			}
			size, err := resource.ParseQuantity(s)
			if err != nil || size.Value() <= 0 {
				continue
			}
			want[hugePageUnit(size.Value())] = uint64(q.Value())
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		read(pod.Spec.Resources.Limits)
	}
	read(c.Resources.Limits)
	for _, l := range out {
		if v, ok := want[l.PageSize]; ok {
			l.Limit = v
		}
	}
	return out
}

// hugePageUnit is kubelet's HugePageUnitSizeFromByteSize: 2097152 → "2MB".
func hugePageUnit(size int64) string {
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(hugePageUnits)-1 {
		size /= 1024
		i++
	}
	return strconv.FormatInt(size, 10) + hugePageUnits[i]
}

var hugePageUnits = [...]string{"B", "KB", "MB", "GB", "TB", "PB"}

// sandboxResources is kubelet's calculateSandboxResources: the pod's
// effective requests and limits without overhead.
func sandboxResources(pod *corev1.Pod, node Node) *runtimeapi.LinuxContainerResources {
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	req := resourcehelper.PodRequests(pod, opts)
	lim := resourcehelper.PodLimits(pod, opts)
	var cpuRequest *resource.Quantity
	if _, ok := req[corev1.ResourceCPU]; ok {
		cpuRequest = req.Cpu()
	}
	return linuxResources(cpuRequest, lim.Cpu(), lim.Memory(), node)
}

// overheadResources is kubelet's convertOverheadToLinuxResources.
func overheadResources(pod *corev1.Pod, node Node) *runtimeapi.LinuxContainerResources {
	if pod.Spec.Overhead == nil {
		return &runtimeapi.LinuxContainerResources{}
	}
	cpu, mem := pod.Spec.Overhead.Cpu(), pod.Spec.Overhead.Memory()
	return linuxResources(cpu, cpu, mem, node)
}

// CgroupParent is kubelet's GetPodCgroupParent: with cgroupsPerQOS (its
// default) the pod's cgroup under its QoS class (cgroupfs:
// /kubepods/burstable/pod<uid>; systemd: the same as slices); without it,
// the cgroup root.
func CgroupParent(pod *corev1.Pod, node Node) string {
	if !node.cgroupsPerQOS() {
		if node.CgroupRoot == "/" {
			return ""
		}
		return node.CgroupRoot
	}
	parts := []string{}
	if root := strings.Trim(node.CgroupRoot, "/"); root != "" {
		parts = strings.Split(root, "/")
	}
	parts = append(parts, "kubepods")
	switch QOSClass(pod) {
	case corev1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case corev1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	}
	parts = append(parts, "pod"+string(pod.UID))
	if node.CgroupDriver != "systemd" {
		return "/" + strings.Join(parts, "/")
	}
	// systemd: every prefix becomes a slice, dashes escaped.
	var b strings.Builder
	prefix := ""
	for _, p := range parts {
		p = strings.ReplaceAll(p, "-", "_")
		if prefix != "" {
			prefix += "-"
		}
		prefix += p
		b.WriteString("/" + prefix + ".slice")
	}
	return b.String()
}
