package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/validation"
)

// tmpfsPod has every kind of volume this package and DefaultVolumes set
// up, and a 64Mi memory limit.
func tmpfsPod() *corev1.Pod {
	pod := volumePod(
		secretVolume("creds", "creds", false),
		corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, DefaultMode: ptr.To[int32](0o644)}}},
		corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o644),
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Mi"))}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	return pod
}

func tmpfsSource() *testSource {
	return newTestSource(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"password": []byte("hunter2")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conf"}, Data: map[string]string{"a": "1"}},
	)
}

// Secret, downward API and projected volumes are a tmpfs as kubelet's
// Memory emptyDir wrapper makes it (sized by node allocatable and the
// pod's memory limit), mounted before the payload is written and once
// however often the pod syncs; ConfigMap volumes and default emptyDirs are
// directories; a Memory emptyDir is a tmpfs of its sizeLimit.
// UnmountMemoryVolumes, which RemovePod runs, tears every one of them
// down.
func TestVolumesTmpfs(t *testing.T) {
	root := t.TempDir()
	mounter := fakemount.New()
	v := NewVolumes(tmpfsSource(), root, WithMounter(mounter), WithTokenRequester(&testRequester{}),
		WithNodeAllocatable(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}))
	pod := tmpfsPod()
	for range 3 {
		got, err := v.Volumes(context.Background(), pod)
		if err != nil {
			t.Fatal(err)
		}
		if files := readVolume(t, got["creds"].HostPath); files["password"] != "hunter2" {
			t.Fatalf("secret files %v", files)
		}
	}
	vdir := filepath.Join(podsync.PodDir(root, pod), "volumes")
	want := []fakemount.Tmpfs{
		{Path: filepath.Join(vdir, "kubernetes.io~secret", "creds"), Size: 64 << 20},
		{Path: filepath.Join(vdir, "kubernetes.io~downward-api", "info"), Size: 64 << 20},
		{Path: filepath.Join(vdir, "kubernetes.io~projected", "kube-api-access"), Size: 64 << 20},
		{Path: filepath.Join(vdir, "kubernetes.io~empty-dir", "cache"), Size: 1 << 20},
	}
	if got := mounter.Tmpfs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("tmpfs mounts\n%v\nwant\n%v", got, want)
	}
	if n, _ := mounter.Counts(); n != 4 {
		t.Fatalf("%d mounts over 3 syncs, want 4", n)
	}
	if err := podsync.UnmountMemoryVolumes(mounter, podsync.PodDir(root, pod)); err != nil {
		t.Fatal(err)
	}
	if got := mounter.Tmpfs(); len(got) != 0 {
		t.Fatalf("left mounted: %v", got)
	}
}

// Without the privilege to mount, a Secret volume fails naming the volume
// and the cause (kubelet's mount fails too), with a FailedMount event; no
// payload reaches the disk. ConfigMap volumes, on disk in kubelet too, are
// still set up.
func TestVolumesTmpfsUnprivileged(t *testing.T) {
	root := t.TempDir()
	rec := &testRecorder{}
	v := NewVolumes(tmpfsSource(), root, WithMounter(fakemount.New().Unprivileged()), WithEventRecorder(rec), WithTokenRequester(&testRequester{}))
	pod := tmpfsPod()
	_, err := v.Volumes(context.Background(), pod)
	if !errors.Is(err, mounts.ErrMountNotPermitted) || !errors.Is(err, fs.ErrPermission) ||
		!strings.HasPrefix(err.Error(), `MountVolume.SetUp failed for volume "creds" : mount tmpfs at `) {
		t.Fatalf("err = %v, want kubelet's SetUp failure naming creds, ErrMountNotPermitted", err)
	}
	var failed []string
	for _, e := range rec.events {
		if e.reason == "FailedMount" {
			_, rest, _ := strings.Cut(e.message, `volume "`)
			name, _, _ := strings.Cut(rest, `"`)
			failed = append(failed, name)
		}
	}
	if want := []string{"creds", "info", "kube-api-access"}; !reflect.DeepEqual(failed, want) {
		t.Fatalf("FailedMount events for %v, want %v", failed, want)
	}
	for _, p := range []string{"kubernetes.io~secret/creds", "kubernetes.io~downward-api/info", "kubernetes.io~projected/kube-api-access"} {
		entries, _ := os.ReadDir(filepath.Join(podsync.PodDir(root, pod), "volumes", p))
		if len(entries) != 0 {
			t.Errorf("%s holds %d entries on disk", p, len(entries))
		}
	}
	// emptyDir Memory, through DefaultVolumes, fails the same way.
	if _, err := v.Volume(context.Background(), pod, pod.Spec.Volumes[4]); !errors.Is(err, mounts.ErrMountNotPermitted) || !strings.Contains(err.Error(), `volume "cache"`) {
		t.Fatalf("emptyDir Memory: %v", err)
	}
	if _, err := v.Volume(context.Background(), pod, pod.Spec.Volumes[1]); err != nil {
		t.Fatalf("configMap: %v", err)
	}
}

// WithDiskBackedVolumes is the explicit way out: every volume a
// directory, nothing mounted, even where mounting is refused.
func TestVolumesDiskBacked(t *testing.T) {
	mounter := fakemount.New().Unprivileged()
	v := NewVolumes(tmpfsSource(), t.TempDir(), WithMounter(mounter), WithDiskBackedVolumes(), WithTokenRequester(&testRequester{}))
	got, err := v.Volumes(context.Background(), tmpfsPod())
	if err != nil {
		t.Fatal(err)
	}
	if files := readVolume(t, got["creds"].HostPath); files["password"] != "hunter2" {
		t.Fatalf("secret files %v", files)
	}
	if n, _ := mounter.Counts(); n != 0 {
		t.Fatalf("%d mounts", n)
	}
}

// A payload that cannot be written after the tmpfs is mounted tears the
// volume down (kubelet's plugins' deferred TearDown): nothing mounted,
// no directory. A payload that cannot even be built mounts nothing. An
// item path leaving the volume ("../escape") is one the API server
// refuses, so Volumes refuses it before mounting anything; volume, which
// Volumes runs once the pod is checked, still tears its tmpfs down when
// the payload write refuses that path.
func TestVolumesTmpfsFailedSetUpTearsDown(t *testing.T) {
	root := t.TempDir()
	mounter := fakemount.New()
	v := NewVolumes(tmpfsSource(), root, WithMounter(mounter))
	noVolumeDir := func(pod *corev1.Pod) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(podsync.PodDir(root, pod), "volumes", "kubernetes.io~secret", "creds")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("volume directory left: %v", err)
		}
	}
	// Each path is valid, but "a" cannot be both a file and the directory
	// of "a/b": the pod is valid, its payload cannot be written.
	bad := volumePod(secretVolume("creds", "creds", false,
		corev1.KeyToPath{Key: "password", Path: "a"}, corev1.KeyToPath{Key: "password", Path: "a/b"}))
	_, err := v.Volumes(context.Background(), bad)
	if !errors.Is(err, mounts.ErrInvalidPayload) || !strings.Contains(err.Error(), `volume "creds"`) || !strings.Contains(err.Error(), `"a" is a file of the payload`) {
		t.Fatalf("err = %v, want ErrInvalidPayload naming creds and the conflict", err)
	}
	if n, un := mounter.Counts(); n != 1 || un != 1 || len(mounter.Tmpfs()) != 0 {
		t.Fatalf("mounts %d, unmounts %d, left %v; want the one mount undone", n, un, mounter.Tmpfs())
	}
	noVolumeDir(bad)

	escape := volumePod(secretVolume("creds", "creds", false, corev1.KeyToPath{Key: "password", Path: "../escape"}))
	_, err = v.Volumes(context.Background(), escape)
	if !errors.Is(err, validation.ErrInvalidPod) || !strings.Contains(err.Error(), "spec.volumes[0].secret.items[0].path") {
		t.Fatalf("err = %v, want ErrInvalidPod naming spec.volumes[0].secret.items[0].path", err)
	}
	if n, un := mounter.Counts(); n != 1 || un != 1 {
		t.Fatalf("an invalid pod was mounted: %d mounts, %d unmounts", n, un)
	}
	_, err = v.volume(context.Background(), escape, escape.Spec.Volumes[0])
	if !errors.Is(err, mounts.ErrInvalidPayload) || !strings.Contains(err.Error(), `volume "creds"`) {
		t.Fatalf("volume: err = %v, want ErrInvalidPayload naming creds", err)
	}
	if n, un := mounter.Counts(); n != 2 || un != 2 || len(mounter.Tmpfs()) != 0 {
		t.Fatalf("mounts %d, unmounts %d, left %v; want the second mount undone", n, un, mounter.Tmpfs())
	}
	noVolumeDir(escape)

	missing := volumePod(secretVolume("creds", "gone", false))
	if _, err := v.Volumes(context.Background(), missing); err == nil {
		t.Fatal("missing secret: no error")
	}
	if n, _ := mounter.Counts(); n != 2 {
		t.Fatalf("a volume whose payload failed was mounted (%d mounts)", n)
	}
}

// The real thing, as root (CI runs as root): a Secret volume is a tmpfs in
// /proc/self/mountinfo, its file readable, and UnmountMemoryVolumes
// leaves nothing mounted. Without root it fails with
// ErrMountNotPermitted instead of landing on disk.
func TestVolumesTmpfsRealMount(t *testing.T) {
	root := t.TempDir()
	pod := volumePod(secretVolume("creds", "creds", false))
	podDir := podsync.PodDir(root, pod)
	v := NewVolumes(tmpfsSource(), root)
	got, err := v.Volumes(context.Background(), pod)
	if os.Geteuid() != 0 {
		if !errors.Is(err, mounts.ErrMountNotPermitted) {
			t.Fatalf("unprivileged: %v, want ErrMountNotPermitted", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	host := &mounts.HostMounter{}
	t.Cleanup(func() { _ = podsync.UnmountMemoryVolumes(host, podDir) })
	if _, err := v.Volumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	table, err := host.List()
	if err != nil {
		t.Fatal(err)
	}
	dir := got["creds"].HostPath
	if under := mounts.Under(table, podDir); fmt.Sprint(under) != fmt.Sprint([]mounts.MountPoint{{Path: dir, FSType: "tmpfs"}}) {
		t.Fatalf("mounts under the pod %v, want one tmpfs at %s", under, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "password")); err != nil || string(b) != "hunter2" {
		t.Fatalf("password %q, %v", b, err)
	}
	if err := podsync.UnmountMemoryVolumes(host, podDir); err != nil {
		t.Fatal(err)
	}
	table, _ = host.List()
	if under := mounts.Under(table, podDir); len(under) != 0 {
		t.Fatalf("left mounted: %v", under)
	}
	if _, err := os.Stat(filepath.Join(dir, "password")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the secret shows on disk after unmount: %v", err)
	}
}
