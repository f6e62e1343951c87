package eviction

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Ported from kubelet's TestOrderedByPriorityMemory: over requests first,
// then by priority, then by usage above requests.
func TestRankMemoryPressure(t *testing.T) {
	t.Parallel()
	type p struct {
		name     string
		priority int32
		request  string
		usage    string
	}
	in := []p{
		{"below-requests-high-priority-low-usage", highPriority, "1Gi", "200Mi"},
		{"below-requests-high-priority-high-usage", highPriority, "1Gi", "800Mi"},
		{"below-requests-low-priority-low-usage", lowPriority, "1Gi", "200Mi"},
		{"below-requests-low-priority-high-usage", lowPriority, "1Gi", "800Mi"},
		{"above-requests-high-priority-low-usage", highPriority, "100Mi", "150Mi"},
		{"above-requests-high-priority-high-usage", highPriority, "100Mi", "600Mi"},
		{"above-requests-low-priority-low-usage", lowPriority, "", "50Mi"},
		{"above-requests-low-priority-high-usage", lowPriority, "", "500Mi"},
	}
	var pods []*corev1.Pod
	var stats []statsapi.PodStats
	for _, x := range in {
		pod, s := memoryPod(x.name, x.priority, resources("", x.request, ""), nil, x.usage)
		pods, stats = append(pods, pod), append(stats, s)
	}
	// a pod without stats goes first
	nostats := newPod("no-stats", highPriority, nil, nil)
	pods = append(pods, nostats)
	RankMemoryPressure(pods, PodStatsByUID(stats))
	want := []string{
		"no-stats",
		"above-requests-low-priority-high-usage", "above-requests-low-priority-low-usage",
		"above-requests-high-priority-high-usage", "above-requests-high-priority-low-usage",
		"below-requests-low-priority-high-usage", "below-requests-low-priority-low-usage",
		"below-requests-high-priority-high-usage", "below-requests-high-priority-low-usage",
	}
	if diff := cmp.Diff(want, names(pods)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// Ported from kubelet's TestOrderedByMemory: usage relative to requests.
func TestRankMemoryByUsageAboveRequest(t *testing.T) {
	t.Parallel()
	var pods []*corev1.Pod
	var stats []statsapi.PodStats
	for _, x := range []struct{ name, request, limit, usage string }{
		{"best-effort-high", "", "", "500Mi"},
		{"best-effort-low", "", "", "300Mi"},
		{"burstable-high", "100Mi", "1Gi", "800Mi"},
		{"burstable-low", "100Mi", "1Gi", "300Mi"},
		{"guaranteed-high", "1Gi", "1Gi", "800Mi"},
		{"guaranteed-low", "1Gi", "1Gi", "200Mi"},
	} {
		pod, s := memoryPod(x.name, defaultPriority, resources("", x.request, ""), resources("", x.limit, ""), x.usage)
		pods, stats = append(pods, pod), append(stats, s)
	}
	RankMemoryPressure(pods, PodStatsByUID(stats))
	want := []string{"burstable-high", "best-effort-high", "best-effort-low", "burstable-low", "guaranteed-high", "guaranteed-low"}
	if diff := cmp.Diff(want, names(pods)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// Ported from kubelet's TestOrderedbyDisk: rootfs + logs + local volumes
// relative to the ephemeral-storage request.
func TestRankDiskPressure(t *testing.T) {
	t.Parallel()
	emptyDir := []corev1.Volume{{Name: "local-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	var pods []*corev1.Pod
	var stats []statsapi.PodStats
	for _, x := range []struct{ name, request, limit, rootfs, logs, volume string }{
		{"best-effort-high", "", "", "50Mi", "100Mi", "150Mi"},          // 300Mi
		{"best-effort-low", "", "", "25Mi", "25Mi", "50Mi"},             // 100Mi
		{"burstable-high", "100Mi", "400Mi", "150Mi", "150Mi", "50Mi"},  // 250Mi
		{"burstable-low", "100Mi", "400Mi", "25Mi", "35Mi", "50Mi"},     // 10Mi
		{"guaranteed-high", "400Mi", "400Mi", "225Mi", "100Mi", "50Mi"}, // -25Mi
		{"guaranteed-low", "400Mi", "400Mi", "25Mi", "45Mi", "50Mi"},    // -280Mi
	} {
		pod, s := diskPod(x.name, defaultPriority, resources("", "", x.request), resources("", "", x.limit), x.rootfs, x.logs, x.volume, emptyDir)
		pods, stats = append(pods, pod), append(stats, s)
	}
	RankDiskPressure(pods, PodStatsByUID(stats), []FsStatsType{FsStatsRoot, FsStatsLogs, FsStatsLocalVolumeSource}, corev1.ResourceEphemeralStorage)
	want := []string{"best-effort-high", "burstable-high", "best-effort-low", "burstable-low", "guaranteed-high", "guaranteed-low"}
	if diff := cmp.Diff(want, names(pods)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	// with a dedicated image filesystem, nodefs counts logs and volumes only
	rank, ok := RankFor(SignalNodeFsAvailable, DiskLayout{DedicatedImageFs: true})
	if !ok {
		t.Fatal("no ranking for nodefs.available")
	}
	a, as := diskPod("big-rootfs", defaultPriority, nil, nil, "900Mi", "1Mi", "1Mi", emptyDir)
	b, bs := diskPod("big-logs", defaultPriority, nil, nil, "1Mi", "100Mi", "1Mi", emptyDir)
	pods = []*corev1.Pod{a, b}
	rank(pods, PodStatsByUID([]statsapi.PodStats{as, bs}))
	if got := names(pods); got[0] != "big-logs" {
		t.Errorf("nodefs ranking with an image filesystem: %v, want big-logs first", got)
	}
	// and imagefs the writable layers
	rank, _ = RankFor(SignalImageFsAvailable, DiskLayout{DedicatedImageFs: true})
	rank(pods, PodStatsByUID([]statsapi.PodStats{as, bs}))
	if got := names(pods); got[0] != "big-rootfs" {
		t.Errorf("imagefs ranking: %v, want big-rootfs first", got)
	}
}

// Ported from kubelet's TestOrderedByPriorityProcess.
func TestRankPIDPressure(t *testing.T) {
	t.Parallel()
	var pods []*corev1.Pod
	var stats []statsapi.PodStats
	for _, x := range []struct {
		name     string
		priority int32
		procs    uint64
	}{
		{"high-priority-low-usage", highPriority, 5},
		{"high-priority-high-usage", highPriority, 20},
		{"low-priority-low-usage", lowPriority, 6},
		{"low-priority-high-usage", lowPriority, 20},
	} {
		pod, s := pidPod(x.name, x.priority, x.procs)
		pods, stats = append(pods, pod), append(stats, s)
	}
	RankPIDPressure(pods, PodStatsByUID(stats))
	want := []string{"low-priority-high-usage", "low-priority-low-usage", "high-priority-high-usage", "high-priority-low-usage"}
	if diff := cmp.Diff(want, names(pods)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestRankForEverySignal(t *testing.T) {
	t.Parallel()
	for s := range signalResource {
		for _, l := range []DiskLayout{{}, {DedicatedImageFs: true}, {DedicatedImageFs: true, SplitContainerFs: true}} {
			if _, ok := RankFor(s, l); !ok {
				t.Errorf("no ranking for %s on %+v", s, l)
			}
		}
	}
	if _, ok := RankFor("memory.used", DiskLayout{}); ok {
		t.Error("a ranking for an unknown signal")
	}
}

func TestRequestOf(t *testing.T) {
	t.Parallel()
	pod := newPod("p", 0, []corev1.Container{container("a", resources("", "100Mi", ""), nil), container("b", resources("", "50Mi", ""), nil)}, nil)
	pod.Spec.Overhead = resources("", "10Mi", "")
	if got := RequestOf(pod, corev1.ResourceMemory); got.String() != "160Mi" {
		t.Errorf("containers + overhead: %s, want 160Mi", got.String())
	}
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: resources("", "1Gi", "")}
	if got := RequestOf(pod, corev1.ResourceMemory); got.String() != "1034Mi" {
		t.Errorf("pod-level + overhead: %s, want 1034Mi", got.String())
	}
	if got := RequestOf(newPod("q", 0, nil, nil), corev1.ResourceMemory); !got.IsZero() {
		t.Errorf("no requests: %s, and no overhead added to zero", got.String())
	}
}
