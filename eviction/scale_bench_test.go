package eviction

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkRankScale ranks 1,000 and 10,000 pods for memory and nodefs
// pressure, as one eviction pass does for its signal: the ranking sorts
// keys computed once per pod, so ns/pod grows only as log N.
func BenchmarkRankScale(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		pods, stats := benchPods(n)
		fn := PodStatsByUID(stats)
		work := make([]*corev1.Pod, len(pods))
		for _, s := range []Signal{SignalMemoryAvailable, SignalNodeFsAvailable} {
			rank, _ := RankFor(s, DiskLayout{})
			b.Run(fmt.Sprintf("%s/pods=%d", s, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copy(work, pods)
					rank(work, fn)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pod")
			})
		}
	}
}
