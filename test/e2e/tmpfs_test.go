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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
)

// hostMounts reads this mount namespace's mountinfo (containerd's too):
// each mount point under dir with its type and super block options.
func hostMounts(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		mps, err := mounts.ParseMountInfo(strings.NewReader(line))
		if err != nil || len(mps) != 1 {
			t.Fatalf("mountinfo line %q: %v", line, err)
		}
		if p := mps[0].Path; p == dir || strings.HasPrefix(p, dir+"/") {
			f := strings.Fields(line)
			out[p] += mps[0].FSType + " " + f[len(f)-1] + ";"
		}
	}
	return out
}

// 8. Memory-backed volumes on a real runtime: a Secret volume (through
// apiobjects, from an in-memory Objects) and an emptyDir with medium
// Memory are each a tmpfs on the host, of kubelet's size, mounted once
// however often the pod syncs; the container reads the secret and writes
// to the memory emptyDir; after KillPod and RemovePod nothing is mounted
// and no directory is left.
func TestMemoryVolumesOnContainerd(t *testing.T) {
	e, rt := setup(t)
	if os.Geteuid() != 0 {
		t.Fatal("the real-runtime tier runs as root (env.sh), which mounting needs")
	}
	root := t.TempDir()
	var objs apiobjects.Objects
	objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "db"}, Data: map[string][]byte{"password": []byte("hunter2")}})
	ims := images.NewManager(rt)
	t.Cleanup(func() { ims.Close() })
	volumes := apiobjects.NewVolumes(&objs, root, apiobjects.WithNodeAllocatable(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}))
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")), podsync.WithVolumes(volumes))
	a := &agent{t: t, rt: rt, images: &countingImages{ImageService: rt}, ims: ims, syncer: syncer, root: root}

	app := sleeper("app", e.openImage)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "db", MountPath: "/secret"}, {Name: "cache", MountPath: "/cache"}}
	pod := newPod(t, rt, "tmpfs", app)
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("8Mi"))}}},
	}
	podDir := podsync.PodDir(root, pod)
	// Whatever happens below, nothing stays mounted under the temporary
	// root (this runs before the root is removed and after the sandboxes).
	t.Cleanup(func() { _ = podsync.UnmountMemoryVolumes(&mounts.HostMounter{}, podDir) })
	a.converge(pod)
	for range 2 { // syncs of a running pod: no second mount
		if err := a.sync(pod).Error(); err != nil {
			t.Fatal(err)
		}
	}

	secretDir := filepath.Join(podDir, "volumes", "kubernetes.io~secret", "db")
	cacheDir := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "cache")
	got := hostMounts(t, podDir)
	once := func(s string) bool { return strings.HasPrefix(s, "tmpfs ") && strings.Count(s, ";") == 1 } // not stacked
	if len(got) != 2 || !once(got[secretDir]) || !once(got[cacheDir]) {
		t.Fatalf("mounts under the pod directory %v, want one tmpfs at each of %s and %s", got, secretDir, cacheDir)
	}
	// kubelet's sizes: node allocatable (no pod limit) for the Secret,
	// sizeLimit for the emptyDir.
	if !strings.Contains(got[secretDir], "size=1048576k") || !strings.Contains(got[cacheDir], "size=8192k") {
		t.Fatalf("tmpfs options %v, want size=1048576k and size=8192k", got)
	}
	t.Logf("host mounts: %v", got)

	id := a.status(pod).FindContainerStatusByName("app").ID
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, _, err := rt.ExecSync(ctx, id, []string{"cat", "/secret/password"}, 10*time.Second)
	if err != nil || string(out) != "hunter2" {
		t.Fatalf("cat /secret/password: %q, %v", out, err)
	}
	if _, _, err := rt.ExecSync(ctx, id, []string{"sh", "-c", "echo in-memory > /cache/f"}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	out, _, err = rt.ExecSync(ctx, id, []string{"cat", "/cache/f"}, 10*time.Second)
	if err != nil || string(out) != "in-memory\n" {
		t.Fatalf("cat /cache/f: %q, %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(cacheDir, "f")); err != nil || string(b) != "in-memory\n" {
		t.Fatalf("the container's write on the host: %q, %v", b, err)
	}
	inside, _, err := rt.ExecSync(ctx, id, []string{"cat", "/proc/mounts"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/secret", "/cache"} {
		if !strings.Contains(string(inside), " "+p+" tmpfs ") {
			t.Errorf("the container sees no tmpfs at %s:\n%s", p, inside)
		}
	}

	if err := syncer.KillPod(ctx, pod, a.status(pod), nil).Error(); err != nil {
		t.Fatal(err)
	}
	if err := syncer.RemovePod(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if left := hostMounts(t, podDir); len(left) != 0 {
		t.Fatalf("left mounted after RemovePod: %v", left)
	}
	if _, err := os.Lstat(podDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pod directory left: %v", err)
	}
}
