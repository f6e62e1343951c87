package images_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

type countingRecorder struct{ n int }

func (c *countingRecorder) Eventf(apiruntime.Object, string, string, string, ...interface{}) { c.n++ }

// After Close a call fails with ErrClosed at once: no runtime call, no
// event, no back-off.
func TestClosedManagerDoesNothing(t *testing.T) {
	f := fake.New()
	rec := &countingRecorder{}
	m := images.NewManager(f, images.WithRecorder(rec))
	m.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &corev1.Container{Name: "c", Image: "busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent}
	_, _, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
	if !errors.Is(err, images.ErrClosed) {
		t.Fatalf("err %v, want ErrClosed", err)
	}
	if n := len(f.Calls()); n != 0 || rec.n != 0 {
		t.Fatalf("%d runtime calls and %d events after Close", n, rec.n)
	}
	if _, ok := m.BackOff(pod.UID, c.Image); ok {
		t.Fatal("a back-off was started after Close")
	}
}

// In back-off, the error still matches what made the pull fail.
func TestBackOffKeepsCause(t *testing.T) {
	f := fake.New(fake.WithRegistryImages("private.example/app:1"), fake.WithRegistryAuth("private.example", "u", "p"))
	m := images.NewManager(f)
	defer m.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &corev1.Container{Name: "c", Image: "private.example/app:1", ImagePullPolicy: corev1.PullAlways}
	_, _, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
	if !errors.Is(err, images.ErrImagePull) || !errors.Is(err, runtime.ErrUnauthorized) {
		t.Fatalf("first pull: %v", err)
	}
	_, _, err = m.EnsureImageExists(context.Background(), pod, c, nil, nil)
	if !errors.Is(err, images.ErrImagePullBackOff) || !errors.Is(err, runtime.ErrUnauthorized) {
		t.Fatalf("in back-off: %v does not match ErrImagePullBackOff and runtime.ErrUnauthorized", err)
	}
}

// An invalid image name gets kubelet's message.
func TestInvalidImageNameMessage(t *testing.T) {
	m := images.NewManager(fake.New())
	defer m.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &corev1.Container{Name: "c", Image: "Not/Valid", ImagePullPolicy: corev1.PullAlways}
	_, msg, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
	if !errors.Is(err, images.ErrInvalidImageName) || !strings.HasPrefix(msg, `Failed to apply default image tag "Not/Valid": couldn't parse image name "Not/Valid": invalid reference format`) {
		t.Fatalf("%v %q", err, msg)
	}
}
