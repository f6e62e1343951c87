package stats

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on every Linux
// architecture kubelet runs on).
const userHZ = 100

// nodeCPUKey keys the node's CPU samples beside the containers'.
const nodeCPUKey = "/"

// host is what the node's own files say, each nil when unreadable.
type host struct {
	bootTime metav1.Time
	cpu      *statsapi.CPUStats
	memory   *statsapi.MemoryStats
	swap     *statsapi.SwapStats
	network  *statsapi.NetworkStats
	io       *statsapi.IOStats
}

func (p *Provider) readHost(now time.Time, update bool, layout cgroupLayout) host {
	t := metav1.NewTime(now)
	h := host{network: p.nodeNetwork(t)}
	var kb map[string]uint64
	if b, err := os.ReadFile(filepath.Join(p.procDir, "meminfo")); err == nil {
		kb = meminfo(b)
	}
	h.memory = nodeMemory(kb, t)
	pr := pressureOf(filepath.Join(p.procDir, "pressure"), true)
	if h.memory != nil {
		h.memory.PSI = pr.memory
		nodeMemoryStat(h.memory, layout)
	}
	if pr.io != nil {
		h.io = &statsapi.IOStats{Time: t, PSI: pr.io}
	}
	if total, ok := kb["SwapTotal"]; ok {
		if free := kb["SwapFree"]; free <= total {
			h.swap = &statsapi.SwapStats{Time: t, SwapUsageBytes: ptrTo(total - free), SwapAvailableBytes: ptrTo(free)}
		}
	}
	if b, err := os.ReadFile(filepath.Join(p.procDir, "stat")); err == nil {
		usage, boot, hasUsage, hasBoot := procStat(b)
		if hasBoot {
			h.bootTime = metav1.NewTime(time.Unix(boot, 0))
		}
		if hasUsage {
			h.cpu = &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: ptrTo(usage),
				UsageNanoCores: p.nanoCores(nodeCPUKey, now.UnixNano(), usage, update), PSI: pr.cpu}
		}
	}
	return h
}

// procStat reads /proc/stat: the CPU time the node used, in nanoseconds,
// as the root cgroup's cpu.stat usage_usec counts it on cgroup v2 (user,
// nice, system, irq and softirq; not idle, iowait or steal; guest time is
// in user already), and the boot time.
func procStat(b []byte) (usage uint64, boot int64, hasUsage, hasBoot bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 8 && f[0] == "cpu":
			var ticks uint64
			for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
				n, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return 0, 0, false, false
				}
				ticks += n
			}
			usage, hasUsage = ticks*uint64(time.Second/userHZ), true
		case len(f) == 2 && f[0] == "btime":
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				boot, hasBoot = n, true
			}
		}
	}
	return usage, boot, hasUsage, hasBoot
}

// meminfo is /proc/meminfo in bytes by key.
func meminfo(b []byte) map[string]uint64 {
	kb := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			kb[k] = n * 1024
		}
	}
	return kb
}

// nodeMemory is the root cgroup's memory as cAdvisor reads it on cgroup
// v2: usage MemTotal − MemFree, working set usage − Inactive(file),
// available MemTotal − working set; nil without MemTotal and MemFree. RSS
// and page faults (the root memory.stat's) are not read.
func nodeMemory(kb map[string]uint64, t metav1.Time) *statsapi.MemoryStats {
	total, ok1 := kb["MemTotal"]
	free, ok2 := kb["MemFree"]
	if !ok1 || !ok2 || free > total {
		return nil
	}
	usage := total - free
	ws := usage
	if inactive := kb["Inactive(file)"]; inactive < ws {
		ws -= inactive
	} else {
		ws = 0
	}
	return &statsapi.MemoryStats{Time: t, AvailableBytes: ptrTo(total - ws), WorkingSetBytes: ptrTo(ws), UsageBytes: ptrTo(usage)}
}

// nodeMemoryStat fills the node's rssBytes, pageFaults and
// majorPageFaults from the root cgroup's memory.stat as cAdvisor reads
// it: anon on cgroup v2; total_rss on v1 (rss when memory.use_hierarchy
// is 0); pgfault and pgmajfault as the file has them. Left nil when the
// file cannot be read.
func nodeMemoryStat(m *statsapi.MemoryStats, layout cgroupLayout) {
	if layout.memory == "" {
		return
	}
	st := memoryStat(layout.memory)
	if st == nil {
		return
	}
	rss := "anon"
	if !layout.v2 {
		rss = "rss"
		if v, _ := readCgroupUint(layout.memory, "memory.use_hierarchy"); v == 1 {
			rss = "total_rss"
		}
	}
	// cAdvisor reads a missing key as 0.
	m.RSSBytes, m.PageFaults, m.MajorPageFaults = ptrTo(st[rss]), ptrTo(st["pgfault"]), ptrTo(st["pgmajfault"])
}

// ignoredInterface is cAdvisor's list of interfaces it leaves out of a
// container's network stats.
func ignoredInterface(name string) bool {
	for _, prefix := range []string{"lo", "veth", "docker", "nerdctl"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// defaultInterface is kubelet's network.DefaultInterfaceName.
const defaultInterface = "eth0"

// nodeNetwork is the root cgroup's network as cAdvisor reads it: the
// interfaces of /proc/1/net/dev but cAdvisor's ignored ones, eth0 as the
// default; nil when unreadable.
func (p *Provider) nodeNetwork(t metav1.Time) *statsapi.NetworkStats {
	b, err := os.ReadFile(filepath.Join(p.procDir, "1", "net", "dev"))
	if err != nil {
		return nil
	}
	out := &statsapi.NetworkStats{Time: t}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if !ok || len(f) < 16 || ignoredInterface(name) {
			continue
		}
		var v [4]uint64
		for i, col := range []int{0, 2, 8, 10} { // rx bytes, rx errs, tx bytes, tx errs
			if v[i], err = strconv.ParseUint(f[col], 10, 64); err != nil {
				return nil
			}
		}
		iface := statsapi.InterfaceStats{Name: name, RxBytes: ptrTo(v[0]), RxErrors: ptrTo(v[1]), TxBytes: ptrTo(v[2]), TxErrors: ptrTo(v[3])}
		if name == defaultInterface {
			out.InterfaceStats = iface
		}
		out.Interfaces = append(out.Interfaces, iface)
	}
	return out
}

// rlimit is kubelet's pidlimit.Stats over procDir; nil without pid_max.
func (p *Provider) rlimit(now time.Time) *statsapi.RlimitStats {
	max := int64(-1)
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		b, err := os.ReadFile(filepath.Join(p.procDir, f))
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && (max == -1 || n < max) {
			max = n
		}
	}
	if max < 0 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(p.procDir, "loadavg"))
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 5 {
		return nil
	}
	_, tasks, ok := strings.Cut(f[3], "/")
	n, err := strconv.ParseInt(tasks, 10, 64)
	if !ok || err != nil {
		return nil
	}
	return &statsapi.RlimitStats{Time: metav1.NewTime(now), MaxPID: &max, NumOfRunningProcesses: &n}
}

// cpuRecord is a kept CPU sample and the rate computed with it.
type cpuRecord struct {
	timestamp int64 // ns
	usage     uint64
	nanoCores *uint64
}

// cpuCachePeriod is how long a sample is kept (kubelet's
// defaultCachePeriod).
const cpuCachePeriod = 10 * time.Minute

// nanoCores is kubelet's getAndUpdateContainerUsageNanoCores (update) or
// getContainerUsageNanoCores: the CPU rate between the kept sample and
// this one, in nanocores.
func (p *Provider) nanoCores(id string, timestamp int64, usage uint64, update bool) *uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	cached := p.cpu[id]
	if !update {
		if cached == nil || cached.nanoCores == nil {
			return nil
		}
		return ptrTo(*cached.nanoCores)
	}
	if cached == nil || usage < cached.usage {
		p.cpu[id] = &cpuRecord{timestamp: timestamp, usage: usage}
		return nil
	}
	interval := timestamp - cached.timestamp
	if interval <= 0 { // kubelet logs "zero or negative interval" and keeps the old sample
		return nil
	}
	rate := uint64(float64(usage-cached.usage) / float64(interval) * float64(time.Second))
	p.cpu[id] = &cpuRecord{timestamp: timestamp, usage: usage, nanoCores: ptrTo(rate)}
	return ptrTo(rate)
}

// forgetOldSamples drops samples older than cpuCachePeriod (kubelet's
// cleanupOutdatedCaches).
func (p *Provider) forgetOldSamples(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, r := range p.cpu {
		if now.Sub(time.Unix(0, r.timestamp)) > cpuCachePeriod {
			delete(p.cpu, id)
		}
	}
}
