package images

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// TestOverTheWire runs the manager against the fake served on a unix
// socket: classes survive the wire (a registry 401, registry unavailable).
func TestOverTheWire(t *testing.T) {
	const reg = "reg.example.com:5000"
	rt := fake.New(fake.WithRegistryAuth(reg, "u", "right"), fake.WithImages("present:1"))
	client, _ := wiretest.Serve(t, rt)
	m := NewManager(client)
	defer m.Close()
	ctx := context.Background()

	pod, c := testPod("present:1", corev1.PullIfNotPresent)
	if ref, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil); err != nil || ref == "" {
		t.Fatalf("present: %q %v", ref, err)
	}
	pod, c = testPod(reg+"/app:1", corev1.PullAlways)
	if _, _, err := m.EnsureImageExists(ctx, pod, c, []corev1.Secret{secretFor("s", reg, "u", "wrong")}, nil); !errors.Is(err, ErrImagePull) || !errors.Is(err, runtime.ErrUnauthorized) {
		t.Fatalf("401 over the wire: %v", err)
	}
	m.ResetBackOff(pod.UID, c.Image)
	if _, _, err := m.EnsureImageExists(ctx, pod, c, []corev1.Secret{secretFor("s", reg, "u", "right")}, nil); err != nil {
		t.Fatalf("right secret: %v", err)
	}
	rt.Fail("PullImage", status.Error(codes.Unknown, "RegistryUnavailable: no route"))
	pod, c = testPod("busybox", corev1.PullAlways)
	_, msg, err := m.EnsureImageExists(ctx, pod, c, nil, nil)
	if !errors.Is(err, ErrRegistryUnavailable) || msg != "image pull failed for busybox because the registry is unavailable: no route" {
		t.Fatalf("registry unavailable over the wire: %v %q", err, msg)
	}
}
