package stats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// current is which sandboxes and containers count, and when they were
// created, from CRI ListPodSandbox and ListContainers; nil when the
// runtime is no Lister.
type current struct {
	sandboxes  map[string]*runtimeapi.PodSandbox
	containers map[string]*runtimeapi.Container
}

func (p *Provider) current(ctx context.Context) (*current, error) {
	l, ok := p.runtime.(Lister)
	if !ok {
		return nil, nil
	}
	containers, err := l.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, fmt.Errorf("failed to list all containers: %w", err)
	}
	sandboxes, err := l.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		return nil, fmt.Errorf("failed to list all pod sandboxes: %w", err)
	}
	c := &current{sandboxes: map[string]*runtimeapi.PodSandbox{}, containers: map[string]*runtimeapi.Container{}}
	for _, s := range removeTerminatedPods(sandboxes) {
		c.sandboxes[s.Id] = s
	}
	for _, ctr := range containers {
		if ctr.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c.containers[ctr.Id] = ctr
		}
	}
	return c, nil
}

// removeTerminatedPods is kubelet's: per pod name and namespace, its
// ready sandboxes, or else its newest one.
func removeTerminatedPods(pods []*runtimeapi.PodSandbox) []*runtimeapi.PodSandbox {
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].CreatedAt < pods[j].CreatedAt })
	type ref struct{ name, namespace string }
	byRef := map[ref][]*runtimeapi.PodSandbox{}
	var order []ref
	for _, s := range pods {
		r := ref{s.GetMetadata().GetName(), s.GetMetadata().GetNamespace()}
		if _, ok := byRef[r]; !ok {
			order = append(order, r)
		}
		byRef[r] = append(byRef[r], s)
	}
	var out []*runtimeapi.PodSandbox
	for _, r := range order {
		refs, found := byRef[r], false
		for _, s := range refs {
			if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				out, found = append(out, s), true
			}
		}
		if !found {
			out = append(out, refs[len(refs)-1])
		}
	}
	return out
}

// listPods is kubelet's listPodStatsStrictlyFromCRI (or, with cpuMem,
// ListPodCPUAndMemoryStats): one entry per current sandbox of
// ListPodSandboxStats, in the runtime's order. Without a Lister every
// pod UID's sandbox of the highest attempt counts, and per container name
// its highest attempt, with no start times.
func (p *Provider) listPods(ctx context.Context, now time.Time, layout cgroupLayout, root *FsUsage, fsCache map[string]*FsUsage, update, cpuMem bool) ([]statsapi.PodStats, error) {
	cur, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	sandboxes, err := p.runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil {
		return nil, fmt.Errorf("ListPodSandboxStats: %w", err)
	}
	if cur == nil {
		sandboxes = latestAttempts(sandboxes)
	}
	out := make([]statsapi.PodStats, 0, len(sandboxes))
	for _, sb := range sandboxes {
		md := sb.GetAttributes().GetMetadata()
		ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()}}
		if cur != nil {
			s, ok := cur.sandboxes[sb.GetAttributes().GetId()]
			if !ok {
				continue
			}
			ps.PodRef = statsapi.PodReference{Name: s.GetMetadata().GetName(), Namespace: s.GetMetadata().GetNamespace(), UID: s.GetMetadata().GetUid()}
			ps.StartTime = metav1.NewTime(time.Unix(0, s.CreatedAt))
		} else if md == nil {
			continue
		}
		podCgroup := layout.podCgroupUnder(p.cgroupRoot, ps.PodRef.UID)
		pod := layout.target(podCgroup)
		ctrCgroups := layout.containerCgroups(podCgroup)
		linux := sb.GetLinux()
		ctrs := linux.GetContainers()
		if cur == nil {
			ctrs = latestContainers(ctrs)
		}
		for _, c := range ctrs {
			var start metav1.Time
			if cur != nil {
				ctr, ok := cur.containers[c.GetAttributes().GetId()]
				if !ok {
					continue
				}
				start = metav1.NewTime(time.Unix(0, ctr.CreatedAt))
			}
			if c.GetAttributes().GetMetadata() == nil {
				continue
			}
			var cs statsapi.ContainerStats
			if cpuMem {
				cs = p.containerCPUAndMemory(c, start, now)
			} else {
				cs = p.container(c, start, now, root, fsCache, ps.PodRef, update)
			}
			applyCgroup(&cs, c, layout.target(ctrCgroups[c.GetAttributes().GetId()]), now, !cpuMem)
			ps.Containers = append(ps.Containers, cs)
		}
		if cpu := linux.GetCpu(); cpu != nil {
			ps.CPU = &statsapi.CPUStats{Time: metav1.NewTime(time.Unix(0, cpu.Timestamp)),
				UsageNanoCores: value(cpu.UsageNanoCores), UsageCoreNanoSeconds: value(cpu.UsageCoreNanoSeconds),
				PSI: firstPSI(cpu.Psi, pod.pressure.cpu)}
		}
		if m := linux.GetMemory(); m != nil {
			ps.Memory = memory(m, false)
			ps.Memory.PSI = firstPSI(m.Psi, pod.pressure.memory)
			if pod.mem.found {
				ps.Memory.AvailableBytes = pod.mem.available(ps.Memory.WorkingSetBytes)
			}
		}
		if pod.mem.found && pod.mem.hasSwap {
			// kubelet's addSwapStats: the pod cgroup's swap.
			ps.Swap = &statsapi.SwapStats{Time: metav1.NewTime(now), SwapUsageBytes: ptrTo(pod.mem.swap),
				SwapAvailableBytes: pod.mem.swapAvailable(pod.mem.swap)}
		}
		if cpuMem {
			if ps.Swap == nil {
				aggregateSwap(&ps)
			}
			out = append(out, ps)
			continue
		}
		if io := linux.GetIo(); io != nil {
			ps.IO = &statsapi.IOStats{Time: metav1.NewTime(time.Unix(0, io.Timestamp)), PSI: criPSI(io.Psi)}
		} else if pod.pressure.io != nil {
			ps.IO = &statsapi.IOStats{Time: metav1.NewTime(now), PSI: pod.pressure.io}
		}
		if n := linux.GetNetwork(); n != nil {
			ns := &statsapi.NetworkStats{Time: metav1.NewTime(time.Unix(0, n.Timestamp)), InterfaceStats: iface(n.DefaultInterface),
				Interfaces: make([]statsapi.InterfaceStats, 0, len(n.Interfaces))}
			for _, i := range n.Interfaces {
				ns.Interfaces = append(ns.Interfaces, iface(i))
			}
			ps.Network = ns
		}
		if pr := linux.GetProcess(); pr != nil {
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: value(pr.ProcessCount)}
		}
		p.podStorage(&ps, now, root)
		out = append(out, ps)
	}
	if update {
		p.forgetOldSamples(now)
	}
	return out, nil
}

// latestAttempts keeps, per pod UID, the sandbox of the highest attempt,
// in the order the UIDs first appear.
func latestAttempts(sandboxes []*runtimeapi.PodSandboxStats) []*runtimeapi.PodSandboxStats {
	index := map[string]int{}
	var out []*runtimeapi.PodSandboxStats
	for _, sb := range sandboxes {
		md := sb.GetAttributes().GetMetadata()
		if md == nil || md.Uid == "" {
			continue
		}
		i, seen := index[md.Uid]
		switch {
		case !seen:
			index[md.Uid] = len(out)
			out = append(out, sb)
		case md.Attempt >= out[i].GetAttributes().GetMetadata().GetAttempt():
			out[i] = sb
		}
	}
	return out
}

// latestContainers keeps, per container name, the highest attempt.
func latestContainers(cs []*runtimeapi.ContainerStats) []*runtimeapi.ContainerStats {
	index := map[string]int{}
	var out []*runtimeapi.ContainerStats
	for _, c := range cs {
		md := c.GetAttributes().GetMetadata()
		if md == nil {
			continue
		}
		i, seen := index[md.Name]
		switch {
		case !seen:
			index[md.Name] = len(out)
			out = append(out, c)
		case md.Attempt >= out[i].GetAttributes().GetMetadata().GetAttempt():
			out[i] = c
		}
	}
	return out
}

func iface(i *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
	return statsapi.InterfaceStats{Name: i.GetName(), RxBytes: value(i.GetRxBytes()), RxErrors: value(i.GetRxErrors()),
		TxBytes: value(i.GetTxBytes()), TxErrors: value(i.GetTxErrors())}
}

// memory converts CRI memory use; with zero, missing values read 0 (as
// kubelet's makeContainerCPUAndMemoryStats writes them).
func memory(m *runtimeapi.MemoryUsage, zero bool) *statsapi.MemoryStats {
	v := value
	if zero {
		v = valueOrZero
	}
	return &statsapi.MemoryStats{Time: metav1.NewTime(time.Unix(0, m.Timestamp)),
		AvailableBytes: v(m.AvailableBytes), UsageBytes: v(m.UsageBytes), WorkingSetBytes: v(m.WorkingSetBytes),
		RSSBytes: v(m.RssBytes), PageFaults: v(m.PageFaults), MajorPageFaults: v(m.MajorPageFaults)}
}

func valueOrZero(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return ptrTo[uint64](0)
	}
	return ptrTo(v.Value)
}

// container is kubelet's makeContainerStats: CPU, memory, swap and rootfs
// always present (what CRI leaves out of CPU, memory and swap reads 0 at
// the time of the Summary, as kubelet writes it), the writable layer as
// rootfs on the filesystem CRI names, the container's log files as logs.
func (p *Provider) container(c *runtimeapi.ContainerStats, start metav1.Time, now time.Time, root *FsUsage, fsCache map[string]*FsUsage, pod statsapi.PodReference, update bool) statsapi.ContainerStats {
	nowT := metav1.NewTime(now)
	out := statsapi.ContainerStats{Name: c.GetAttributes().GetMetadata().GetName(), StartTime: start,
		CPU: &statsapi.CPUStats{}, Memory: &statsapi.MemoryStats{}, Rootfs: &statsapi.FsStats{}, Swap: &statsapi.SwapStats{}}
	if cpu := c.GetCpu(); cpu != nil {
		out.CPU.Time = metav1.NewTime(time.Unix(0, cpu.Timestamp))
		out.CPU.UsageCoreNanoSeconds = value(cpu.UsageCoreNanoSeconds)
		out.CPU.UsageNanoCores = p.containerNanoCores(c, update)
	} else {
		out.CPU = &statsapi.CPUStats{Time: nowT, UsageCoreNanoSeconds: ptrTo[uint64](0), UsageNanoCores: ptrTo[uint64](0)}
	}
	if m := c.GetMemory(); m != nil {
		out.Memory = memory(m, false)
	} else {
		out.Memory = &statsapi.MemoryStats{Time: nowT, WorkingSetBytes: ptrTo[uint64](0), UsageBytes: ptrTo[uint64](0), RSSBytes: ptrTo[uint64](0)}
	}
	if s := c.GetSwap(); s != nil {
		out.Swap = &statsapi.SwapStats{Time: metav1.NewTime(time.Unix(0, s.Timestamp)), SwapUsageBytes: value(s.SwapUsageBytes), SwapAvailableBytes: value(s.SwapAvailableBytes)}
	} else {
		out.Swap = &statsapi.SwapStats{Time: nowT, SwapUsageBytes: ptrTo[uint64](0), SwapAvailableBytes: ptrTo[uint64](0)}
	}
	if w := c.GetWritableLayer(); w != nil {
		out.Rootfs.Time = metav1.NewTime(time.Unix(0, w.Timestamp))
		out.Rootfs.UsedBytes, out.Rootfs.InodesUsed = value(w.UsedBytes), value(w.InodesUsed)
		if u := p.fsOf(w.GetFsId().GetMountpoint(), fsCache); u != nil {
			out.Rootfs.CapacityBytes, out.Rootfs.AvailableBytes = ptrTo(u.CapacityBytes), ptrTo(u.AvailableBytes)
			out.Rootfs.Inodes, out.Rootfs.InodesFree = ptrTo(u.Inodes), ptrTo(u.InodesFree)
		}
	}
	out.Logs = p.logStats(filepath.Join(p.podLogsDirOf(pod), out.Name), now, root)
	return out
}

// containerCPUAndMemory is kubelet's makeContainerCPUAndMemoryStats with
// zeroMissingValues.
func (p *Provider) containerCPUAndMemory(c *runtimeapi.ContainerStats, start metav1.Time, now time.Time) statsapi.ContainerStats {
	nowT := metav1.NewTime(now)
	out := statsapi.ContainerStats{Name: c.GetAttributes().GetMetadata().GetName(), StartTime: start}
	if cpu := c.GetCpu(); cpu != nil {
		out.CPU = &statsapi.CPUStats{Time: metav1.NewTime(time.Unix(0, cpu.Timestamp)),
			UsageNanoCores: p.containerNanoCores(c, false), UsageCoreNanoSeconds: valueOrZero(cpu.UsageCoreNanoSeconds)}
	} else {
		out.CPU = &statsapi.CPUStats{Time: nowT, UsageCoreNanoSeconds: ptrTo[uint64](0), UsageNanoCores: ptrTo[uint64](0)}
	}
	if m := c.GetMemory(); m != nil {
		out.Memory = memory(m, true)
	} else {
		z := func() *uint64 { return ptrTo[uint64](0) }
		out.Memory = &statsapi.MemoryStats{Time: nowT, AvailableBytes: z(), UsageBytes: z(), WorkingSetBytes: z(), RSSBytes: z(), PageFaults: z(), MajorPageFaults: z()}
	}
	if s := c.GetSwap(); s != nil {
		out.Swap = &statsapi.SwapStats{Time: metav1.NewTime(time.Unix(0, s.Timestamp)), SwapUsageBytes: valueOrZero(s.SwapUsageBytes), SwapAvailableBytes: valueOrZero(s.SwapAvailableBytes)}
	} else {
		out.Swap = &statsapi.SwapStats{Time: nowT, SwapUsageBytes: ptrTo[uint64](0), SwapAvailableBytes: ptrTo[uint64](0)}
	}
	return out
}

// applyCgroup completes a container's stats from its cgroup where
// kubelet's CRI stats provider (containerd's) does: the IO entry and swap
// used where CRI reports none. CPU and memory, PSI and availableBytes
// included, stay CRI's, as kubelet's makeContainerStats takes them (seen
// side by side on containerd 1.6: kubelet reports a container's
// availableBytes from CRI and no container PSI).
func applyCgroup(cs *statsapi.ContainerStats, c *runtimeapi.ContainerStats, t cgroupTarget, now time.Time, io bool) {
	cs.CPU.PSI = criPSI(c.GetCpu().GetPsi())
	cs.Memory.PSI = criPSI(c.GetMemory().GetPsi())
	if io {
		cs.IO = &statsapi.IOStats{Time: metav1.NewTime(now), PSI: criPSI(c.GetIo().GetPsi())}
		if i := c.GetIo(); i != nil {
			cs.IO.Time = metav1.NewTime(time.Unix(0, i.Timestamp))
		}
	}
	if !t.mem.found {
		return
	}
	if c.GetSwap().GetSwapUsageBytes() == nil && t.mem.hasSwap {
		cs.Swap.SwapUsageBytes = ptrTo(t.mem.swap)
	}
}

// containerNanoCores is the runtime's UsageNanoCores when it reports it,
// else the rate from kept samples.
func (p *Provider) containerNanoCores(c *runtimeapi.ContainerStats, update bool) *uint64 {
	cpu := c.GetCpu()
	if cpu.GetUsageNanoCores() != nil {
		return ptrTo(cpu.UsageNanoCores.Value)
	}
	if update && cpu.GetUsageCoreNanoSeconds() == nil {
		return nil
	}
	return p.nanoCores(c.GetAttributes().GetId(), cpu.GetTimestamp(), cpu.GetUsageCoreNanoSeconds().GetValue(), update)
}

// aggregateSwap is kubelet's aggregatePodSwapStats.
func aggregateSwap(ps *statsapi.PodStats) {
	var avail, used uint64
	var t *metav1.Time
	for _, c := range ps.Containers {
		if c.Swap != nil {
			t = &c.Swap.Time
			avail += deref(c.Swap.SwapAvailableBytes)
			used += deref(c.Swap.SwapUsageBytes)
		}
	}
	if t != nil {
		ps.Swap = &statsapi.SwapStats{Time: *t, SwapAvailableBytes: &avail, SwapUsageBytes: &used}
	}
}

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

// podLogsDirOf is kubelet's BuildPodLogsDirectory.
func (p *Provider) podLogsDirOf(pod statsapi.PodReference) string {
	return filepath.Join(p.podLogsDir, pod.Namespace+"_"+pod.Name+"_"+pod.UID)
}

// logStats is kubelet's fileMetricsByDir: the files (not directories)
// directly in dir, their disk use and one inode each, on nodefs; nil when
// dir cannot be read.
func (p *Provider) logStats(dir string, now time.Time, root *FsUsage) *statsapi.FsStats {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := &statsapi.FsStats{}
	if root != nil {
		out = fsStats(root, metav1.Time{})
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out.UsedBytes = addUsage(out.UsedBytes, diskUsage(fi))
		out.InodesUsed = addUsage(out.InodesUsed, uint64(1))
		out.Time = metav1.NewTime(now)
	}
	return out
}

// podStorage is kubelet's makePodStorageStats: the pod's volume stats
// (WithVolumeStats) and its ephemeral storage: its containers' writable
// layers and logs, its local ephemeral volumes, the log files of its own
// directory and its etc-hosts file, on nodefs.
func (p *Provider) podStorage(ps *statsapi.PodStats, now time.Time, root *FsUsage) {
	var ephVolumes []statsapi.VolumeStats
	if p.volumes != nil {
		if v, ok := p.volumes.PodVolumeStats(types.UID(ps.PodRef.UID)); ok {
			ephVolumes = v.Ephemeral
			ps.VolumeStats = append(append([]statsapi.VolumeStats{}, v.Ephemeral...), v.Persistent...)
		}
	}
	eph := &statsapi.FsStats{}
	if root != nil {
		eph = fsStats(root, metav1.Time{})
	}
	add := func(f *statsapi.FsStats, inodes bool) {
		eph.UsedBytes = addUsage(eph.UsedBytes, f.UsedBytes)
		if inodes {
			eph.InodesUsed = addUsage(eph.InodesUsed, f.InodesUsed)
		}
		if eph.Time.Before(&f.Time) {
			eph.Time = f.Time
		}
	}
	for _, c := range ps.Containers {
		if c.Rootfs == nil {
			continue
		}
		add(c.Rootfs, true)
		if c.Logs != nil {
			add(c.Logs, true)
		}
	}
	for i := range ephVolumes {
		add(&ephVolumes[i].FsStats, true)
	}
	if logs := p.logStats(p.podLogsDirOf(ps.PodRef), now, root); logs != nil {
		add(logs, true)
	}
	if fi, err := os.Stat(filepath.Join(p.rootDir, "pods", ps.PodRef.UID, "etc-hosts")); err == nil && !fi.IsDir() {
		add(&statsapi.FsStats{Time: metav1.NewTime(now), UsedBytes: ptrTo(diskUsage(fi)), InodesUsed: ptrTo[uint64](1)}, true)
	}
	ps.EphemeralStorage = eph
}

// addUsage is kubelet's: nil + nil is nil.
func addUsage[T uint64 | *uint64](sum *uint64, v T) *uint64 {
	var x *uint64
	switch v := any(v).(type) {
	case uint64:
		x = &v
	case *uint64:
		x = v
	}
	if x == nil {
		return sum
	}
	if sum == nil {
		return ptrTo(*x)
	}
	return ptrTo(*sum + *x)
}
