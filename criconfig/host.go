package criconfig

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	netutils "k8s.io/utils/net"

	"github.com/podstart/podstart/internal/hostinfo"
)

// FromHost fills the zero fields of n that kubelet reads from the machine
// it runs on: memory capacity (/proc/meminfo), huge page sizes
// (/sys/kernel/mm/hugepages), the cgroup hierarchy (the filesystem type
// of /sys/fs/cgroup, as runc's IsCgroup2UnifiedMode) and swap accounting,
// the content of n.ResolvConf, the node's IPs (HostIPs: as kubelet's node
// address setter without --node-ip: n.Name when it is an IP, else the
// first usable address the node name or hostname resolves to, IPv4
// first, else the address of the default route's interface) and its
// allocatable resources (Allocatable: kubelet's capacity minus its default
// reservations, see HostAllocatable). It is the one function here that
// reads the disk; everything else is pure. A fact it cannot read stays
// zero, and what needs it is refused (ErrUnknownNodeFact), never guessed.
func FromHost(n Node) Node {
	if n.MemoryCapacity == 0 {
		n.MemoryCapacity = hostinfo.Meminfo("MemTotal:")
	}
	if n.HugePageSizes == nil {
		n.HugePageSizes = hugePageSizes()
	}
	if !n.CgroupV2 {
		n.CgroupV2 = cgroup2Unified()
	}
	if !n.SwapController {
		p := "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"
		if n.CgroupV2 {
			p = "/sys/fs/cgroup/memory.swap.max"
		}
		_, err := os.Stat(p)
		n.SwapController = err == nil
	}
	if n.MaskedPaths == nil {
		n.MaskedPaths = append([]string(nil), DefaultMaskedPaths...)
		for _, cpu := range possibleCPUs() {
			p := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/thermal_throttle", cpu)
			if _, err := os.Stat(p); err == nil {
				n.MaskedPaths = append(n.MaskedPaths, p)
			}
		}
	}
	if n.ResolvConfContent == nil && n.resolvConf() != "" {
		if b, err := os.ReadFile(n.resolvConf()); err == nil {
			n.ResolvConfContent = b
		}
	}
	if n.HostIPs == nil {
		if ip := hostIP(n.Name); ip != nil {
			n.HostIPs = []string{ip.String()}
		}
	}
	if n.Allocatable == nil {
		n.Allocatable = HostAllocatable(n.rootDir(), n.MemoryCapacity, n.HugePageSizes)
	}
	return n
}

// cgroup2Unified reports whether /sys/fs/cgroup is the cgroup v2
// filesystem (runc's IsCgroup2UnifiedMode, kubelet's test).
func cgroup2Unified() bool {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return false
	}
	return st.Type == unix.CGROUP2_SUPER_MAGIC
}

// hostIP is kubelet's node IP without --node-ip and without a cloud
// provider (nodestatus.NodeAddress): the node name when it is an IP;
// else the first address the name resolves to that is a usable node IP
// (not loopback, multicast, link-local or unspecified, and on one of this
// host's interfaces), IPv4 preferred; else the address of the interface
// of the default route. name "" is this host's name, lower-cased, as
// kubelet's default node name. nil when none is found.
func hostIP(name string) net.IP {
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil
		}
		name = strings.ToLower(strings.TrimSpace(h))
	}
	if ip := netutils.ParseIPSloppy(name); ip != nil {
		return ip
	}
	var found net.IP
	addrs, _ := net.LookupIP(name)
	for _, a := range addrs {
		if !usableNodeIP(a) {
			continue
		}
		if a.To4() != nil {
			return a
		}
		if found == nil {
			found = a
		}
	}
	if found != nil {
		return found
	}
	ip, err := utilnet.ResolveBindAddress(nil)
	if err != nil || ip == nil || ip.IsUnspecified() {
		return nil
	}
	return ip
}

// usableNodeIP is kubelet's validateNodeIP.
func usableNodeIP(ip net.IP) bool { return hostinfo.ValidateNodeIP(ip) == nil }

// Kubelet's default evictionHard thresholds that reserve capacity
// (pkg/kubelet/eviction defaults_linux.go): memory.available<100Mi and
// nodefs.available<10%.
const (
	defaultEvictionMemory = 100 << 20
	// defaultEvictionNodeFS is kubelet's 10%, a float32 there.
	defaultEvictionNodeFS = float32(0.1)
)

// HostAllocatable is the node allocatable kubelet v1.37.2 reports in its
// default configuration (no kube-reserved or system-reserved) on this
// host: cpu, the logical CPUs (/proc/cpuinfo, as cAdvisor; the Go
// runtime's count if unreadable); memory, memoryCapacity less the default
// hard eviction threshold of 100Mi and less the pre-allocated huge pages;
// each huge page size at its pre-allocated amount; ephemeral-storage, the
// size of the filesystem holding rootDir (statfs of it, or of its nearest
// existing parent before it is made) less the default 10% nodefs
// threshold. A resource it cannot read is left out (memoryCapacity 0:
// no memory).
func HostAllocatable(rootDir string, memoryCapacity int64, hugePageSizes []int64) corev1.ResourceList {
	a := corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewMilliQuantity(int64(hostinfo.NumCPUs())*1000, resource.DecimalSI),
	}
	var huge int64
	for _, size := range hugePageSizes {
		n, err := readInt(fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", size/1024))
		if err != nil {
			continue
		}
		q := resource.NewQuantity(size, resource.BinarySI)
		a[corev1.ResourceName(corev1.ResourceHugePagesPrefix+q.String())] = *resource.NewQuantity(size*n, resource.BinarySI)
		huge += size * n
	}
	if memoryCapacity > 0 {
		a[corev1.ResourceMemory] = *resource.NewQuantity(max(memoryCapacity-defaultEvictionMemory-huge, 0), resource.BinarySI)
	}
	if fs := hostinfo.FSCapacity(rootDir); fs > 0 {
		reserved := int64(float64(fs) * float64(defaultEvictionNodeFS))
		a[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(max(fs-reserved, 0), resource.BinarySI)
	}
	return a
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// hugePageSizes lists the node's huge page sizes in directory order, not
// sorted: runc's HugePageSizes (kubelet's source for hugepage_limits) reads
// them so, and the order shows in the CRI request.
func hugePageSizes() []int64 {
	d, err := os.Open("/sys/kernel/mm/hugepages")
	if err != nil {
		return []int64{}
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return []int64{}
	}
	sizes := []int64{}
	for _, name := range names {
		s, ok := strings.CutPrefix(name, "hugepages-")
		if !ok {
			continue
		}
		if kb, err := strconv.ParseInt(strings.TrimSuffix(s, "kB"), 10, 64); err == nil {
			sizes = append(sizes, kb*1024)
		}
	}
	return sizes
}

// possibleCPUs reads /sys/devices/system/cpu/possible ("0-3,8"), as
// kubelet does for the thermal_throttle paths.
func possibleCPUs() []int {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return nil
	}
	var cpus []int
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		start, err := strconv.Atoi(lo)
		if err != nil {
			return nil
		}
		end := start
		if isRange {
			if end, err = strconv.Atoi(hi); err != nil {
				return nil
			}
		}
		for c := start; c <= end; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
