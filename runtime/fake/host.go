package fake

import (
	"context"
	"os"
	"path/filepath"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// What a kubelet asks of its runtime besides pod start: the cgroup driver
// (RuntimeConfig), the pod CIDR (UpdateRuntimeConfig), the handlers and
// features Status reports, one sandbox's stats (PodSandboxStats) and the
// container log files its log manager stats and rotates (WithLogFiles).

// RuntimeConfigReader is a runtime that answers CRI RuntimeConfig; the
// Server serves it when the runtime has it, else answers Unimplemented.
type RuntimeConfigReader interface {
	RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error)
}

// RuntimeConfigUpdater is a runtime that takes CRI UpdateRuntimeConfig
// (the node's pod CIDR); the Server serves it when the runtime has it.
type RuntimeConfigUpdater interface {
	UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error
}

// PodSandboxStatsReader is a runtime that answers CRI PodSandboxStats for
// one sandbox; the Server serves it when the runtime has it.
type PodSandboxStatsReader interface {
	PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error)
}

var (
	_ RuntimeConfigReader   = (*Runtime)(nil)
	_ RuntimeConfigUpdater  = (*Runtime)(nil)
	_ PodSandboxStatsReader = (*Runtime)(nil)
)

// WithCgroupDriver makes RuntimeConfig answer the cgroup driver, as
// containerd 1.7 and later do (kubelet then uses the runtime's driver and
// not its own cgroupDriver setting). Without it RuntimeConfig answers
// Unimplemented, as containerd 1.6 does; kubelet v1.37 then falls back on
// its configuration with a warning.
func WithCgroupDriver(d runtimeapi.CgroupDriver) Option {
	return func(r *Runtime) { r.cgroupDriver = &d }
}

// WithRuntimeHandlers sets the runtime handlers Status reports (none by
// default, as containerd 1.6). ContainerdHandlers is containerd 2.x's.
func WithRuntimeHandlers(handlers ...*runtimeapi.RuntimeHandler) Option {
	return func(r *Runtime) { r.handlers = cloneAll(handlers) }
}

// WithRuntimeFeatures sets the runtime features Status reports (none by
// default, as containerd 1.6). ContainerdFeatures is containerd 2.x's.
func WithRuntimeFeatures(f *runtimeapi.RuntimeFeatures) Option {
	return func(r *Runtime) { r.features = clone(f) }
}

// ContainerdHandlers are the runtime handlers containerd 2.x reports in
// Status with its default configuration (the default handler, "", and
// "runc") on a kernel with recursive read-only and ID-mapped mounts (6.3
// and later): both with RecursiveReadOnlyMounts and UserNamespaces.
func ContainerdHandlers() []*runtimeapi.RuntimeHandler {
	f := func() *runtimeapi.RuntimeHandlerFeatures {
		return &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}
	}
	return []*runtimeapi.RuntimeHandler{{Name: "", Features: f()}, {Name: "runc", Features: f()}}
}

// ContainerdFeatures are the runtime features containerd 2.x reports in
// Status: the Strict supplemental groups policy.
func ContainerdFeatures() *runtimeapi.RuntimeFeatures {
	return &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true}
}

// WithLogFiles makes the fake create each container's log file, as
// containerd does: when the container starts (containerd opens it in
// StartContainer, createContainerLoggers, with its directory made first),
// at its log path (the sandbox's LogDirectory joined with the config's
// LogPath), empty and opened for appending, never truncated; and again
// at ReopenContainerLog, which (re)creates a file that log rotation
// renamed away. A container with no log directory or no log path gets no
// file. A file that cannot be made fails StartContainer (codes.Unknown,
// as containerd's "failed to create container loggers") and leaves the
// container created. Without this option no file is touched, so tests
// may give log directories that do not exist.
//
// A kubelet hosted on the fake needs it: its log manager stats every
// running container's log file every 10 s and calls ReopenContainerLog
// for each that is missing.
func WithLogFiles() Option { return func(r *Runtime) { r.logFiles = true } }

// touchLog creates the log file at path (and its directory) if it is
// missing, as containerd's openLogFile; "" is no file.
func touchLog(path string) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// RuntimeConfig answers the cgroup driver WithCgroupDriver set, or
// Unimplemented without it.
func (r *Runtime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return r.answering().RuntimeConfig(ctx)
}

func (b *bare) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "RuntimeConfig", &runtimeapi.RuntimeConfigRequest{}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cgroupDriver == nil {
		return nil, unimplemented("RuntimeConfig")
	}
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: *r.cgroupDriver}}, nil
}

// UpdateRuntimeConfig takes the runtime config kubelet sends (its pod
// CIDR) and keeps it; PodCIDR reports it. Nothing else changes: sandboxes
// keep taking addresses from 10.88.0.0/16.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	return r.answering().UpdateRuntimeConfig(ctx, config)
}

func (b *bare) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "UpdateRuntimeConfig", &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: clone(config)}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.podCIDR = config.GetNetworkConfig().GetPodCidr()
	return nil
}

// PodCIDR is the pod CIDR the last UpdateRuntimeConfig gave ("" before).
func (r *Runtime) PodCIDR() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.podCIDR
}

// PodSandboxStats is ListPodSandboxStats's entry for one sandbox, NotFound
// for a sandbox that does not exist.
func (r *Runtime) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	return r.answering().PodSandboxStats(ctx, id)
}

func (b *bare) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "PodSandboxStats", &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return nil, fail(codes.NotFound, "an error occurred when try to find sandbox %q: not found", id)
	}
	return r.sandboxStats(s), nil
}

// RuntimeConfig passes through to the wrapped runtime when it has it
// (RuntimeConfigReader), else answers runtime.ErrUnimplemented.
func (a *answering) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	var resp *runtimeapi.RuntimeConfigResponse
	err := unimplemented("RuntimeConfig")
	if x, ok := a.rt.(RuntimeConfigReader); ok {
		resp, err = x.RuntimeConfig(ctx)
	}
	m, err := a.answer(ctx, "RuntimeConfig", &runtimeapi.RuntimeConfigRequest{}, resp, err)
	return as[*runtimeapi.RuntimeConfigResponse](m), err
}

// UpdateRuntimeConfig passes through to the wrapped runtime when it has
// it (RuntimeConfigUpdater), else answers runtime.ErrUnimplemented.
func (a *answering) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	err := unimplemented("UpdateRuntimeConfig")
	if x, ok := a.rt.(RuntimeConfigUpdater); ok {
		err = x.UpdateRuntimeConfig(ctx, config)
	}
	_, err = a.answer(ctx, "UpdateRuntimeConfig", &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: config}, &runtimeapi.UpdateRuntimeConfigResponse{}, err)
	return err
}

// PodSandboxStats passes through to the wrapped runtime when it has it
// (PodSandboxStatsReader), else answers runtime.ErrUnimplemented.
func (a *answering) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	var st *runtimeapi.PodSandboxStats
	err := unimplemented("PodSandboxStats")
	if x, ok := a.rt.(PodSandboxStatsReader); ok {
		st, err = x.PodSandboxStats(ctx, id)
	}
	m, err := a.answer(ctx, "PodSandboxStats", &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id}, &runtimeapi.PodSandboxStatsResponse{Stats: st}, err)
	return as[*runtimeapi.PodSandboxStatsResponse](m).GetStats(), err
}

var (
	_ RuntimeConfigReader   = (*answering)(nil)
	_ RuntimeConfigUpdater  = (*answering)(nil)
	_ PodSandboxStatsReader = (*answering)(nil)
)

func (s *runtimeServer) RuntimeConfig(ctx context.Context, _ *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	x, ok := s.rt.(RuntimeConfigReader)
	if !ok {
		return nil, unimplementedStatus("RuntimeConfig")
	}
	resp, err := x.RuntimeConfig(ctx)
	if err != nil {
		return nil, grpcErr(err)
	}
	return resp, nil
}

func (s *runtimeServer) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	x, ok := s.rt.(RuntimeConfigUpdater)
	if !ok {
		return nil, unimplementedStatus("UpdateRuntimeConfig")
	}
	if err := x.UpdateRuntimeConfig(ctx, req.RuntimeConfig); err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

func (s *runtimeServer) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	x, ok := s.rt.(PodSandboxStatsReader)
	if !ok {
		return nil, unimplementedStatus("PodSandboxStats")
	}
	st, err := x.PodSandboxStats(ctx, req.PodSandboxId)
	if err != nil {
		return nil, grpcErr(err)
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st}, nil
}
