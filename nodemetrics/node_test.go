package nodemetrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/imagegc"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

func newMetrics(t *testing.T) (*Metrics, *clocktesting.FakePassiveClock) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(t0)
	m, err := New("node-a", WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return m, clk
}

func TestNewRefusesNoName(t *testing.T) {
	if _, err := New(""); !errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
}

// exercise feeds every hook once, so every family has a sample.
func exercise(t *testing.T, m *Metrics, clk *clocktesting.FakePassiveClock) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	m.Seen(pod.UID)
	m.ObservedPodOnWatch(pod)
	m.OnRelist(podworker.Relisted{Start: t0, Duration: time.Millisecond, Pods: map[types.UID]*podsync.PodStatus{}})
	m.OnRelist(podworker.Relisted{Start: t0.Add(time.Second), Duration: time.Millisecond, Pods: map[types.UID]*podsync.PodStatus{
		"u1": {SandboxStatuses: []*runtimeapi.PodSandboxStatus{{State: runtimeapi.PodSandboxState_SANDBOX_READY}},
			ContainerStatuses: []*podsync.ContainerStatus{{State: podsync.ContainerStateRunning}}}}})
	clk.SetTime(t0.Add(2 * time.Second))
	running := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: t0}, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Second))}}}}}
	m.OnSync(pod.UID, podworker.PodState{Pod: pod, APIStatus: running, Result: podsync.Result{Results: []*podsync.SyncResult{
		{Action: podsync.ActionCreatePodSandbox, Err: errors.New("CreatePodSandboxError")},
		{Action: podsync.ActionStartContainer, Target: "app", Err: podsync.ErrRunContainer},
	}}})
	p := pod.DeepCopy()
	p.Status = running
	m.ObservedPodOnWatch(p)
	m.OnImageGC(imagegc.Pass{Removed: []imagegc.RemovedImage{{ID: "sha256:a", Reason: "space"}}})
	k := m.EvictionKiller(fakeKiller{})
	_ = k.Evict(context.Background(), eviction.Eviction{Pod: pod, Signal: "memory.available"})
	icpt := m.UnaryClientInterceptor()
	_ = icpt(context.Background(), "/runtime.v1.RuntimeService/RunPodSandbox", &runtimeapi.RunPodSandboxRequest{}, nil, nil,
		func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			return errors.New("boom")
		})
}

type fakeKiller struct{ eviction.Killer }

func (fakeKiller) Evict(context.Context, eviction.Eviction) error { return nil }

// TestFamiliesAsDeclared: after every hook ran once, each family of
// KubeletFamilies is served with its declared type, help (stability
// first), label names and buckets.
func TestFamiliesAsDeclared(t *testing.T) {
	m, clk := newMetrics(t)
	exercise(t, m, clk)
	fams := gather(t, m.Gatherer())
	for _, f := range KubeletFamilies() {
		got := fams[f.Name]
		if got == nil {
			t.Errorf("%s: not served", f.Name)
			continue
		}
		if got.GetHelp() != f.FullHelp() || !strings.HasPrefix(got.GetHelp(), "[") {
			t.Errorf("%s: help %q, want %q", f.Name, got.GetHelp(), f.FullHelp())
		}
		if want := map[Type]dto.MetricType{Counter: dto.MetricType_COUNTER, Gauge: dto.MetricType_GAUGE, Histogram: dto.MetricType_HISTOGRAM}[f.Type]; got.GetType() != want {
			t.Errorf("%s: type %v, want %v", f.Name, got.GetType(), want)
		}
		want := slices.Clone(f.Labels)
		sort.Strings(want)
		if have := labelNames(got.Metric[0]); !slices.Equal(have, want) {
			t.Errorf("%s: labels %v, want %v", f.Name, have, want)
		}
		if f.Type == Histogram {
			var bounds []float64
			for _, b := range got.Metric[0].Histogram.Bucket {
				bounds = append(bounds, b.GetUpperBound())
			}
			if !slices.Equal(bounds, f.Buckets) {
				t.Errorf("%s: buckets %v, want %v", f.Name, bounds, f.Buckets)
			}
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("%s not served", name)
		}
	}
}

func TestHandlerText(t *testing.T) {
	m, _ := newMetrics(t)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.\n# TYPE kubelet_node_name gauge\nkubelet_node_name{node=\"node-a\"} 1\n",
		"kubelet_started_pods_total 0\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("body lacks %q", want)
		}
	}
	// Absent until known, rather than 0.
	for _, absent := range []string{"kubelet_running_pods ", "kubelet_pleg_last_seen_seconds ", "kubelet_first_network_pod_start_sli_duration_seconds "} {
		if strings.Contains(string(body), absent) {
			t.Errorf("body has %q before any relist or pod", absent)
		}
	}
}

func TestOnRelist(t *testing.T) {
	m, _ := newMetrics(t)
	ready := []*runtimeapi.PodSandboxStatus{{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}, {State: runtimeapi.PodSandboxState_SANDBOX_READY}}
	pods := map[types.UID]*podsync.PodStatus{
		"a": {SandboxStatuses: ready, ContainerStatuses: []*podsync.ContainerStatus{{State: podsync.ContainerStateRunning}, {State: podsync.ContainerStateExited}}},
		"b": {SandboxStatuses: ready[:1], ContainerStatuses: []*podsync.ContainerStatus{{State: podsync.ContainerStateExited}}},
		"c": {SandboxStatuses: ready[1:], ContainerStatuses: []*podsync.ContainerStatus{{State: podsync.ContainerStateCreated}}},
	}
	m.OnRelist(podworker.Relisted{Start: t0, Duration: 20 * time.Millisecond, Pods: pods})
	fams := gather(t, m.Gatherer())
	if n := value(t, fams, "kubelet_pleg_relist_duration_seconds"); n != 1 {
		t.Errorf("relist durations %v, want 1", n)
	}
	if fams["kubelet_pleg_relist_interval_seconds"].Metric[0].Histogram.GetSampleCount() != 0 {
		t.Error("an interval observed after the first relist")
	}
	if v := value(t, fams, "kubelet_running_pods"); v != 2 {
		t.Errorf("running pods %v, want 2", v)
	}
	for state, want := range map[string]float64{"running": 1, "exited": 2, "created": 1} {
		if v := value(t, fams, "kubelet_running_containers", "container_state="+state); v != want {
			t.Errorf("%s containers %v, want %v", state, v, want)
		}
	}
	// A failed relist: a duration and an interval, counts unchanged.
	m.OnRelist(podworker.Relisted{Start: t0.Add(3 * time.Second), Duration: time.Millisecond, Err: errors.New("down")})
	fams = gather(t, m.Gatherer())
	h := fams["kubelet_pleg_relist_interval_seconds"].Metric[0].Histogram
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 3 {
		t.Errorf("interval count %d sum %v, want 1 and 3", h.GetSampleCount(), h.GetSampleSum())
	}
	if v := value(t, fams, "kubelet_running_pods"); v != 2 {
		t.Errorf("running pods %v after a failed relist, want 2", v)
	}
}

func TestOnSyncStarts(t *testing.T) {
	m, _ := newMetrics(t)
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "app"}, {Name: "crash"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}}}
	m.OnSync("u", podworker.PodState{Pod: pod, Result: podsync.Result{Results: []*podsync.SyncResult{
		{Action: podsync.ActionCreatePodSandbox},
		{Action: podsync.ActionStartContainer, Target: "init"},
		{Action: podsync.ActionStartContainer, Target: "app", Err: images.ErrImagePull},
		{Action: podsync.ActionStartContainer, Target: "crash", Err: &podsync.BackOffError{Reason: podsync.ErrCrashLoopBackOff}},
		{Action: podsync.ActionStartContainer, Target: "debug"},
		{Action: podsync.ActionKillContainer, Target: "old"},
	}}})
	fams := gather(t, m.Gatherer())
	if v := value(t, fams, "kubelet_started_pods_total"); v != 1 {
		t.Errorf("started pods %v", v)
	}
	if v := value(t, fams, "kubelet_started_pods_errors_total"); v != 0 {
		t.Errorf("pod errors %v", v)
	}
	for typ, want := range map[string]float64{"init_container": 1, "container": 1, "ephemeral_container": 1} {
		if v := value(t, fams, "kubelet_started_containers_total", "container_type="+typ); v != want {
			t.Errorf("%s started %v, want %v", typ, v, want)
		}
	}
	if v := value(t, fams, "kubelet_started_containers_errors_total", "container_type=container", "code=ErrImagePull"); v != 1 {
		t.Errorf("ErrImagePull errors %v", v)
	}
}

func TestPodStartLatency(t *testing.T) {
	m, clk := newMetrics(t)
	created := t0.Add(-10 * time.Second)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	m.ObservedPodOnWatch(pod) // no start time yet: tracked
	m.Seen(pod.UID)
	rec := m.Recorder(nil)
	ref := images.ContainerRef(pod, &pod.Spec.Containers[0])
	rec.Eventf(ref, corev1.EventTypeNormal, images.EventPulling, "Pulling image %q", "x")
	clk.SetTime(t0.Add(4 * time.Second))
	rec.Eventf(ref, corev1.EventTypeNormal, images.EventPulled, "Successfully pulled image %q in 4s", "x")
	clk.SetTime(t0.Add(5 * time.Second))
	running := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: t0}, ContainerStatuses: []corev1.ContainerStatus{
		{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(5 * time.Second))}}}}}
	m.OnSync(pod.UID, podworker.PodState{Pod: pod, APIStatus: running})
	clk.SetTime(t0.Add(6 * time.Second))
	p := pod.DeepCopy()
	p.Status = running
	m.ObservedPodOnWatch(p)
	m.ObservedPodOnWatch(p) // recorded once
	m.Seen(pod.UID)         // the status write's echo: not seen anew
	m.OnSync(pod.UID, podworker.PodState{Pod: pod, APIStatus: running})
	fams := gather(t, m.Gatherer())
	for name, want := range map[string]float64{
		"kubelet_pod_start_duration_seconds":       5,  // seen at t0, Running at t0+5s
		"kubelet_pod_start_total_duration_seconds": 16, // created t0-10s, watched at t0+6s
		"kubelet_pod_start_sli_duration_seconds":   12, // less the 4 s pull
	} {
		h := find(fams[name]).Histogram
		if h.GetSampleCount() != 1 || h.GetSampleSum() != want {
			t.Errorf("%s: count %d sum %v, want 1 and %v", name, h.GetSampleCount(), h.GetSampleSum(), want)
		}
	}
	if v := value(t, fams, "kubelet_first_network_pod_start_sli_duration_seconds"); v != 12 {
		t.Errorf("first network pod %v", v)
	}
}

func TestPullTimeOverlaps(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	got := pullTime([][2]time.Time{{at(0), at(4)}, {at(2), at(6)}, {at(3), at(5)}, {at(10), at(11)}})
	if got != 7*time.Second {
		t.Errorf("pullTime = %v, want 7s", got)
	}
}

func TestRuntimeOperations(t *testing.T) {
	m, clk := newMetrics(t)
	icpt := m.UnaryClientInterceptor()
	call := func(method string, req any, err error) {
		_ = icpt(context.Background(), method, req, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			clk.SetTime(clk.Now().Add(2 * time.Second))
			return err
		})
	}
	call("/runtime.v1.RuntimeService/ListPodSandbox", &runtimeapi.ListPodSandboxRequest{}, nil)
	call("/runtime.v1.RuntimeService/ListPodSandbox", &runtimeapi.ListPodSandboxRequest{}, errors.New("x"))
	call("/runtime.v1.ImageService/PullImage", &runtimeapi.PullImageRequest{}, nil)
	call("/runtime.v1.RuntimeService/RunPodSandbox", &runtimeapi.RunPodSandboxRequest{RuntimeHandler: "runc"}, errors.New("x"))
	call("/runtime.v1.RuntimeService/SomethingNew", nil, nil)
	fams := gather(t, m.Gatherer())
	for _, c := range []struct {
		name, op string
		want     float64
	}{
		{"kubelet_runtime_operations_total", "list_podsandbox", 2},
		{"kubelet_runtime_operations_errors_total", "list_podsandbox", 1},
		{"kubelet_runtime_operations_duration_seconds", "list_podsandbox", 2},
		{"kubelet_runtime_operations_total", "pull_image", 1},
		{"kubelet_runtime_operations_total", "run_podsandbox", 1},
		{"kubelet_runtime_operations_total", "something_new", 1},
	} {
		if v := value(t, fams, c.name, "operation_type="+c.op); v != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.op, v, c.want)
		}
	}
	if v := value(t, fams, "kubelet_run_podsandbox_errors_total", "runtime_handler=runc"); v != 1 {
		t.Errorf("run_podsandbox errors %v", v)
	}
	if h := find(fams["kubelet_run_podsandbox_duration_seconds"], "runtime_handler=runc").Histogram; h.GetSampleSum() != 2 {
		t.Errorf("run_podsandbox duration %v, want 2", h.GetSampleSum())
	}
}

func TestEvictionSignals(t *testing.T) {
	m, _ := newMetrics(t)
	k := m.EvictionKiller(fakeKiller{})
	for _, e := range []eviction.Eviction{
		{Signal: "memory.available"},
		{Message: `Usage of EmptyDir volume "v" exceeds the limit "1Mi". `},
		{Message: "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. "},
		{Message: `Container c exceeded its local ephemeral storage limit "1Mi". `},
		{Message: "something else"},
	} {
		if err := k.Evict(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	fams := gather(t, m.Gatherer())
	for _, s := range []string{"memory.available", "emptydirfs.limit", "ephemeralpodfs.limit", "ephemeralcontainerfs.limit"} {
		if v := value(t, fams, "kubelet_evictions", "eviction_signal="+s); v != 1 {
			t.Errorf("%s: %v", s, v)
		}
	}
	if n := len(fams["kubelet_evictions"].Metric); n != 4 {
		t.Errorf("%d signals, want 4", n)
	}
}

func TestImageGC(t *testing.T) {
	m, _ := newMetrics(t)
	m.OnImageGC(imagegc.Pass{Removed: []imagegc.RemovedImage{{Reason: "age"}, {Reason: "space"}, {Reason: "space"}}})
	fams := gather(t, m.Gatherer())
	if v := value(t, fams, "kubelet_image_garbage_collected_total", "reason=space"); v != 2 {
		t.Errorf("space %v", v)
	}
	if v := value(t, fams, "kubelet_image_garbage_collected_total", "reason=age"); v != 1 {
		t.Errorf("age %v", v)
	}
}
