package eviction

import (
	"context"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/stats"
)

// FsUsage is what statfs says of a filesystem.
type FsUsage = stats.FsUsage

// CRISource is a StatsSource over a stats.Provider (CRI and the host, as
// kubelet's CRI stats provider: see package stats), sampling as kubelet's
// eviction manager does: every Summary keeps the containers' and the
// node's CPU samples (stats.Provider.Get with updateStats). The pods
// cgroup's memory (allocatableMemory.available) needs WithPodsMemory;
// volumes are measured only with WithVolumeStats.
type CRISource struct {
	provider *stats.Provider
}

// SourceOption configures a CRISource.
type SourceOption func(*sourceConfig)

type sourceConfig struct{ opts []stats.Option }

// WithRootDir sets the directory whose filesystem is nodefs (default
// /var/lib/kubelet).
func WithRootDir(dir string) SourceOption {
	return func(c *sourceConfig) { c.opts = append(c.opts, stats.WithRootDir(dir)) }
}

// WithProcDir sets where /proc is (default /proc), for tests.
func WithProcDir(dir string) SourceOption {
	return func(c *sourceConfig) { c.opts = append(c.opts, stats.WithProcDir(dir)) }
}

// WithStatfs replaces statfs, for tests.
func WithStatfs(f func(path string) (FsUsage, error)) SourceOption {
	return func(c *sourceConfig) { c.opts = append(c.opts, stats.WithStatfs(f)) }
}

// WithVolumeStats adds the pods' volume stats to the Summary
// (stats.WithVolumeStats).
func WithVolumeStats(g stats.PodVolumeStatsGetter) SourceOption {
	return func(c *sourceConfig) { c.opts = append(c.opts, stats.WithVolumeStats(g)) }
}

// WithPodsMemory gives the pods cgroup's memory (its available bytes
// under the allocatable limit and its working set), the source of
// allocatableMemory.available.
func WithPodsMemory(f func(ctx context.Context) (*statsapi.MemoryStats, error)) SourceOption {
	return func(c *sourceConfig) {
		c.opts = append(c.opts, stats.WithSystemContainer(PodsContainerName, func(ctx context.Context) (*statsapi.ContainerStats, error) {
			m, err := f(ctx)
			if err != nil || m == nil {
				return nil, err
			}
			return &statsapi.ContainerStats{Memory: m}, nil
		}))
	}
}

// NewCRISource reads pods from rt and, when images is not nil, the image
// filesystem it reports, through a stats.Provider of its own.
func NewCRISource(rt runtime.StatsLister, images runtime.ImageFsInfoReader, opts ...SourceOption) *CRISource {
	var c sourceConfig
	for _, o := range opts {
		o(&c)
	}
	return &CRISource{provider: stats.New(rt, images, c.opts...)}
}

// ProviderSource is a CRISource over p, shared with others (the node
// API's /stats/summary then sees the CPU rates this source's samples
// give, as kubelet's does).
func ProviderSource(p *stats.Provider) *CRISource { return &CRISource{provider: p} }

// Provider is the stats.Provider s reads.
func (s *CRISource) Provider() *stats.Provider { return s.provider }

// Summary implements StatsSource: the Provider's Get with updateStats. A
// node-level part that cannot be read is left out (its signals are then
// not observed); a failed ListPodSandboxStats or ImageFsInfo is an error.
func (s *CRISource) Summary(ctx context.Context) (*statsapi.Summary, error) {
	return s.provider.Get(ctx, true)
}
