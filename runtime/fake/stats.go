package fake

import (
	"context"
	"maps"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
)

// DefaultImageFsMountpoint is where the fake says its images live
// (WithImageFsMountpoint changes it).
const DefaultImageFsMountpoint = "/var/lib/podstart-fake/images"

// WithImageFsMountpoint sets the mount point ImageFsInfo reports.
func WithImageFsMountpoint(path string) Option { return func(r *Runtime) { r.imageFs = path } }

var (
	_ runtime.StatsLister          = (*Runtime)(nil)
	_ runtime.ContainerLogReopener = (*Runtime)(nil)
	_ runtime.ImageFsInfoReader    = (*Runtime)(nil)
)

// ImageFsInfo implements runtime.ImageFsInfoReader: one image filesystem
// at the mount point WithImageFsMountpoint sets, holding the sum of the
// images' sizes in as many inodes as there are images (containerd 1.6
// reports no separate container filesystem either).
func (r *Runtime) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	resp, err := r.answering().ImageFsInfo(ctx)
	return resp, err
}

func (b *bare) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ImageFsInfo", &runtimeapi.ImageFsInfoRequest{}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var used uint64
	for _, img := range r.images {
		used += img.Size
	}
	mp := r.imageFs
	if mp == "" {
		mp = DefaultImageFsMountpoint
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp: r.now(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: mp},
		UsedBytes: &runtimeapi.UInt64Value{Value: used}, InodesUsed: &runtimeapi.UInt64Value{Value: uint64(len(r.images))},
	}}}, nil
}

// ReopenContainerLog implements runtime.ContainerLogReopener: accepted for
// a running container, refused as containerd refuses it for any other
// ("container is not running"). With WithLogFiles it creates the log file
// again when it is missing, as containerd reopens it.
func (r *Runtime) ReopenContainerLog(ctx context.Context, id string) error {
	return r.answering().ReopenContainerLog(ctx, id)
}

func (b *bare) ReopenContainerLog(ctx context.Context, id string) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ReopenContainerLog", &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fail(codes.Unknown, "container is not running")
	}
	if r.logFiles {
		if err := touchLog(c.logPath); err != nil {
			return fail(codes.Unknown, "failed to create and open log file: %v", err)
		}
	}
	return nil
}

// ListContainerStats implements runtime.StatsLister: ContainerStats of
// every container the filter selects.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return r.answering().ListContainerStats(ctx, filter)
}

func (b *bare) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ListContainerStats", &runtimeapi.ListContainerStatsRequest{Filter: clone(filter)}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.ContainerStats
	for _, c := range r.containerCandidates(filter.GetId(), filter.GetPodSandboxId(), filter.GetLabelSelector()) {
		if f := filter; f != nil && (f.Id != "" && f.Id != c.id || f.PodSandboxId != "" && f.PodSandboxId != c.sandboxID || !labelsMatch(c.config.Labels, f.LabelSelector)) {
			continue
		}
		out = append(out, r.statsOf(c))
	}
	return out, nil
}

// ListPodSandboxStats implements runtime.StatsLister: for each sandbox the
// filter selects, its containers' stats and their memory summed.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return r.answering().ListPodSandboxStats(ctx, filter)
}

func (b *bare) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ListPodSandboxStats", &runtimeapi.ListPodSandboxStatsRequest{Filter: clone(filter)}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cands := r.sandboxCandidates(filter.GetId(), filter.GetLabelSelector())
	sort.Slice(cands, func(i, j int) bool { return cands[i].id < cands[j].id })
	r.settle()
	var out []*runtimeapi.PodSandboxStats
	for _, s := range cands {
		if f := filter; f != nil && (f.Id != "" && f.Id != s.id || !labelsMatch(s.config.Labels, f.LabelSelector)) {
			continue
		}
		out = append(out, r.sandboxStats(s))
	}
	return out, nil
}

// sandboxStats is a sandbox's stats: its containers' stats and their
// memory summed. r.mu is held.
func (r *Runtime) sandboxStats(s *sandbox) *runtimeapi.PodSandboxStats {
	now := r.now()
	st := &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{Id: s.id, Metadata: clone(s.config.Metadata), Labels: maps.Clone(s.config.Labels), Annotations: maps.Clone(s.config.Annotations)},
		Linux:      &runtimeapi.LinuxPodSandboxStats{Memory: &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{}, UsageBytes: &runtimeapi.UInt64Value{}}},
	}
	cs := values(r.idx.containersBySandbox[s.id])
	sortContainers(cs)
	for _, c := range cs {
		cs := r.statsOf(c)
		st.Linux.Containers = append(st.Linux.Containers, cs)
		st.Linux.Memory.UsageBytes.Value += c.memory
		st.Linux.Memory.WorkingSetBytes.Value += c.memory
	}
	return st
}

// statsOf is a container's stats: the memory SetMemoryUsage set (as usage
// and working set), no CPU time and an empty writable layer on the image
// filesystem. r.mu is held.
func (r *Runtime) statsOf(c *container) *runtimeapi.ContainerStats {
	now := r.now()
	mp := r.imageFs
	if mp == "" {
		mp = DefaultImageFsMountpoint
	}
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: c.id, Metadata: clone(c.config.Metadata), Labels: maps.Clone(c.config.Labels), Annotations: maps.Clone(c.config.Annotations)},
		Cpu:        &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{}},
		Memory:     &runtimeapi.MemoryUsage{Timestamp: now, UsageBytes: &runtimeapi.UInt64Value{Value: c.memory}, WorkingSetBytes: &runtimeapi.UInt64Value{Value: c.memory}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: now, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: mp},
			UsedBytes: &runtimeapi.UInt64Value{}, InodesUsed: &runtimeapi.UInt64Value{}},
	}
}

var (
	_ runtime.StatsLister          = (*answering)(nil)
	_ runtime.ContainerLogReopener = (*answering)(nil)
	_ runtime.ImageFsInfoReader    = (*answering)(nil)
)

// unimplemented is the answer of a wrapped runtime without method.
func unimplemented(method string) error {
	return fail(codes.Unimplemented, "%s is not implemented by the runtime", method)
}

// ImageFsInfo passes through to the wrapped runtime when it has it, else
// answers runtime.ErrUnimplemented.
func (a *answering) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	var resp *runtimeapi.ImageFsInfoResponse
	err := unimplemented("ImageFsInfo")
	if x, ok := a.rt.(runtime.ImageFsInfoReader); ok {
		resp, err = x.ImageFsInfo(ctx)
	}
	m, err := a.answer(ctx, "ImageFsInfo", &runtimeapi.ImageFsInfoRequest{}, resp, err)
	return as[*runtimeapi.ImageFsInfoResponse](m), err
}

// ReopenContainerLog passes through to the wrapped runtime when it has it,
// else answers runtime.ErrUnimplemented.
func (a *answering) ReopenContainerLog(ctx context.Context, id string) error {
	err := unimplemented("ReopenContainerLog")
	if x, ok := a.rt.(runtime.ContainerLogReopener); ok {
		err = x.ReopenContainerLog(ctx, id)
	}
	_, err = a.answer(ctx, "ReopenContainerLog", &runtimeapi.ReopenContainerLogRequest{ContainerId: id}, &runtimeapi.ReopenContainerLogResponse{}, err)
	return err
}

// ListContainerStats passes through to the wrapped runtime when it has it,
// else answers runtime.ErrUnimplemented.
func (a *answering) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	var st []*runtimeapi.ContainerStats
	err := unimplemented("ListContainerStats")
	if x, ok := a.rt.(runtime.StatsLister); ok {
		st, err = x.ListContainerStats(ctx, filter)
	}
	m, err := a.answer(ctx, "ListContainerStats", &runtimeapi.ListContainerStatsRequest{Filter: filter}, &runtimeapi.ListContainerStatsResponse{Stats: st}, err)
	return as[*runtimeapi.ListContainerStatsResponse](m).GetStats(), err
}

// ListPodSandboxStats passes through to the wrapped runtime when it has
// it, else answers runtime.ErrUnimplemented.
func (a *answering) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	var st []*runtimeapi.PodSandboxStats
	err := unimplemented("ListPodSandboxStats")
	if x, ok := a.rt.(runtime.StatsLister); ok {
		st, err = x.ListPodSandboxStats(ctx, filter)
	}
	m, err := a.answer(ctx, "ListPodSandboxStats", &runtimeapi.ListPodSandboxStatsRequest{Filter: filter}, &runtimeapi.ListPodSandboxStatsResponse{Stats: st}, err)
	return as[*runtimeapi.ListPodSandboxStatsResponse](m).GetStats(), err
}

func (s *imageServer) ImageFsInfo(ctx context.Context, _ *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	x, ok := s.rt.(runtime.ImageFsInfoReader)
	if !ok {
		return nil, unimplementedStatus("ImageFsInfo")
	}
	resp, err := x.ImageFsInfo(ctx)
	if err != nil {
		return nil, grpcErr(err)
	}
	return resp, nil
}

func (s *runtimeServer) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	x, ok := s.rt.(runtime.ContainerLogReopener)
	if !ok {
		return nil, unimplementedStatus("ReopenContainerLog")
	}
	if err := x.ReopenContainerLog(ctx, req.ContainerId); err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

func (s *runtimeServer) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	x, ok := s.rt.(runtime.StatsLister)
	if !ok {
		return nil, unimplementedStatus("ListContainerStats")
	}
	st, err := x.ListContainerStats(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: st}, nil
}

func (s *runtimeServer) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	x, ok := s.rt.(runtime.StatsLister)
	if !ok {
		return nil, unimplementedStatus("ListPodSandboxStats")
	}
	st, err := x.ListPodSandboxStats(ctx, req.Filter)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: st}, nil
}

func unimplementedStatus(method string) error {
	return status.Error(codes.Unimplemented, method+" is not implemented by the runtime")
}
