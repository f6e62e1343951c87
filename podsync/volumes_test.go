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
