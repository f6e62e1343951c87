package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
)

// A ConfigMap volume directory replaced by a symlink (to a directory
// outside the pod holding a file) fails the volume, and neither the
// payload nor the tear-down touches what the link points to: the link
// is removed, the directory it named is as it was. On old main the
// payload was written through the link and the other files deleted.
func TestVolumesSymlinkedVolumeDir(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := newTestSource(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conf"}, Data: map[string]string{"a": "1"}})
	pod := volumePod(corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, DefaultMode: ptr.To[int32](0o644)}}})
	pod.Spec.Containers[0].Image = "img"
	dir := filepath.Join(podsync.PodDir(root, pod), "volumes", "kubernetes.io~configmap", "conf")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	v := NewVolumes(src, root, WithMounter(fakemount.New()))
	_, err := v.Volumes(context.Background(), pod)
	if !errors.Is(err, mounts.ErrUnsafeVolumeDir) || !strings.Contains(err.Error(), `volume "conf"`) {
		t.Fatalf("err = %v, want ErrUnsafeVolumeDir naming conf", err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 || entries[0].Name() != "precious" {
		t.Fatalf("outside holds %v", entries)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the link was not torn down: %v", err)
	}
	// The next sync sets the volume up as a directory.
	got, err := v.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if files := readVolume(t, got["conf"].HostPath); fmt.Sprint(files) != "map[a:1]" {
		t.Fatalf("files %v", files)
	}
}

// A file in a volume directory that no payload wrote survives a changed
// payload (kubelet's AtomicWriter removes only its previous payload's
// names); on old main it was deleted.
func TestVolumesKeepForeignFiles(t *testing.T) {
	root := t.TempDir()
	src := newTestSource(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conf"}, Data: map[string]string{"a": "1"}})
	pod := volumePod(corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, DefaultMode: ptr.To[int32](0o644)}}})
	pod.Spec.Containers[0].Image = "img"
	v := NewVolumes(src, root, WithMounter(fakemount.New()))
	got, err := v.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	dir := got["conf"].HostPath
	if err := os.WriteFile(filepath.Join(dir, "foreign"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	src.put(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conf"}, Data: map[string]string{"b": "2"}})
	if _, err := v.Volumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "foreign")); err != nil || string(b) != "mine" {
		t.Fatalf("foreign: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("old payload's a left: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "b")); err != nil || string(b) != "2" {
		t.Errorf("b: %q, %v", b, err)
	}
}
