package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/runtime"
)

// An image volume (ImageVolume, GA and on in v1.37) on containerd 2.x: the
// image is pulled by podsync (its own pull policy), mounted read-only by
// the runtime (CRI Mount.image), its files seen by the container; after
// KillPod and RemovePod nothing of it is mounted on the host (containerd
// mounts it under its state directory's image-volumes/<sandbox>) and the
// pod directory is gone. Containerd 1.6 has no image volumes: skipped there.
func TestImageVolumeOnContainerd(t *testing.T) {
	e, rt := setup(t)
	ctx := context.Background()
	v, err := rt.Version(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimPrefix(v.GetRuntimeVersion(), "v"), "2.") {
		t.Skipf("runtime %s %s: image volumes need containerd 2.1 or later", v.GetRuntimeName(), v.GetRuntimeVersion())
	}
	root := t.TempDir()
	a := newAgent(t, rt, root)
	app := sleeper("app", e.openImage)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "tools", MountPath: "/tools", ReadOnly: true}}
	pod := newPod(t, rt, "imagevolume", app)
	pod.Spec.Volumes = []corev1.Volume{{Name: "tools", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: e.openImage, PullPolicy: corev1.PullIfNotPresent}}}}
	a.converge(pod)
	st := a.status(pod)
	id := st.FindContainerStatusByName("app").ID
	sandbox := st.SandboxStatuses[0].Id

	out, _, err := rt.ExecSync(ctx, id, []string{"sh", "-c", "test -x /tools/bin/busybox && echo present"}, 10*time.Second)
	if err != nil || string(out) != "present\n" {
		t.Fatalf("the image's /bin/busybox at /tools: %q, %v", out, err)
	}
	_, _, err = rt.ExecSync(ctx, id, []string{"sh", "-c", "echo x > /tools/new"}, 10*time.Second)
	var exit *runtime.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(exit.Stderr), "Read-only file system") {
		t.Fatalf("a write into the image volume: %v", err)
	}
	if !strings.Contains(mountinfo(t), "/image-volumes/"+sandbox+"/") {
		t.Fatalf("no image volume of sandbox %s mounted on the host", sandbox)
	}

	if err := a.syncer.KillPod(ctx, pod, a.status(pod), nil).Error(); err != nil {
		t.Fatal(err)
	}
	if err := a.syncer.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if mi := mountinfo(t); strings.Contains(mi, sandbox) {
		t.Errorf("mounts of sandbox %s left after RemovePod:\n%s", sandbox, mi)
	}
	if _, err := os.Lstat(filepath.Join(root, "pods", string(pod.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory left: %v", err)
	}
}

func mountinfo(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
