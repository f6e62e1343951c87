package eviction

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/runtime"
)

// PodStatsFromCRI turns CRI ListPodSandboxStats answers into the Summary
// API's pod stats, as kubelet's CRI stats provider: one entry per pod UID
// (the sandbox of the highest attempt), its memory working set and
// process count, and per container name (the highest attempt) the
// container's working set and writable layer (as Rootfs). Logs, volumes
// and the pod's ephemeral storage are not in CRI stats; EphemeralStorage
// is the writable layers' sum (kubelet adds logs and local volumes).
func PodStatsFromCRI(sandboxes []*runtimeapi.PodSandboxStats) []statsapi.PodStats {
	type entry struct {
		attempt uint32
		stats   statsapi.PodStats
	}
	byUID := map[string]*entry{}
	var order []string
	for _, sb := range sandboxes {
		md := sb.GetAttributes().GetMetadata()
		if md == nil || md.Uid == "" {
			continue
		}
		if e, ok := byUID[md.Uid]; ok && e.attempt > md.Attempt {
			continue
		} else if !ok {
			order = append(order, md.Uid)
		}
		ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: md.Name, Namespace: md.Namespace, UID: md.Uid}}
		linux := sb.GetLinux()
		if m := linux.GetMemory(); m != nil {
			ps.Memory = memoryFromCRI(m)
		}
		if p := linux.GetProcess(); p != nil && p.ProcessCount != nil {
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptrTo(p.ProcessCount.Value)}
		}
		index := map[string]int{}       // container name → its entry
		attempts := map[string]uint32{} // and that entry's attempt
		for _, c := range linux.GetContainers() {
			cmd := c.GetAttributes().GetMetadata()
			if cmd == nil {
				continue
			}
			cs := statsapi.ContainerStats{Name: cmd.Name}
			if m := c.GetMemory(); m != nil {
				cs.Memory = memoryFromCRI(m)
			}
			if w := c.GetWritableLayer(); w != nil {
				cs.Rootfs = &statsapi.FsStats{Time: metav1.NewTime(time.Unix(0, w.Timestamp))}
				cs.Rootfs.UsedBytes, cs.Rootfs.InodesUsed = used(w)
			}
			i, seen := index[cmd.Name]
			switch {
			case !seen:
				index[cmd.Name] = len(ps.Containers)
				ps.Containers = append(ps.Containers, cs)
			case cmd.Attempt >= attempts[cmd.Name]:
				ps.Containers[i] = cs
			default:
				continue
			}
			attempts[cmd.Name] = cmd.Attempt
		}
		var rootfs uint64
		var hasRootfs bool
		for _, c := range ps.Containers {
			if c.Rootfs != nil && c.Rootfs.UsedBytes != nil {
				rootfs += *c.Rootfs.UsedBytes
				hasRootfs = true
			}
		}
		if hasRootfs {
			ps.EphemeralStorage = &statsapi.FsStats{UsedBytes: ptrTo(rootfs)}
		}
		byUID[md.Uid] = &entry{attempt: md.Attempt, stats: ps}
	}
	out := make([]statsapi.PodStats, 0, len(order))
	for _, uid := range order {
		out = append(out, byUID[uid].stats)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

func memoryFromCRI(m *runtimeapi.MemoryUsage) *statsapi.MemoryStats {
	out := &statsapi.MemoryStats{Time: metav1.NewTime(time.Unix(0, m.Timestamp))}
	if m.WorkingSetBytes != nil {
		out.WorkingSetBytes = ptrTo(m.WorkingSetBytes.Value)
	}
	if m.UsageBytes != nil {
		out.UsageBytes = ptrTo(m.UsageBytes.Value)
	}
	if m.AvailableBytes != nil {
		out.AvailableBytes = ptrTo(m.AvailableBytes.Value)
	}
	return out
}

// FsUsage is what statfs says of a filesystem.
type FsUsage struct {
	CapacityBytes, AvailableBytes uint64
	Inodes, InodesFree            uint64
}

// CRISource is a StatsSource from the CRI and the host: pods from
// ListPodSandboxStats (PodStatsFromCRI); node memory from /proc/meminfo
// (capacity MemTotal, working set MemTotal − MemFree − Inactive(file), as
// cAdvisor's root cgroup on cgroup v2); nodefs from statfs of the root
// directory; imagefs and containerfs from statfs of the mount points CRI
// ImageFsInfo names (containerfs only when it names a different one);
// PIDs as kubelet's pidlimit (min of kernel.pid_max and threads-max,
// running tasks from /proc/loadavg). The pods cgroup's memory
// (allocatableMemory.available) needs WithPodsMemory; container logs and
// volumes are not measured.
type CRISource struct {
	runtime    runtime.StatsLister
	images     runtime.ImageFsInfoReader
	rootDir    string
	procDir    string
	statfs     func(path string) (FsUsage, error)
	now        func() time.Time
	podsMemory func(ctx context.Context) (*statsapi.MemoryStats, error)
}

// SourceOption configures a CRISource.
type SourceOption func(*CRISource)

// WithRootDir sets the directory whose filesystem is nodefs (default
// /var/lib/kubelet).
func WithRootDir(dir string) SourceOption { return func(s *CRISource) { s.rootDir = dir } }

// WithProcDir sets where /proc is (default /proc), for tests.
func WithProcDir(dir string) SourceOption { return func(s *CRISource) { s.procDir = dir } }

// WithStatfs replaces statfs, for tests.
func WithStatfs(f func(path string) (FsUsage, error)) SourceOption {
	return func(s *CRISource) { s.statfs = f }
}

// WithPodsMemory gives the pods cgroup's memory (its available bytes
// under the allocatable limit and its working set), the source of
// allocatableMemory.available.
func WithPodsMemory(f func(ctx context.Context) (*statsapi.MemoryStats, error)) SourceOption {
	return func(s *CRISource) { s.podsMemory = f }
}

// NewCRISource reads pods from rt and, when images is not nil, the image
// filesystem it reports.
func NewCRISource(rt runtime.StatsLister, images runtime.ImageFsInfoReader, opts ...SourceOption) *CRISource {
	s := &CRISource{runtime: rt, images: images, rootDir: "/var/lib/kubelet", procDir: "/proc", statfs: statfs, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Summary implements StatsSource. A node-level part that cannot be read
// is left out (its signals are then not observed); a failed
// ListPodSandboxStats or ImageFsInfo is an error.
func (s *CRISource) Summary(ctx context.Context) (*statsapi.Summary, error) {
	now := metav1.NewTime(s.now())
	sandboxes, err := s.runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil {
		return nil, fmt.Errorf("ListPodSandboxStats: %w", err)
	}
	sum := &statsapi.Summary{Pods: PodStatsFromCRI(sandboxes)}
	sum.Node.Memory = s.nodeMemory(now)
	if fs, err := s.fs(s.rootDir, now); err == nil {
		sum.Node.Fs = fs
	}
	if s.images != nil {
		resp, err := s.images.ImageFsInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("ImageFsInfo: %w", err)
		}
		rt := &statsapi.RuntimeStats{}
		imageMount := ""
		if fss := resp.GetImageFilesystems(); len(fss) > 0 {
			imageMount = fss[0].GetFsId().GetMountpoint()
			if fs, err := s.fs(imageMount, now); err == nil {
				fs.UsedBytes, fs.InodesUsed = used(fss[0])
				rt.ImageFs = fs
			}
		}
		rt.ContainerFs = rt.ImageFs
		if fss := resp.GetContainerFilesystems(); len(fss) > 0 && fss[0].GetFsId().GetMountpoint() != imageMount {
			rt.ContainerFs = nil
			if fs, err := s.fs(fss[0].GetFsId().GetMountpoint(), now); err == nil {
				fs.UsedBytes, fs.InodesUsed = used(fss[0])
				rt.ContainerFs = fs
			}
		}
		sum.Node.Runtime = rt
	}
	sum.Node.Rlimit = s.rlimit(now)
	if s.podsMemory != nil {
		m, err := s.podsMemory(ctx)
		if err != nil {
			return nil, fmt.Errorf("pods cgroup memory: %w", err)
		}
		if m != nil {
			sum.Node.SystemContainers = append(sum.Node.SystemContainers, statsapi.ContainerStats{Name: PodsContainerName, Memory: m})
		}
	}
	return sum, nil
}

func used(f *runtimeapi.FilesystemUsage) (bytes, inodes *uint64) {
	if f.UsedBytes != nil {
		bytes = ptrTo(f.UsedBytes.Value)
	}
	if f.InodesUsed != nil {
		inodes = ptrTo(f.InodesUsed.Value)
	}
	return bytes, inodes
}

func (s *CRISource) fs(path string, now metav1.Time) (*statsapi.FsStats, error) {
	if path == "" {
		return nil, errors.New("no mount point")
	}
	u, err := s.statfs(path)
	if err != nil {
		return nil, err
	}
	return &statsapi.FsStats{
		Time: now, CapacityBytes: ptrTo(u.CapacityBytes), AvailableBytes: ptrTo(u.AvailableBytes),
		Inodes: ptrTo(u.Inodes), InodesFree: ptrTo(u.InodesFree),
	}, nil
}

// nodeMemory reads /proc/meminfo; nil when it cannot.
func (s *CRISource) nodeMemory(now metav1.Time) *statsapi.MemoryStats {
	b, err := os.ReadFile(filepath.Join(s.procDir, "meminfo"))
	if err != nil {
		return nil
	}
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
	return &statsapi.MemoryStats{Time: now, AvailableBytes: ptrTo(total - ws), WorkingSetBytes: ptrTo(ws), UsageBytes: ptrTo(usage)}
}

// rlimit is kubelet's pidlimit.Stats over procDir; nil without pid_max.
func (s *CRISource) rlimit(now metav1.Time) *statsapi.RlimitStats {
	max := int64(-1)
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		b, err := os.ReadFile(filepath.Join(s.procDir, f))
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
	b, err := os.ReadFile(filepath.Join(s.procDir, "loadavg"))
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
	return &statsapi.RlimitStats{Time: now, MaxPID: &max, NumOfRunningProcesses: &n}
}
