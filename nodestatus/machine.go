package nodestatus

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	netutils "k8s.io/utils/net"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/internal/hostinfo"
)

// Machine is what kubelet learns about the machine from cAdvisor and
// reports in the node status.
type Machine struct {
	// NumCores is the number of logical CPUs.
	NumCores int
	// MemoryCapacity is the machine's memory in bytes.
	MemoryCapacity int64
	// HugePages are the pre-allocated huge pages of each size.
	HugePages []HugePages
	// MachineID, SystemUUID and BootID go to the node info as they are.
	MachineID, SystemUUID, BootID string
	// EphemeralStorage is the capacity in bytes of the filesystem holding
	// kubelet's root directory; 0 reports none.
	EphemeralStorage int64
	// SwapCapacity is the machine's swap in bytes; 0 reports none.
	SwapCapacity int64
	// RunningInUserNamespace goes to the node info as it is: whether the
	// node agent runs in a user namespace (RunningInUserNamespace), nil
	// when not known.
	RunningInUserNamespace *bool
}

// HugePages is one huge page size and how many pages of it the machine has.
type HugePages struct {
	PageSize int64 // bytes
	NumPages int64
}

// Capacity is cAdvisor's CapacityFromMachineInfo: cpu (in millicores),
// memory and a hugepages-<size> resource per page size.
func (m Machine) Capacity() corev1.ResourceList {
	c := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(m.NumCores*1000), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(m.MemoryCapacity, resource.BinarySI),
	}
	for _, h := range m.HugePages {
		size := resource.NewQuantity(h.PageSize, resource.BinarySI)
		c[corev1.ResourceName(corev1.ResourceHugePagesPrefix+size.String())] = *resource.NewQuantity(h.PageSize*h.NumPages, resource.BinarySI)
	}
	return c
}

// MachineFromHost reads the machine as cAdvisor does on Linux: CPUs from
// /proc/cpuinfo, memory through criconfig.FromHost, huge pages from
// /sys/kernel/mm/hugepages, the IDs from /etc/machine-id,
// /sys/class/dmi/id/product_uuid and /proc/sys/kernel/random/boot_id,
// swap from /proc/meminfo, ephemeral storage from the filesystem of
// rootDir, and whether it runs in a user namespace (RunningInUserNamespace,
// as kubelet v1.37.2). What it cannot read stays zero.
func MachineFromHost(rootDir string) Machine {
	host := criconfig.FromHost(criconfig.Node{})
	m := Machine{NumCores: hostinfo.NumCPUs(), MemoryCapacity: host.MemoryCapacity}
	for _, size := range host.HugePageSizes {
		n, _ := readInt(fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", size/1024))
		m.HugePages = append(m.HugePages, HugePages{PageSize: size, NumPages: n})
	}
	m.MachineID = readTrimmed("/etc/machine-id")
	if m.MachineID == "" {
		m.MachineID = readTrimmed("/var/lib/dbus/machine-id")
	}
	m.SystemUUID = readTrimmed("/sys/class/dmi/id/product_uuid")
	m.BootID = readTrimmed("/proc/sys/kernel/random/boot_id")
	m.SwapCapacity = hostinfo.Meminfo("SwapTotal:")
	m.RunningInUserNamespace = RunningInUserNamespace()
	if rootDir != "" {
		m.EphemeralStorage = hostinfo.FSCapacity(rootDir)
	}
	return m
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readInt(path string) (int64, error) {
	return strconv.ParseInt(readTrimmed(path), 10, 64)
}

// ParseRuntimeVersion is how kubelet reads the runtime's version: as a
// semantic version, else a generic one, printed back without a "v".
func ParseRuntimeVersion(v string) (string, error) {
	ver, err := utilversion.ParseSemantic(v)
	if err != nil {
		if ver, err = utilversion.ParseGeneric(v); err != nil {
			return "", err
		}
	}
	return ver.String(), nil
}

func parseIP(s string) net.IP { return netutils.ParseIPSloppy(s) }

func resolveBindAddress(ip net.IP) (net.IP, error) { return utilnet.ResolveBindAddress(ip) }

// isExtendedResourceName is kubelet's v1helper.IsExtendedResourceName: a
// domain-prefixed name outside kubernetes.io, valid as a quota name.
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}
