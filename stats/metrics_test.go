package stats_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podstart/podstart/stats"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// /metrics/resource of a two-pod node, against its golden text.
func TestResourceMetricsGolden(t *testing.T) {
	t.Parallel()
	n := newNode(t, 2)
	n.cpu["app"] = 1500e6
	var buf bytes.Buffer
	if err := n.provider().ResourceMetrics(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "resource_metrics.golden", buf.Bytes())
}

func TestResourceMetricsScrapeError(t *testing.T) {
	t.Parallel()
	n := newNode(t, 1)
	n.rt.FailNext("ListPodSandboxStats", 1, errors.New("boom"))
	var buf bytes.Buffer
	if err := n.provider().ResourceMetrics(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	want := "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// Swap, label escaping, label order and expfmt's numbers.
func TestWriteResourceMetrics(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1700000000123)
	sum := &statsapi.Summary{Pods: []statsapi.PodStats{
		{PodRef: statsapi.PodReference{Name: "b", Namespace: "ns"}, Containers: []statsapi.ContainerStats{{Name: `q"\` + "\n",
			Swap: &statsapi.SwapStats{Time: metaTime(at), SwapUsageBytes: p[uint64](1 << 20), SwapAvailableBytes: p[uint64](3 << 20)}}}},
		{PodRef: statsapi.PodReference{Name: "a", Namespace: "ns"}, Swap: &statsapi.SwapStats{Time: metaTime(at), SwapUsageBytes: p[uint64](0)}},
	}}
	var buf bytes.Buffer
	if err := stats.WriteResourceMetrics(&buf, sum, nil); err != nil {
		t.Fatal(err)
	}
	want := `# HELP container_swap_limit_bytes [ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems
# TYPE container_swap_limit_bytes gauge
container_swap_limit_bytes{container="q\"\\\n",namespace="ns",pod="b"} 4.194304e+06 1700000000123
# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems
# TYPE container_swap_usage_bytes gauge
container_swap_usage_bytes{container="q\"\\\n",namespace="ns",pod="b"} 1.048576e+06 1700000000123
# HELP pod_swap_usage_bytes [ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems
# TYPE pod_swap_usage_bytes gauge
pod_swap_usage_bytes{namespace="ns",pod="a"} 0 1700000000123
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// CPUAndMemory: kubelet's GetCPUAndMemoryStats shape.
func TestCPUAndMemory(t *testing.T) {
	t.Parallel()
	n := newNode(t, 1)
	n.noCPU["app"] = true
	sum, err := n.provider().Summary(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	nd := sum.Node
	if nd.CPU == nil || nd.Memory == nil || nd.Swap == nil || nd.Network != nil || nd.Fs != nil || nd.Runtime != nil || nd.Rlimit != nil {
		t.Errorf("node: %+v", nd)
	}
	pod := sum.Pods[0]
	if pod.Network != nil || pod.EphemeralStorage != nil || pod.ProcessStats != nil || pod.Swap == nil || *pod.Swap.SwapUsageBytes != 0 {
		t.Errorf("pod: %+v", pod)
	}
	c := pod.Containers[0]
	zero := p[uint64](0)
	if c.Rootfs != nil || c.Logs != nil || !cmp.Equal(c.CPU.UsageCoreNanoSeconds, zero) || !cmp.Equal(c.CPU.UsageNanoCores, zero) ||
		!cmp.Equal(c.Memory.AvailableBytes, zero) || *c.Memory.WorkingSetBytes != 10<<20 {
		t.Errorf("container: %+v cpu %+v memory %+v", c, c.CPU, c.Memory)
	}
}

// statsOnly is a runtime with CRI stats and nothing else.
type statsOnly struct {
	sandboxes []*runtimeapi.PodSandboxStats
}

func (s statsOnly) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return nil, nil
}

func (s statsOnly) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return s.sandboxes, nil
}

// Without ListPodSandbox and ListContainers: per pod UID the highest
// sandbox attempt, per container name the highest attempt, no start times.
func TestWithoutLister(t *testing.T) {
	t.Parallel()
	u := func(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }
	ctr := func(name string, attempt uint32, ws uint64) *runtimeapi.ContainerStats {
		return &runtimeapi.ContainerStats{
			Attributes: &runtimeapi.ContainerAttributes{Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}},
			Memory:     &runtimeapi.MemoryUsage{WorkingSetBytes: u(ws)},
		}
	}
	sb := func(uid string, attempt uint32, procs uint64, cs ...*runtimeapi.ContainerStats) *runtimeapi.PodSandboxStats {
		return &runtimeapi.PodSandboxStats{
			Attributes: &runtimeapi.PodSandboxAttributes{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + uid, Namespace: "ns", Uid: uid, Attempt: attempt}},
			Linux:      &runtimeapi.LinuxPodSandboxStats{Process: &runtimeapi.ProcessUsage{ProcessCount: u(procs)}, Containers: cs},
		}
	}
	rt := statsOnly{[]*runtimeapi.PodSandboxStats{
		sb("a", 1, 3, ctr("c", 0, 100), ctr("c", 2, 200), ctr("c", 1, 150), ctr("d", 0, 7)),
		sb("a", 0, 9), // an older sandbox of the same pod
		sb("b", 0, 1),
		{Attributes: &runtimeapi.PodSandboxAttributes{}}, // no metadata
	}}
	sum, err := stats.New(rt, nil, stats.WithProcDir(t.TempDir()), stats.WithCgroupDir(t.TempDir()), stats.WithPodLogsDir(t.TempDir()), stats.WithRootDir(t.TempDir()),
		stats.WithStatfs(func(string) (stats.FsUsage, error) { return stats.FsUsage{}, errNoFs })).Get(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		UID   string
		Procs uint64
		WS    map[string]uint64
		Start bool
	}
	var have []got
	for _, p := range sum.Pods {
		g := got{UID: p.PodRef.UID, Procs: *p.ProcessStats.ProcessCount, WS: map[string]uint64{}, Start: !p.StartTime.IsZero()}
		for _, c := range p.Containers {
			g.WS[c.Name] = *c.Memory.WorkingSetBytes
			g.Start = g.Start || !c.StartTime.IsZero()
		}
		have = append(have, g)
	}
	want := []got{{UID: "a", Procs: 3, WS: map[string]uint64{"c": 200, "d": 7}}, {UID: "b", Procs: 1, WS: map[string]uint64{}}}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
}
