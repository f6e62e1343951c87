package criconfig

import (
	"fmt"
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
// score by QoS class, a limit for every huge page size of the node, and
// kubelet's NoSwap swap setting.
func containerResources(pod *corev1.Pod, c *corev1.Container, node Node) *runtimeapi.LinuxContainerResources {
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
	r.OomScoreAdj = OOMScoreAdj(pod, c, node.MemoryCapacity)
	r.HugepageLimits = hugepageLimits(pod, c, node)
	if node.SwapController {
		if node.CgroupV2 {
			if r.Unified == nil {
				r.Unified = map[string]string{}
			}
			r.Unified["memory.swap.max"] = "0"
		} else {
			r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
		}
	}
	return r
}

// ContainerResources is what kubelet's generateContainerResources gives
// a container on Linux: the Linux.Resources of its CreateContainer config,
// and what an in-place resize sends with UpdateContainerResources.
func ContainerResources(pod *corev1.Pod, c *corev1.Container, node Node) *runtimeapi.ContainerResources {
	return &runtimeapi.ContainerResources{Linux: containerResources(pod, c, node)}
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
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", size, units[i])
}

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
