package criconfig

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstart/podstart/internal/hostinfo"
)

// hasDefaultRoute reads /proc/net/route for a 0.0.0.0 destination.
func hasDefaultRoute() bool {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "00000000" {
			return true
		}
	}
	return false
}

func TestFromHostNodeFacts(t *testing.T) {
	t.Run("explicit facts are kept", func(t *testing.T) {
		alloc := rl("cpu", "3")
		n := FromHost(Node{HostIPs: []string{"198.51.100.7"}, Allocatable: alloc})
		if len(n.HostIPs) != 1 || n.HostIPs[0] != "198.51.100.7" || len(n.Allocatable) != 1 {
			t.Fatalf("FromHost replaced explicit facts: %v %v", n.HostIPs, n.Allocatable)
		}
	})
	t.Run("a node name that is an IP is the node IP", func(t *testing.T) {
		if got := FromHost(Node{Name: "198.51.100.9"}).HostIPs; len(got) != 1 || got[0] != "198.51.100.9" {
			t.Fatalf("HostIPs = %v", got)
		}
	})
	t.Run("this host's IP", func(t *testing.T) {
		n := FromHost(Node{})
		if hasDefaultRoute() && len(n.HostIPs) == 0 {
			t.Fatal("no host IP found on a host with a default route")
		}
		for _, s := range n.HostIPs {
			if ip := net.ParseIP(s); ip == nil || !usableNodeIP(ip) {
				t.Fatalf("host IP %q is not an address of this host's interfaces", s)
			}
		}
	})
	t.Run("cgroup version from the filesystem type", func(t *testing.T) {
		_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
		if got := FromHost(Node{}).CgroupV2; got != (err == nil) {
			t.Fatalf("CgroupV2 = %v, but cgroup.controllers at the root: %v", got, err == nil)
		}
	})
	t.Run("allocatable is capacity less kubelet's default reservations", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "not", "made", "yet")
		n := FromHost(Node{RootDir: root})
		a := n.Allocatable
		if cpu := a[corev1.ResourceCPU]; cpu.MilliValue() != int64(hostinfo.NumCPUs())*1000 || cpu.MilliValue() <= 0 {
			t.Fatalf("cpu %v, want %d cores", cpu.String(), hostinfo.NumCPUs())
		}
		if n.MemoryCapacity <= 0 {
			t.Fatal("memory capacity not read")
		}
		var huge int64
		for name, q := range a {
			if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				huge += q.Value()
			}
		}
		if mem := a[corev1.ResourceMemory]; mem.Value() != n.MemoryCapacity-100<<20-huge {
			t.Fatalf("memory %d, want capacity %d - 100Mi - huge pages %d", mem.Value(), n.MemoryCapacity, huge)
		}
		fs := hostinfo.FSCapacity(root)
		if st := a[corev1.ResourceEphemeralStorage]; fs <= 0 || st.Value() != fs-int64(float64(fs)*float64(float32(0.1))) {
			t.Fatalf("ephemeral-storage %d of a %d-byte filesystem, want 90%%", st.Value(), fs)
		}
	})
	t.Run("unknown memory capacity leaves memory out", func(t *testing.T) {
		a := HostAllocatable(t.TempDir(), 0, nil)
		if _, ok := a[corev1.ResourceMemory]; ok {
			t.Fatalf("memory allocatable without a capacity: %v", a)
		}
		if _, ok := a[corev1.ResourceCPU]; !ok {
			t.Fatal("no cpu")
		}
	})
	t.Run("a hugepages-<size> resource per page size, named as kubelet names it", func(t *testing.T) {
		n := FromHost(Node{})
		for _, size := range n.HugePageSizes {
			name := corev1.ResourceName(corev1.ResourceHugePagesPrefix + resource.NewQuantity(size, resource.BinarySI).String())
			if _, ok := n.Allocatable[name]; !ok {
				t.Fatalf("no %s in %v", name, n.Allocatable)
			}
		}
	})
}
