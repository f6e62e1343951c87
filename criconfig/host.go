package criconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// FromHost fills the zero fields of n that kubelet reads from the machine
// it runs on: memory capacity (/proc/meminfo), huge page sizes
// (/sys/kernel/mm/hugepages), the cgroup hierarchy and swap accounting
// (/sys/fs/cgroup), and the content of n.ResolvConf. It is the one
// function here that reads the disk; everything else is pure.
func FromHost(n Node) Node {
	if n.MemoryCapacity == 0 {
		n.MemoryCapacity = memTotal()
	}
	if n.HugePageSizes == nil {
		n.HugePageSizes = hugePageSizes()
	}
	if !n.CgroupV2 {
		_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
		n.CgroupV2 = err == nil
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
	if n.ResolvConfContent == nil && n.ResolvConf != "" {
		if b, err := os.ReadFile(n.ResolvConf); err == nil {
			n.ResolvConfContent = b
		}
	}
	return n
}

func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
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
