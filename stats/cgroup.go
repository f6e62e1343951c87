package stats

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// cgroupLayout is where the node's cgroup hierarchies are: the memory
// controller's (limits, swap, memory.stat) and a cgroup v2 one (pressure
// files: the unified mount itself on cgroup v2, <root>/unified on a hybrid
// host, none on pure cgroup v1).
type cgroupLayout struct {
	v2     bool
	memory string // "" without a memory hierarchy
	psi    string // "" without a cgroup v2 hierarchy
}

func (p *Provider) cgroupLayout() cgroupLayout {
	root := p.cgroupDir
	if root == "" {
		return cgroupLayout{}
	}
	if exists(filepath.Join(root, "cgroup.controllers")) {
		return cgroupLayout{v2: true, memory: root, psi: root}
	}
	var l cgroupLayout
	if exists(filepath.Join(root, "memory", "memory.limit_in_bytes")) {
		l.memory = filepath.Join(root, "memory")
	}
	if exists(filepath.Join(root, "unified", "cgroup.controllers")) {
		l.psi = filepath.Join(root, "unified")
	}
	return l
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// podCgroup is the pod's cgroup, relative to a hierarchy's root, as kubelet
// names it with the cgroupfs driver (kubepods[/burstable|/besteffort]/pod<uid>)
// or the systemd one (kubepods.slice/kubepods[-qos].slice/kubepods[-qos]-pod<uid
// with _ for ->.slice), with kubelet's default --cgroup-root (/); "" when
// none is found.
func (l cgroupLayout) podCgroup(uid string) string {
	return l.podCgroupUnder("", uid)
}

// podCgroupUnder is podCgroup under a cgroup root (kubelet's
// --cgroup-root, "" or "/" for the top).
func (l cgroupLayout) podCgroupUnder(root, uid string) string {
	dir := l.memory
	if dir == "" {
		dir = l.psi
	}
	if dir == "" || uid == "" || strings.ContainsAny(uid, "/.") {
		return ""
	}
	su := strings.ReplaceAll(uid, "-", "_")
	for _, rel := range []string{
		"kubepods/pod" + uid,
		"kubepods/burstable/pod" + uid,
		"kubepods/besteffort/pod" + uid,
		"kubepods.slice/kubepods-pod" + su + ".slice",
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + su + ".slice",
		"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + su + ".slice",
	} {
		if r := strings.Trim(root, "/"); r != "" {
			rel = r + "/" + rel
		}
		if fi, err := os.Stat(filepath.Join(dir, rel)); err == nil && fi.IsDir() {
			return rel
		}
	}
	return ""
}

// containerCgroups maps container IDs to their cgroups (relative, as
// podCgroup) among the pod cgroup's children: <id> (cgroupfs) or
// <prefix>-<id>.scope (systemd: cri-containerd-, crio-, docker-), as
// kubelet's extractIDFromCgroupPath reads them.
func (l cgroupLayout) containerCgroups(pod string) map[string]string {
	dir := l.memory
	if dir == "" {
		dir = l.psi
	}
	if pod == "" || dir == "" {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(dir, pod))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id := e.Name()
		if s, ok := strings.CutSuffix(id, ".scope"); ok {
			id = s[strings.LastIndex(s, "-")+1:]
		}
		out[id] = pod + "/" + e.Name()
	}
	return out
}

// unlimited is kubelet's isMemoryUnlimited: above 2^62 bytes.
const unlimited = uint64(1 << 62)

// cgroupMemory is what one cgroup says of its memory, as cAdvisor reads
// it for kubelet.
type cgroupMemory struct {
	found bool
	// limit and swapLimit: cAdvisor's Spec.Memory.Limit and SwapLimit
	// (memory.max and memory.swap.max on cgroup v2, memory.limit_in_bytes
	// and memory.memsw.limit_in_bytes on v1; "max" is unlimited, a
	// missing file 0, as cAdvisor's readUInt64).
	limit, swapLimit uint64
	hasLimit         bool
	// swap is cAdvisor's Memory.Swap: memory.swap.current on v2,
	// memory.stat's total_swap (swap without hierarchy) on v1.
	swap    uint64
	hasSwap bool
}

func (l cgroupLayout) memoryOf(rel string) cgroupMemory {
	if rel == "" || l.memory == "" {
		return cgroupMemory{}
	}
	dir := filepath.Join(l.memory, rel)
	var out cgroupMemory
	if l.v2 {
		out.limit, out.hasLimit = readCgroupUint(dir, "memory.max")
		out.swapLimit, _ = readCgroupUint(dir, "memory.swap.max")
		out.swap, out.hasSwap = readCgroupUint(dir, "memory.swap.current")
	} else {
		out.limit, out.hasLimit = readCgroupUint(dir, "memory.limit_in_bytes")
		out.swapLimit, _ = readCgroupUint(dir, "memory.memsw.limit_in_bytes")
		st := memoryStat(dir)
		key := "swap"
		if v, _ := readCgroupUint(dir, "memory.use_hierarchy"); v == 1 {
			key = "total_swap"
		}
		out.swap, out.hasSwap = st[key]
		if st != nil && !out.hasSwap { // cAdvisor reads 0 without swap accounting
			out.hasSwap = true
		}
	}
	out.found = out.hasLimit
	return out
}

// available is kubelet's availableBytes: limit − working set when the
// limit is known (not above 2^62), else nil.
func (m cgroupMemory) available(workingSet *uint64) *uint64 {
	if !m.found || m.limit > unlimited {
		return nil
	}
	return ptrTo(subOrZero(m.limit, deref(workingSet)))
}

// swapAvailable is kubelet's swapAvailableBytes: swap limit − swap used
// when the swap limit is known, else nil.
func (m cgroupMemory) swapAvailable(used uint64) *uint64 {
	if !m.found || m.swapLimit > unlimited {
		return nil
	}
	return ptrTo(subOrZero(m.swapLimit, used))
}

func subOrZero(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// readCgroupUint reads a one-number cgroup file; "max" is MaxUint64 (as
// cAdvisor's readUInt64).
func readCgroupUint(dir, file string) (uint64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return ^uint64(0), true
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// memoryStat is a memory.stat file by key; nil when unreadable.
func memoryStat(dir string) map[string]uint64 {
	b, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[f[0]] = n
		}
	}
	return out
}

// pressure is a cgroup's (or /proc/pressure's) PSI for cpu, memory and io.
type pressure struct{ cpu, memory, io *statsapi.PSIStats }

// pressureOf reads dir's <resource>.pressure files (or dir/<resource> with
// proc, /proc/pressure's names).
func pressureOf(dir string, proc bool) pressure {
	name := func(r string) string {
		if proc {
			return filepath.Join(dir, r)
		}
		return filepath.Join(dir, r+".pressure")
	}
	return pressure{cpu: readPSI(name("cpu")), memory: readPSI(name("memory")), io: readPSI(name("io"))}
}

func (l cgroupLayout) pressureOf(rel string) pressure {
	if rel == "" || l.psi == "" {
		return pressure{}
	}
	return pressureOf(filepath.Join(l.psi, rel), false)
}

// readPSI parses a pressure file as runc's statPSI: "some" and "full"
// lines of avg10, avg60, avg300 (percent) and total (microseconds, kept
// as the kernel writes it: kubelet does not convert it); nil when the file
// is missing or unreadable (kernel without PSI, psi=0, or "echo 0 >
// cgroup.pressure") or malformed.
func readPSI(path string) *statsapi.PSIStats {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := &statsapi.PSIStats{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var d *statsapi.PSIData
		switch f[0] {
		case "some":
			d = &out.Some
		case "full":
			d = &out.Full
		default:
			continue
		}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil
			}
			var err error
			switch k {
			case "avg10":
				d.Avg10, err = strconv.ParseFloat(v, 64)
			case "avg60":
				d.Avg60, err = strconv.ParseFloat(v, 64)
			case "avg300":
				d.Avg300, err = strconv.ParseFloat(v, 64)
			case "total":
				d.Total, err = strconv.ParseUint(v, 10, 64)
			}
			if err != nil {
				return nil
			}
		}
	}
	return out
}

// criPSI is kubelet's makePSIStats: CRI's PSI as the Summary's; nil
// without.
func criPSI(s *runtimeapi.PsiStats) *statsapi.PSIStats {
	if s == nil {
		return nil
	}
	out := &statsapi.PSIStats{}
	if f := s.Full; f != nil {
		out.Full = statsapi.PSIData{Total: f.Total, Avg10: f.Avg10, Avg60: f.Avg60, Avg300: f.Avg300}
	}
	if f := s.Some; f != nil {
		out.Some = statsapi.PSIData{Total: f.Total, Avg10: f.Avg10, Avg60: f.Avg60, Avg300: f.Avg300}
	}
	return out
}

// firstPSI is CRI's PSI when the runtime reports it, else the cgroup's.
func firstPSI(cri *runtimeapi.PsiStats, cgroup *statsapi.PSIStats) *statsapi.PSIStats {
	if cri != nil {
		return criPSI(cri)
	}
	return cgroup
}

// cgroupTarget is one pod's or container's cgroup: its memory limits and
// pressure; zero when not found.
type cgroupTarget struct {
	mem      cgroupMemory
	pressure pressure
	found    bool
}

func (l cgroupLayout) target(rel string) cgroupTarget {
	if rel == "" {
		return cgroupTarget{}
	}
	return cgroupTarget{mem: l.memoryOf(rel), pressure: l.pressureOf(rel), found: true}
}
