package stats

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/runtime"
)

// FsUsage is what statfs says of a filesystem.
type FsUsage struct {
	CapacityBytes, AvailableBytes uint64
	// UsedBytes is the capacity less the free blocks (root's reserve
	// counts as used), as cAdvisor's Usage.
	UsedBytes          uint64
	Inodes, InodesFree uint64
}

// Lister is an optional ability of the runtime given to New: CRI
// ListPodSandbox and ListContainers, from which the Provider takes pods'
// and containers' start times and which sandboxes and containers are
// current, as kubelet's CRI stats provider (runtime.RuntimeService has
// it).
type Lister interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// SystemContainerFunc measures one of the node's system containers
// (statsapi.SystemContainerPods, ...Kubelet, ...Runtime, ...Misc): nil
// when it has nothing to report.
type SystemContainerFunc func(ctx context.Context) (*statsapi.ContainerStats, error)

// Provider builds the node's stats Summary from CRI and the host. It is
// safe for concurrent use.
type Provider struct {
	runtime    runtime.StatsLister
	images     runtime.ImageFsInfoReader
	nodeName   string
	rootDir    string
	podLogsDir string
	procDir    string
	cgroupDir  string
	cgroupRoot string
	statfs     func(path string) (FsUsage, error)
	clock      clock.PassiveClock
	system     []systemContainer
	volumes    PodVolumeStatsGetter

	mu  sync.Mutex
	cpu map[string]*cpuRecord // by container ID; nodeCPUKey for the node
}

type systemContainer struct {
	name string
	f    SystemContainerFunc
}

// Option configures a Provider.
type Option func(*Provider)

// WithNodeName sets Node.NodeName.
func WithNodeName(name string) Option { return func(p *Provider) { p.nodeName = name } }

// WithRootDir sets kubelet's root directory (default /var/lib/kubelet):
// its filesystem is nodefs, and pods' etc-hosts files live under it.
func WithRootDir(dir string) Option { return func(p *Provider) { p.rootDir = dir } }

// WithPodLogsDir sets where pods' logs are (default /var/log/pods).
func WithPodLogsDir(dir string) Option { return func(p *Provider) { p.podLogsDir = dir } }

// WithProcDir sets where /proc is (default /proc), for tests.
func WithProcDir(dir string) Option { return func(p *Provider) { p.procDir = dir } }

// WithCgroupDir sets where the cgroup hierarchies are mounted (default
// /sys/fs/cgroup; "" reads no cgroup): pods' and containers' memory
// limits, swap and pressure, and the node's memory.stat, come from there.
func WithCgroupDir(dir string) Option { return func(p *Provider) { p.cgroupDir = dir } }

// WithCgroupRoot is kubelet's --cgroup-root with the cgroupfs driver: the
// pods' cgroups are found under <root>/kubepods (default "/").
func WithCgroupRoot(root string) Option { return func(p *Provider) { p.cgroupRoot = root } }

// WithStatfs replaces statfs, for tests.
func WithStatfs(f func(path string) (FsUsage, error)) Option {
	return func(p *Provider) { p.statfs = f }
}

// WithClock sets the clock of the node's samples (default the real one).
func WithClock(c clock.PassiveClock) Option { return func(p *Provider) { p.clock = c } }

// WithSystemContainer adds a system container, named name in the
// Summary, measured by f. An error of f fails the Summary.
func WithSystemContainer(name string, f SystemContainerFunc) Option {
	return func(p *Provider) { p.system = append(p.system, systemContainer{name, f}) }
}

// New reads pods from rt (and, when rt is also a Lister, which of them
// are current and when they started) and, when images is not nil, the
// image filesystem it reports.
func New(rt runtime.StatsLister, images runtime.ImageFsInfoReader, opts ...Option) *Provider {
	p := &Provider{runtime: rt, images: images, rootDir: "/var/lib/kubelet", podLogsDir: "/var/log/pods",
		procDir: "/proc", cgroupDir: "/sys/fs/cgroup", statfs: statfs, clock: clock.RealClock{}, cpu: map[string]*cpuRecord{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Summary is the node API's GET /stats/summary: Get(ctx, false), or
// CPUAndMemory with onlyCPUAndMemory (?only_cpu_and_memory=true), as
// kubelet's handler.
func (p *Provider) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error) {
	if onlyCPUAndMemory {
		return p.CPUAndMemory(ctx)
	}
	return p.Get(ctx, false)
}

// Get is kubelet's SummaryProvider.Get: the whole Summary. With
// updateStats (kubelet's eviction manager passes true every pass) each
// container's and the node's CPU sample is kept and UsageNanoCores is
// the rate since the previous kept sample; without, UsageNanoCores is the
// last rate computed (nil before two samples), unless the runtime reports
// it.
func (p *Provider) Get(ctx context.Context, updateStats bool) (*statsapi.Summary, error) {
	now := p.clock.Now()
	layout := p.cgroupLayout()
	host := p.readHost(now, updateStats, layout)
	rootFs, rootErr := p.statfs(p.rootDir)
	var root *FsUsage
	if rootErr == nil {
		root = &rootFs
	}
	node := statsapi.NodeStats{
		NodeName: p.nodeName, StartTime: host.bootTime, CPU: host.cpu, Memory: host.memory, Swap: host.swap,
		Network: host.network, Rlimit: p.rlimit(now), IO: host.io,
	}
	if root != nil {
		node.Fs = fsStats(root, metav1.NewTime(now))
		node.Fs.UsedBytes = ptrTo(root.UsedBytes)
		if root.Inodes >= root.InodesFree {
			node.Fs.InodesUsed = ptrTo(root.Inodes - root.InodesFree)
		}
	}
	fsCache := map[string]*FsUsage{}
	if p.images != nil {
		imageFs, err := p.imageFs(ctx, fsCache)
		if err != nil {
			return nil, err
		}
		// kubelet's CRI stats provider reports the image filesystem as the
		// container filesystem too ("we don't support separate disks yet").
		node.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs}
	}
	sys, err := p.systemContainers(ctx)
	if err != nil {
		return nil, err
	}
	node.SystemContainers = sys
	pods, err := p.listPods(ctx, now, layout, root, fsCache, updateStats, false)
	if err != nil {
		return nil, err
	}
	return &statsapi.Summary{Node: node, Pods: pods}, nil
}

// CPUAndMemory is kubelet's SummaryProvider.GetCPUAndMemoryStats, what
// /metrics/resource and ?only_cpu_and_memory=true read: the node's CPU,
// memory, swap and start time, its system containers' CPU and memory, and
// per pod its CPU, memory and swap and its running containers' (missing
// container values written as 0, as kubelet writes them). No sample is
// kept.
func (p *Provider) CPUAndMemory(ctx context.Context) (*statsapi.Summary, error) {
	now := p.clock.Now()
	layout := p.cgroupLayout()
	host := p.readHost(now, false, layout)
	node := statsapi.NodeStats{NodeName: p.nodeName, StartTime: host.bootTime, CPU: host.cpu, Memory: host.memory, Swap: host.swap}
	sys, err := p.systemContainers(ctx)
	if err != nil {
		return nil, err
	}
	for i := range sys {
		sys[i] = statsapi.ContainerStats{Name: sys[i].Name, StartTime: sys[i].StartTime, CPU: sys[i].CPU, Memory: sys[i].Memory, Swap: sys[i].Swap}
	}
	node.SystemContainers = sys
	pods, err := p.listPods(ctx, now, layout, nil, nil, false, true)
	if err != nil {
		return nil, err
	}
	return &statsapi.Summary{Node: node, Pods: pods}, nil
}

func (p *Provider) systemContainers(ctx context.Context) ([]statsapi.ContainerStats, error) {
	var out []statsapi.ContainerStats
	for _, sc := range p.system {
		s, err := sc.f(ctx)
		if err != nil {
			return nil, fmt.Errorf("system container %q: %w", sc.name, err)
		}
		if s == nil {
			continue
		}
		c := *s
		c.Name = sc.name
		// System containers don't have a filesystem associated with them.
		c.Logs, c.Rootfs = nil, nil
		out = append(out, c)
	}
	return out, nil
}

// imageFs is kubelet's ImageFsStats: the first image filesystem CRI
// reports, its use from CRI and its size from statfs of its mount point.
func (p *Provider) imageFs(ctx context.Context, cache map[string]*FsUsage) (*statsapi.FsStats, error) {
	resp, err := p.images.ImageFsInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("ImageFsInfo: %w", err)
	}
	fss := resp.GetImageFilesystems()
	if len(fss) == 0 {
		return nil, nil
	}
	fs := fss[0]
	out := &statsapi.FsStats{Time: metav1.NewTime(time.Unix(0, fs.Timestamp))}
	out.UsedBytes, out.InodesUsed = value(fs.UsedBytes), value(fs.InodesUsed)
	if u := p.fsOf(fs.GetFsId().GetMountpoint(), cache); u != nil {
		out.CapacityBytes, out.AvailableBytes = ptrTo(u.CapacityBytes), ptrTo(u.AvailableBytes)
		out.Inodes, out.InodesFree = ptrTo(u.Inodes), ptrTo(u.InodesFree)
	}
	return out, nil
}

// fsOf is statfs of a mount point, once per Summary; nil when unknown.
func (p *Provider) fsOf(mountpoint string, cache map[string]*FsUsage) *FsUsage {
	if mountpoint == "" {
		return nil
	}
	if u, ok := cache[mountpoint]; ok {
		return u
	}
	var out *FsUsage
	if u, err := p.statfs(mountpoint); err == nil {
		out = &u
	}
	cache[mountpoint] = out
	return out
}

// fsStats is a filesystem's size, its use not filled in.
func fsStats(u *FsUsage, t metav1.Time) *statsapi.FsStats {
	return &statsapi.FsStats{Time: t, CapacityBytes: ptrTo(u.CapacityBytes), AvailableBytes: ptrTo(u.AvailableBytes),
		Inodes: ptrTo(u.Inodes), InodesFree: ptrTo(u.InodesFree)}
}

func ptrTo[T any](v T) *T { return &v }

func value(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptrTo(v.Value)
}
