package stats_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/stats"
)

// volumeSource is a fake stats.VolumeSource whose volumes count their
// measurements.
type volumeSource struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	volumes map[types.UID][]string
	metrics map[string]stats.VolumeMetrics
	errs    map[string]error
	calls   map[string]int
}

func (s *volumeSource) VolumePods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*corev1.Pod(nil), s.pods...)
}

func (s *volumeSource) MountedVolumes(uid types.UID) ([]stats.MountedVolume, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stats.MountedVolume
	for _, name := range s.volumes[uid] {
		out = append(out, stats.MountedVolume{Name: name, Metrics: func(context.Context) (stats.VolumeMetrics, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls[name]++
			return s.metrics[name], s.errs[name]
		}})
	}
	return out, len(out) > 0
}

func (s *volumeSource) set(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

func (s *volumeSource) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[name]
}

func volumePod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid-db"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			{Name: "inline", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}},
			{Name: "nostats", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "old"}}},
			{Name: "broken", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "gone"}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		}}}
}

// analyzer runs a VolumeAnalyzer over src with a fake clock and a jitter
// of half the period; waits receives one value each time the pod loop or
// a calculator starts waiting.
func analyzer(t *testing.T, src *volumeSource) (*stats.VolumeAnalyzer, *testingclock.FakeClock, chan struct{}) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	a := stats.NewVolumeAnalyzer(src, stats.WithVolumeClock(clk))
	waits := make(chan struct{}, 16)
	stats.SetVolumeAnalyzerHooks(a, func(d time.Duration) time.Duration { return d + d/2 }, func() { waits <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, clk, waits
}

func wait(t *testing.T, waits chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-waits:
		case <-time.After(30 * time.Second):
			t.Fatal("the analyzer did not wait")
		}
	}
}

func TestVolumeAnalyzer(t *testing.T) {
	t.Parallel()
	pod := volumePod()
	src := &volumeSource{pods: []*corev1.Pod{pod}, calls: map[string]int{},
		volumes: map[types.UID][]string{pod.UID: {"data", "scratch", "inline", "nostats", "broken", "cm"}},
		metrics: map[string]stats.VolumeMetrics{
			"data":    {AvailableBytes: 700, CapacityBytes: 1000, UsedBytes: 300, Inodes: 50, InodesFree: 40, InodesUsed: 10},
			"scratch": {AvailableBytes: 1, CapacityBytes: 2, UsedBytes: 1},
			"inline":  {UsedBytes: 5},
			"cm":      {UsedBytes: 4096, InodesUsed: 3},
		},
		errs: map[string]error{"nostats": stats.ErrVolumeMetricsNotSupported, "broken": errors.New("driver not registered")}}
	a, clk, waits := analyzer(t, src)
	wait(t, waits, 2) // the pod loop, and the pod's calculator after measuring
	got, ok := a.PodVolumeStats(pod.UID)
	if !ok {
		t.Fatal("no stats after the first measurement")
	}
	at := metav1.NewTime(t0)
	u := func(v uint64) *uint64 { return &v }
	want := stats.PodVolumeStats{
		Ephemeral: []statsapi.VolumeStats{{Name: "cm", FsStats: statsapi.FsStats{Time: at, AvailableBytes: u(0), CapacityBytes: u(0), UsedBytes: u(4096), Inodes: u(0), InodesFree: u(0), InodesUsed: u(3)}}},
		Persistent: []statsapi.VolumeStats{
			{Name: "data", PVCRef: &statsapi.PVCReference{Name: "data-db-0", Namespace: "ns"},
				FsStats: statsapi.FsStats{Time: at, AvailableBytes: u(700), CapacityBytes: u(1000), UsedBytes: u(300), Inodes: u(50), InodesFree: u(40), InodesUsed: u(10)}},
			{Name: "inline", FsStats: statsapi.FsStats{Time: at, AvailableBytes: u(0), CapacityBytes: u(0), UsedBytes: u(5), Inodes: u(0), InodesFree: u(0), InodesUsed: u(0)}},
			{Name: "scratch", PVCRef: &statsapi.PVCReference{Name: "db-scratch", Namespace: "ns"},
				FsStats: statsapi.FsStats{Time: at, AvailableBytes: u(1), CapacityBytes: u(2), UsedBytes: u(1), Inodes: u(0), InodesFree: u(0), InodesUsed: u(0)}},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	// Reads come from the cache.
	for range 3 {
		a.PodVolumeStats(pod.UID)
	}
	if n := src.count("data"); n != 1 {
		t.Fatalf("data measured %d times, want 1", n)
	}

	// The pod loop runs every period; the calculator every period plus
	// its jitter, after which the new values show.
	src.set(func() { src.metrics["data"] = stats.VolumeMetrics{UsedBytes: 600} })
	clk.Step(stats.DefaultVolumeStatsPeriod)
	wait(t, waits, 1)
	if n := src.count("data"); n != 1 {
		t.Fatalf("data measured %d times before its period, want 1", n)
	}
	clk.Step(stats.DefaultVolumeStatsPeriod / 2)
	wait(t, waits, 1)
	got, _ = a.PodVolumeStats(pod.UID)
	if n := src.count("data"); n != 2 || *got.Persistent[0].UsedBytes != 600 || !got.Persistent[0].Time.Equal(&metav1.Time{Time: clk.Now()}) {
		t.Fatalf("after the period: %d measurements, %+v", n, got.Persistent[0])
	}

	// No volume mounted any more: the last stats stay, as kubelet's.
	src.set(func() { src.volumes = nil })
	clk.Step(stats.DefaultVolumeStatsPeriod / 2) // t0+2m: the pod loop
	wait(t, waits, 1)
	clk.Step(stats.DefaultVolumeStatsPeriod) // t0+3m: the pod loop and the calculator
	wait(t, waits, 2)
	if got, ok := a.PodVolumeStats(pod.UID); !ok || *got.Persistent[0].UsedBytes != 600 || src.count("data") != 2 {
		t.Fatalf("stats without mounted volumes: %v %+v", ok, got)
	}

	// The pod gone: its calculator stops, its stats go.
	src.set(func() { src.pods = nil })
	clk.Step(stats.DefaultVolumeStatsPeriod) // t0+4m: the pod loop
	wait(t, waits, 1)
	if _, ok := a.PodVolumeStats(pod.UID); ok {
		t.Fatal("stats of a pod gone")
	}
}

func TestVolumeAnalyzerDisabled(t *testing.T) {
	t.Parallel()
	src := &volumeSource{pods: []*corev1.Pod{volumePod()}, calls: map[string]int{}}
	a := stats.NewVolumeAnalyzer(src, stats.WithVolumeStatsPeriod(0))
	a.Run(context.Background()) // returns at once
	if _, ok := a.PodVolumeStats("uid-db"); ok {
		t.Fatal("stats with the collection disabled")
	}
}

type fixedVolumeStats map[types.UID]stats.PodVolumeStats

func (f fixedVolumeStats) PodVolumeStats(uid types.UID) (stats.PodVolumeStats, bool) {
	s, ok := f[uid]
	return s, ok
}

// The Summary lists a pod's volumes, ephemeral first, and only the local
// ephemeral ones count in its ephemeral storage (kubelet excludes PVCs).
func TestSummaryVolumeStats(t *testing.T) {
	t.Parallel()
	n := newNode(t, 1)
	u := func(v uint64) *uint64 { return &v }
	later := metav1.NewTime(t0.Add(time.Minute))
	vs := stats.PodVolumeStats{
		Ephemeral:  []statsapi.VolumeStats{{Name: "cm", FsStats: statsapi.FsStats{Time: later, UsedBytes: u(4096), InodesUsed: u(3)}}},
		Persistent: []statsapi.VolumeStats{{Name: "data", PVCRef: &statsapi.PVCReference{Name: "c", Namespace: "default"}, FsStats: statsapi.FsStats{Time: later, UsedBytes: u(1 << 30), InodesUsed: u(1000)}}},
	}
	prov := n.provider(stats.WithVolumeStats(fixedVolumeStats{"uid-web": vs}))
	base, err := n.provider().Get(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := prov.Get(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	ps := sum.Pods[0]
	if len(ps.VolumeStats) != 2 || ps.VolumeStats[0].Name != "cm" || ps.VolumeStats[1].Name != "data" || ps.VolumeStats[1].PVCRef.Name != "c" {
		t.Fatalf("volume stats %+v", ps.VolumeStats)
	}
	b, e := base.Pods[0].EphemeralStorage, ps.EphemeralStorage
	if *e.UsedBytes != *b.UsedBytes+4096 || *e.InodesUsed != *b.InodesUsed+3 || !e.Time.Equal(&later) {
		t.Fatalf("ephemeral storage %d bytes %d inodes at %v, want %d, %d at %v", *e.UsedBytes, *e.InodesUsed, e.Time, *b.UsedBytes+4096, *b.InodesUsed+3, later)
	}
	cm, err := prov.CPUAndMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cm.Pods[0].VolumeStats != nil {
		t.Fatal("volume stats in the CPU and memory summary")
	}
}
