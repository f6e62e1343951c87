package podsync_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: &gid},
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

// An emptyDir on memory or huge pages is refused by name, not made a disk
// directory.
func TestEmptyDirMediumRefused(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-mem"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}}}
	_, err := podsync.DefaultVolumes{RootDir: t.TempDir()}.Volumes(context.Background(), pod)
	if !errors.Is(err, podsync.ErrVolumeNotSupported) || !strings.Contains(err.Error(), "emptyDir.medium") {
		t.Fatalf("err = %v, want ErrVolumeNotSupported naming emptyDir.medium", err)
	}
}

// DefaultVolumes.Volume resolves one volume, so a provider of other types
// can hand it hostPath and emptyDir volumes of a pod it could not take
// whole.
func TestDefaultVolumesOneByOne(t *testing.T) {
	root := t.TempDir()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
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
