package validation

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func demoPod(tb testing.TB) *corev1.Pod {
	tb.Helper()
	b, err := os.ReadFile("testdata/demo-pod.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		tb.Fatal(err)
	}
	return &pod
}

// BenchmarkCheck: one check of the demo pod (3 init containers, one a
// sidecar, 2 apps, an emptyDir), which every SyncPod and every
// container's mounts.Make pays.
func BenchmarkCheck(b *testing.B) {
	pod := demoPod(b)
	if err := Check(pod); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(pod); err != nil {
			b.Fatal(err)
		}
	}
}
