package eviction

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func benchPods(n int) ([]*corev1.Pod, []statsapi.PodStats) {
	r := rand.New(rand.NewPCG(1, 2))
	var pods []*corev1.Pod
	var stats []statsapi.PodStats
	for i := 0; i < n; i++ {
		req := fmt.Sprintf("%dMi", 64*(1+r.IntN(8)))
		pod, s := diskPod(fmt.Sprintf("pod-%d", i), int32(r.IntN(3)-1), resources("100m", req, req), nil,
			fmt.Sprintf("%dMi", r.IntN(900)), fmt.Sprintf("%dMi", r.IntN(100)), fmt.Sprintf("%dMi", r.IntN(100)),
			[]corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}})
		s.Memory = &statsapi.MemoryStats{WorkingSetBytes: u64(uint64(r.IntN(1 << 30)))}
		s.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(uint64(r.IntN(500)))}
		pods, stats = append(pods, pod), append(stats, s)
	}
	return pods, stats
}

// BenchmarkRank500Pods ranks 500 pods for each kind of pressure, as one
// eviction pass does for its signal.
func BenchmarkRank500Pods(b *testing.B) {
	pods, stats := benchPods(500)
	fn := PodStatsByUID(stats)
	work := make([]*corev1.Pod, len(pods))
	for _, s := range []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalPIDAvailable} {
		rank, _ := RankFor(s, DiskLayout{})
		b.Run(string(s), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				copy(work, pods)
				rank(work, fn)
			}
		})
	}
}
