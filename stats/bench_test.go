package stats_test

import (
	"context"
	"io"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/stats"
)

// canned answers what the fake answered once: the provider's own cost,
// without the fake's (whose ListPodSandboxStats sorts every container
// once per sandbox).
type canned struct {
	statsOnly
	pods       []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	imageFs    *runtimeapi.ImageFsInfoResponse
}

func (c canned) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return c.pods, nil
}

func (c canned) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return c.containers, nil
}

func (c canned) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return c.imageFs, nil
}

// A Summary, and /metrics/resource, of a node with 500 pods (one running
// container and one exited each).
func BenchmarkSummary500Pods(b *testing.B) {
	n := newNode(b, 500)
	prov := n.provider()
	ctx := context.Background()
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := prov.Get(ctx, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	var c canned
	var err error
	if c.sandboxes, err = n.rt.ListPodSandboxStats(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if c.pods, err = n.rt.ListPodSandbox(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if c.containers, err = n.rt.ListContainers(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if c.imageFs, err = n.rt.ImageFsInfo(ctx); err != nil {
		b.Fatal(err)
	}
	own := stats.New(c, c, stats.WithClock(n.clock), stats.WithProcDir(n.proc), stats.WithRootDir(n.rootDir), stats.WithPodLogsDir(n.logsDir),
		stats.WithCgroupDir(n.cgroup), stats.WithStatfs(func(string) (stats.FsUsage, error) { return stats.FsUsage{CapacityBytes: 1 << 40}, nil }))
	b.Run("Get/provider-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := own.Get(ctx, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ResourceMetrics/provider-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := own.ResourceMetrics(ctx, io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ResourceMetrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := prov.ResourceMetrics(ctx, io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}
