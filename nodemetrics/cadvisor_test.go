package nodemetrics

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeSummary struct {
	sum *statsapi.Summary
	err error
}

func (f fakeSummary) Get(context.Context, bool) (*statsapi.Summary, error) { return f.sum, f.err }

type fakeLister struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func (f fakeLister) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return f.sandboxes, nil
}

func (f fakeLister) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return f.containers, nil
}

func u64(v uint64) *uint64 { return &v }

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCadvisor(t *testing.T) {
	cg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.controllers"), []byte("cpu memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(cg, "kubepods", "besteffort", "pod1111")
	mkdirs(t, filepath.Join(pod, "ctr1"), filepath.Join(pod, "sb1"))
	// pod2222's cgroup is not there: cAdvisor would not see it.
	ts := metav1.NewTime(t0)
	sum := &statsapi.Summary{Pods: []statsapi.PodStats{{
		PodRef:  statsapi.PodReference{Name: "web", Namespace: "ns", UID: "1111"},
		CPU:     &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u64(3e9)},
		Memory:  &statsapi.MemoryStats{Time: ts, WorkingSetBytes: u64(100), UsageBytes: u64(150)},
		Network: &statsapi.NetworkStats{Time: ts, Interfaces: []statsapi.InterfaceStats{{Name: "eth0", RxBytes: u64(10), TxBytes: u64(20)}}},
		Containers: []statsapi.ContainerStats{{Name: "app", StartTime: metav1.NewTime(t0.Add(-60e9)),
			CPU:    &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u64(2e9)},
			Memory: &statsapi.MemoryStats{Time: ts, WorkingSetBytes: u64(90), UsageBytes: u64(120), RSSBytes: u64(80)}}},
	}, {
		PodRef: statsapi.PodReference{Name: "gone", Namespace: "ns", UID: "2222"},
		CPU:    &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: u64(1e9)},
	}}}
	rt := fakeLister{
		sandboxes: []*runtimeapi.PodSandbox{{Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "1111"}}},
		containers: []*runtimeapi.Container{{Id: "ctr1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:  &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "nginx:1.27"},
			Labels: map[string]string{"io.kubernetes.pod.uid": "1111"}}},
	}
	c := NewCadvisor(fakeSummary{sum: sum}, rt, WithCgroupDir(cg), WithSandboxImage("registry.k8s.io/pause:3.10"),
		WithCadvisorClock(clocktesting.NewFakePassiveClock(t0)))
	fams := gather(t, c.Gatherer(context.Background()))
	ctr := []string{"container=app", "id=/kubepods/besteffort/pod1111/ctr1", "image=nginx:1.27", "name=ctr1", "namespace=ns", "pod=web"}
	podL := []string{"container=", "id=/kubepods/besteffort/pod1111", "image=", "name=", "namespace=ns", "pod=web"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"container_cpu_usage_seconds_total", append(ctr, "cpu=total"), 2},
		{"container_memory_working_set_bytes", ctr, 90},
		{"container_memory_usage_bytes", ctr, 120},
		{"container_memory_rss", ctr, 80},
		{"container_start_time_seconds", ctr, float64(t0.Unix() - 60)},
		{"container_last_seen", ctr, float64(t0.Unix())},
		{"container_cpu_usage_seconds_total", append(podL, "cpu=total"), 3},
		{"container_memory_working_set_bytes", podL, 100},
		{"container_network_receive_bytes_total", []string{"container=", "id=/kubepods/besteffort/pod1111/sb1", "image=registry.k8s.io/pause:3.10", "name=sb1", "pod=web", "interface=eth0"}, 10},
		{"container_network_transmit_bytes_total", []string{"name=sb1", "interface=eth0"}, 20},
		{"container_scrape_error", nil, 0},
	} {
		if v := value(t, fams, c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	if m := find(fams["container_memory_working_set_bytes"], ctr...); m.GetTimestampMs() != t0.UnixMilli() {
		t.Errorf("timestamp %d, want the stats' %d", m.GetTimestampMs(), t0.UnixMilli())
	}
	// Not known, not written: the pod's rss, the interface's errors, the pod without a cgroup.
	if find(fams["container_memory_rss"], podL...) != nil || fams["container_network_receive_errors_total"] != nil || find(fams["container_cpu_usage_seconds_total"], "pod=gone") != nil {
		t.Error("a series podstart does not know was written")
	}
	if got := labelNames(find(fams["container_memory_rss"])); len(got) != 6 {
		t.Errorf("labels %v, want kubelet's six", got)
	}
}

func TestCadvisorSystemdNames(t *testing.T) {
	cg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.controllers"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pod := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice"
	mkdirs(t, filepath.Join(cg, pod, "cri-containerd-abc.scope"))
	f := newCgroupFinder(cg, "")
	got, ok := f.pod("12-34")
	if !ok || got != pod {
		t.Fatalf("pod cgroup %q %v", got, ok)
	}
	if id := f.children(got)["abc"]; id != pod+"/cri-containerd-abc.scope" {
		t.Errorf("container cgroup %q", id)
	}
}

func TestCadvisorScrapeError(t *testing.T) {
	c := NewCadvisor(fakeSummary{err: errors.New("no stats")}, fakeLister{}, WithCgroupDir(t.TempDir()))
	fams := gather(t, c.Gatherer(context.Background()))
	if v := value(t, fams, "container_scrape_error"); v != 1 || len(fams) != 1 {
		t.Errorf("scrape error %v, %d families", v, len(fams))
	}
}
