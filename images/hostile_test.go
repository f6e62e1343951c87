package images

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// TestNilOptionsFallBack: nil options keep the defaults instead of
// panicking on first use.
func TestNilOptionsFallBack(t *testing.T) {
	m := NewManager(fake.New(fake.WithRegistryImages("docker.io/library/nginx:1")),
		WithClock(nil), WithRecorder(nil), WithRuntimeHandler(nil), WithNodeKeyring(nil))
	defer m.Close()
	pod, c := testPod("nginx:1", corev1.PullIfNotPresent)
	if _, _, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil); err != nil {
		t.Fatal(err)
	}
}
