package podsync_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
)

// fsGroup is not dropped on emptyDir: the volume gets the group, group
// read-write and setgid, as kubelet's SetVolumeOwnership does.
func TestEmptyDirFSGroup(t *testing.T) {
	root := t.TempDir()
	gid := int64(4321)
	if os.Geteuid() != 0 {
		gid = int64(os.Getegid()) // without root, only a group of our own
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-fs"},
		Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: &gid}, Containers: []corev1.Container{{Name: "c", Image: "img"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	vols, err := podsync.DefaultVolumes{RootDir: root}.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	dir := vols["data"].HostPath
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (podsync.DefaultVolumes{RootDir: root}).Volumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "f")} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if int64(st.Gid) != gid || info.Mode().Perm()&0o060 != 0o060 || info.IsDir() && info.Mode()&fs.ModeSetgid == 0 {
			t.Fatalf("%s: gid %d mode %v, want gid %d, group rw (and setgid on directories)", p, st.Gid, info.Mode(), gid)
		}
	}
}

// An emptyDir on huge pages (or an unknown medium) is refused by name,
// not made a disk directory.
func TestEmptyDirMediumRefused(t *testing.T) {
	for _, medium := range []corev1.StorageMedium{corev1.StorageMediumHugePages, "HugePages-2Mi", "Floppy"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-mem"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}},
				Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}}}}
		mounter := fakemount.New()
		_, err := podsync.DefaultVolumes{RootDir: t.TempDir(), Mounter: mounter}.Volumes(context.Background(), pod)
		if !errors.Is(err, podsync.ErrVolumeNotSupported) || !strings.Contains(err.Error(), `emptyDir.medium "`+string(medium)+`"`) || !strings.Contains(err.Error(), `volume "cache"`) {
			t.Fatalf("%s: err = %v, want ErrVolumeNotSupported naming the volume and emptyDir.medium", medium, err)
		}
		if got := mounter.Tmpfs(); len(got) != 0 {
			t.Fatalf("%s: mounted %v", medium, got)
		}
	}
}

func memoryPod(uid string, sizeLimit string, containers ...corev1.Container) *corev1.Pod {
	src := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
	if sizeLimit != "" {
		q := resource.MustParse(sizeLimit)
		src.SizeLimit = &q
	}
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "c", Image: "img"}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID(uid)},
		Spec: corev1.PodSpec{Containers: containers, Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: src}}}}}
}

// emptyDir medium Memory is a tmpfs of kubelet's size, mounted once
// however often the pod syncs; without the privilege to mount it fails
// naming the volume, never falling back to disk unless asked.
func TestEmptyDirMemory(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}
	limited := corev1.Container{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}

	t.Run("mounted once, sized", func(t *testing.T) {
		root, mounter := t.TempDir(), fakemount.New()
		pod := memoryPod("uid-m1", "8Mi", limited)
		d := podsync.DefaultVolumes{RootDir: root, Mounter: mounter, NodeAllocatable: alloc}
		for range 3 {
			vols, err := d.Volumes(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(root, "pods", "uid-m1", "volumes", "kubernetes.io~empty-dir", "cache")
			if v := vols["cache"]; v.HostPath != want || v.ReadOnly || !v.SELinuxRelabel {
				t.Fatalf("volume %+v, want %s read-write, relabelled", v, want)
			}
		}
		if got, want := mounter.Tmpfs(), []fakemount.Tmpfs{{Path: filepath.Join(root, "pods", "uid-m1", "volumes", "kubernetes.io~empty-dir", "cache"), Size: 8 << 20}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("tmpfs %v, want %v", got, want)
		}
	})
	t.Run("unprivileged", func(t *testing.T) {
		mounter := fakemount.New().Unprivileged()
		_, err := podsync.DefaultVolumes{RootDir: t.TempDir(), Mounter: mounter}.Volumes(context.Background(), memoryPod("uid-m2", ""))
		if !errors.Is(err, mounts.ErrMountNotPermitted) || !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), `volume "cache"`) {
			t.Fatalf("err = %v, want ErrMountNotPermitted naming the volume", err)
		}
	})
	t.Run("disk-backed on request", func(t *testing.T) {
		mounter := fakemount.New().Unprivileged()
		vols, err := podsync.DefaultVolumes{RootDir: t.TempDir(), Mounter: mounter, DiskBacked: true}.Volumes(context.Background(), memoryPod("uid-m3", ""))
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(vols["cache"].HostPath); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
			t.Fatalf("directory %v, %v; want 0777", fi, err)
		}
	})
}

// kubelet's TestCalculateEmptyDirMemorySize, and the pod limits its
// ResourceConfigForPod gives (BestEffort, undeclared limits, init
// containers, sidecars, pod-level resources, overhead).
func TestMemoryVolumeSize(t *testing.T) {
	mem := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(s)}
	}
	c := func(name string, req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := func(ctr corev1.Container) corev1.Container { ctr.RestartPolicy = &always; return ctr }
	gi := int64(1) << 30
	tests := []struct {
		name      string
		pod       *corev1.Pod
		alloc     corev1.ResourceList
		sizeLimit string
		want      int64
	}{
		{"EmptyDirLocalLimit", memoryPod("u", "", c("a", nil, mem("10Gi"))), mem("16Gi"), "1Gi", gi},
		{"PodLocalLimit", memoryPod("u", "", c("a", nil, mem("10Gi"))), mem("16Gi"), "0", 10 * gi},
		{"NodeAllocatableLimit", memoryPod("u", "", c("a", mem("10Gi"), nil)), mem("16Gi"), "0", 16 * gi},
		{"sizeLimit above the pod's limit", memoryPod("u", "", c("a", nil, mem("1Gi"))), mem("16Gi"), "2Gi", gi},
		{"pod limit above allocatable", memoryPod("u", "", c("a", nil, mem("32Gi"))), mem("16Gi"), "", 16 * gi},
		{"best effort", memoryPod("u", ""), mem("16Gi"), "", 16 * gi},
		{"a container without a limit", memoryPod("u", "", c("a", nil, mem("1Gi")), c("b", mem("1Mi"), nil)), mem("16Gi"), "", 16 * gi},
		{"containers summed", memoryPod("u", "", c("a", nil, mem("1Gi")), c("b", nil, mem("2Gi"))), mem("16Gi"), "", 3 * gi},
		{"an init container's peak", func() *corev1.Pod {
			p := memoryPod("u", "", c("a", nil, mem("1Gi")))
			p.Spec.InitContainers = []corev1.Container{c("i", nil, mem("4Gi"))}
			return p
		}(), mem("16Gi"), "", 4 * gi},
		{"an init container without a limit", func() *corev1.Pod {
			p := memoryPod("u", "", c("a", nil, mem("1Gi")))
			p.Spec.InitContainers = []corev1.Container{c("i", mem("1Mi"), nil)}
			return p
		}(), mem("16Gi"), "", 16 * gi},
		// v1.37.2's ResourceConfigForPod: each init container must declare
		// a memory limit of its own (v1.36 counted the sidecars before it).
		{"an init container without a limit after a sidecar", func() *corev1.Pod {
			p := memoryPod("u", "", c("a", nil, mem("1Gi")))
			p.Spec.InitContainers = []corev1.Container{sidecar(c("s", nil, mem("1Gi"))), c("i", mem("1Mi"), nil)}
			return p
		}(), mem("16Gi"), "", 16 * gi},
		{"a sidecar and an init container with limits", func() *corev1.Pod {
			p := memoryPod("u", "", c("a", nil, mem("1Gi")))
			p.Spec.InitContainers = []corev1.Container{sidecar(c("s", nil, mem("1Gi"))), c("i", mem("1Mi"), mem("512Mi"))}
			return p
		}(), mem("16Gi"), "", 2 * gi},
		{"pod-level limit", func() *corev1.Pod {
			p := memoryPod("u", "", c("a", mem("1Mi"), nil))
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: mem("5Gi")}
			return p
		}(), mem("16Gi"), "", 5 * gi},
		{"overhead", func() *corev1.Pod {
			p := memoryPod("u", "", c("a", nil, mem("1Gi")))
			p.Spec.Overhead = mem("1Gi")
			return p
		}(), mem("16Gi"), "", 2 * gi},
		{"zero allocatable: kubelet's rule, no size", memoryPod("u", "", c("a", nil, mem("1Gi"))), mem("0"), "1Mi", 0},
		{"unknown allocatable: the pod's limit", memoryPod("u", "", c("a", nil, mem("1Gi"))), nil, "", gi},
		{"unknown allocatable, no limits: the kernel's default", memoryPod("u", ""), nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var limit *resource.Quantity
			if tt.sizeLimit != "" {
				q := resource.MustParse(tt.sizeLimit)
				limit = &q
			}
			if got := podsync.MemoryVolumeSize(tt.pod, tt.alloc, limit); got != tt.want {
				t.Fatalf("size %d, want %d", got, tt.want)
			}
		})
	}
}

// The real thing, as root (CI runs as root): a Memory emptyDir is a tmpfs
// in this mount namespace with kubelet's size, a second sync stacks
// nothing, and UnmountMemoryVolumes leaves nothing mounted. Without root
// the same call must fail with ErrMountNotPermitted, not land on disk.
func TestEmptyDirMemoryRealMount(t *testing.T) {
	root := t.TempDir()
	pod := memoryPod("uid-real", "3Mi")
	d := podsync.DefaultVolumes{RootDir: root}
	vols, err := d.Volumes(context.Background(), pod)
	if os.Geteuid() != 0 {
		if !errors.Is(err, mounts.ErrMountNotPermitted) {
			t.Fatalf("unprivileged: %v, want ErrMountNotPermitted", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(root, "pods", "uid-real")
	t.Cleanup(func() { _ = podsync.UnmountMemoryVolumes(&mounts.HostMounter{}, podDir) })
	if _, err := d.Volumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	dir := vols["cache"].HostPath
	table, err := (&mounts.HostMounter{}).List()
	if err != nil {
		t.Fatal(err)
	}
	if got := mounts.Under(table, podDir); len(got) != 1 || got[0] != (mounts.MountPoint{Path: dir, FSType: "tmpfs"}) {
		t.Fatalf("mounts under the pod: %v, want one tmpfs at %s", got, dir)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Blocks*uint64(st.Bsize) != 3<<20 {
		t.Fatalf("tmpfs size %d bytes (%v), want %d", st.Blocks*uint64(st.Bsize), err, 3<<20)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("in memory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := podsync.UnmountMemoryVolumes(&mounts.HostMounter{}, podDir); err != nil {
		t.Fatal(err)
	}
	if _, isMnt, err := (&mounts.HostMounter{}).MountPoint(dir); err != nil || isMnt {
		t.Fatalf("still a mount point (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the tmpfs's file shows on disk: %v", err)
	}
}

// DefaultVolumes.Volume resolves one volume, so a provider of other types
// can hand it hostPath and emptyDir volumes of a pod it could not take
// whole.
func TestDefaultVolumesOneByOne(t *testing.T) {
	root := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}, Volumes: []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
	}}}
	d := podsync.DefaultVolumes{RootDir: root}
	if _, err := d.Volumes(context.Background(), pod); !errors.Is(err, podsync.ErrVolumeNotSupported) {
		t.Fatalf("whole pod: %v", err)
	}
	m, err := d.Volume(context.Background(), pod, pod.Spec.Volumes[0])
	if err != nil || m.HostPath != filepath.Join(root, "pods", "uid-1", "volumes", "kubernetes.io~empty-dir", "scratch") {
		t.Fatalf("emptyDir: %+v, %v", m, err)
	}
	if _, err := d.Volume(context.Background(), pod, pod.Spec.Volumes[1]); !errors.Is(err, podsync.ErrVolumeNotSupported) || !strings.Contains(err.Error(), `volume "creds"`) {
		t.Fatalf("secret: %v", err)
	}
}
