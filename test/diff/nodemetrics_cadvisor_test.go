package diff

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	cadvisorcontainer "github.com/google/cadvisor/lib/container"
	cadvisormetrics "github.com/google/cadvisor/lib/metrics"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/nodemetrics"
)

// oneContainer is cAdvisor's view of one running container, with every
// value nodemetrics serves set.
type oneContainer struct{ at time.Time }

func (o oneContainer) GetRequestedContainersInfo(string, cadvisorapi.RequestOptions) (map[string]*cadvisorapi.ContainerInfo, error) {
	return map[string]*cadvisorapi.ContainerInfo{"/kubepods/pod1/c1": {
		ContainerReference: cadvisorapi.ContainerReference{Name: "/kubepods/pod1/c1", Aliases: []string{"c1"}},
		Spec:               cadvisorapi.ContainerSpec{Image: "nginx", CreationTime: o.at},
		Stats: []*cadvisorapi.ContainerStats{{Timestamp: o.at,
			Cpu:     &cadvisorapi.CpuStats{Usage: cadvisorapi.CpuUsage{Total: 1e9}},
			Memory:  &cadvisorapi.MemoryStats{Usage: 3, WorkingSet: 2, RSS: 1, Swap: 1},
			Network: &cadvisorapi.NetworkStats{Interfaces: []cadvisorapi.InterfaceStats{{Name: "eth0", RxBytes: 1, RxErrors: 1, TxBytes: 1, TxErrors: 1}}}}},
	}}, nil
}

func (oneContainer) GetVersionInfo() (*cadvisorapi.VersionInfo, error) {
	return &cadvisorapi.VersionInfo{}, nil
}
func (oneContainer) GetMachineInfo() (*cadvisorapi.MachineInfo, error) {
	return &cadvisorapi.MachineInfo{}, nil
}

type summaryOf struct{ s *statsapi.Summary }

func (s summaryOf) Get(context.Context, bool) (*statsapi.Summary, error) { return s.s, nil }

type listOf struct {
	sb []*runtimeapi.PodSandbox
	c  []*runtimeapi.Container
}

func (l listOf) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return l.sb, nil
}
func (l listOf) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return l.c, nil
}

func families(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func labelSet(f *dto.MetricFamily) []string {
	var out []string
	for _, l := range f.Metric[0].Label {
		out = append(out, l.GetName())
	}
	sort.Strings(out)
	return out
}

// Every container_* family nodemetrics serves on /metrics/cadvisor is one
// cAdvisor's collector serves under kubelet's default includedMetrics,
// with the same help text, type and label names (kubelet's six and the
// family's own).
func TestCadvisorFamiliesAgainstCadvisor(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	included := cadvisorcontainer.MetricSet{cadvisorcontainer.CpuUsageMetrics: {}, cadvisorcontainer.MemoryUsageMetrics: {},
		cadvisorcontainer.DiskIOMetrics: {}, cadvisorcontainer.DiskUsageMetrics: {}, cadvisorcontainer.NetworkUsageMetrics: {},
		cadvisorcontainer.AppMetrics: {}, cadvisorcontainer.ProcessMetrics: {}, cadvisorcontainer.OOMMetrics: {}}
	// kubelet's containerPrometheusLabelsFunc gives these six labels.
	kubeletLabels := func(c *cadvisorapi.ContainerInfo) map[string]string {
		return map[string]string{"id": c.Name, "name": c.Aliases[0], "image": c.Spec.Image, "pod": "web", "namespace": "ns", "container": "app"}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(cadvisormetrics.NewPrometheusCollector(oneContainer{at}, kubeletLabels, included, clock.RealClock{},
		cadvisorapi.RequestOptions{IdType: cadvisorapi.TypeName, Count: 1, Recursive: true}))
	theirs := families(t, reg)

	cg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.controllers"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"c1", "sb1"} {
		if err := os.MkdirAll(filepath.Join(cg, "kubepods", "pod1", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u := func(v uint64) *uint64 { return &v }
	ts := metav1.NewTime(at)
	sum := &statsapi.Summary{Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{Name: "web", Namespace: "ns", UID: "1"},
		Network: &statsapi.NetworkStats{Time: ts, Interfaces: []statsapi.InterfaceStats{{Name: "eth0", RxBytes: u(1), RxErrors: u(1), TxBytes: u(1), TxErrors: u(1)}}},
		Containers: []statsapi.ContainerStats{{Name: "app", StartTime: ts, CPU: &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u(1e9)},
			Memory: &statsapi.MemoryStats{Time: ts, UsageBytes: u(3), WorkingSetBytes: u(2), RSSBytes: u(1)},
			Swap:   &statsapi.SwapStats{Time: ts, SwapUsageBytes: u(1)}}}}}}
	rt := listOf{sb: []*runtimeapi.PodSandbox{{Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "1"}}},
		c: []*runtimeapi.Container{{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "nginx"},
			Labels: map[string]string{"io.kubernetes.pod.uid": "1"}}}}
	ours := families(t, nodemetrics.NewCadvisor(summaryOf{sum}, rt, nodemetrics.WithCgroupDir(cg), nodemetrics.WithSandboxImage("pause")).Gatherer(context.Background()))

	equal := 0
	for _, name := range nodemetrics.CadvisorFamilies() {
		o, k := ours[name], theirs[name]
		switch {
		case o == nil:
			t.Errorf("%s: not served by nodemetrics on this input", name)
		case k == nil:
			t.Errorf("%s: cAdvisor serves no such family", name)
		case o.GetHelp() != k.GetHelp() || o.GetType() != k.GetType():
			t.Errorf("%s: help %q type %v, cAdvisor %q %v", name, o.GetHelp(), o.GetType(), k.GetHelp(), k.GetType())
		case name != "container_scrape_error" && !slices.Equal(labelSet(o), labelSet(k)):
			t.Errorf("%s: labels %v, cAdvisor %v", name, labelSet(o), labelSet(k))
		default:
			equal++
		}
	}
	var missing []string
	for name := range theirs {
		if _, ok := ours[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	t.Logf("%d cAdvisor families equal, %d different; cAdvisor serves %d more on this input that podstart does not: %v",
		equal, len(nodemetrics.CadvisorFamilies())-equal, len(missing), missing)
}
