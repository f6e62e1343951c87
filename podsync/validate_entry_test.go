package podsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/validation"
)

// TestDefaultVolumesRefuseInvalidPods: the default volume provider, a
// public entry point that creates directories, refuses a pod the API
// server would refuse before anything is written, whole or one volume at
// a time; nothing appears beside or under the root.
func TestDefaultVolumesRefuseInvalidPods(t *testing.T) {
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
	}{
		{"uid escapes", func(p *corev1.Pod) { p.UID = "../../x" }},
		{"volume dotdot", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = ".." }},
		{"volume with slash", func(p *corev1.Pod) { p.Spec.Volumes[0].Name = "../../../x" }},
		{"name with slash", func(p *corev1.Pod) { p.Name = "../x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "c", Image: "img"}},
					Volumes:    []corev1.Volume{{Name: "scratch", VolumeSource: emptyDir}},
				},
			}
			tt.mutate(pod)
			d := podsync.DefaultVolumes{RootDir: root, DiskBacked: true}
			if _, err := d.Volumes(context.Background(), pod); !errors.Is(err, validation.ErrInvalidPod) {
				t.Fatalf("Volumes: %v, want ErrInvalidPod", err)
			}
			if _, err := d.Volume(context.Background(), pod, pod.Spec.Volumes[0]); !errors.Is(err, validation.ErrInvalidPod) {
				t.Fatalf("Volume: %v, want ErrInvalidPod", err)
			}
			for _, dir := range []string{parent, root} {
				if entries, _ := os.ReadDir(dir); len(entries) != map[string]int{parent: 1, root: 0}[dir] {
					t.Fatalf("%s holds %v", dir, entries)
				}
			}
		})
	}
}

// TestRemovePodStaysInsideRoot: cleanup takes a UID from the caller or the
// runtime's labels, not from a validated pod; a UID that would name a
// directory outside the root removes nothing there.
func TestRemovePodStaysInsideRoot(t *testing.T) {
	h := newHarness(t, false, nil)
	// h.root is <tmp>/<n>; a victim beside it is what "../../victim" from
	// <root>/pods reaches.
	victim := filepath.Join(filepath.Dir(h.root), "victim")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, uid := range []types.UID{"../../victim", "..", "/", ""} {
		if err := h.syncer.RemovePod(context.Background(), uid); err == nil {
			t.Errorf("RemovePod(%q) = nil, want an error", uid)
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Fatalf("victim's file: %v", err)
	}
	if _, err := os.Stat(h.root); err != nil {
		t.Fatalf("root: %v", err)
	}
}

// TestGarbageCollectStaysInsideRoot: orphan pod and log directories come
// from reading the root, and whatever stands there is removed without
// following it: a pod directory that is a symlink to a directory outside
// goes, the directory it named keeps its files.
func TestGarbageCollectStaysInsideRoot(t *testing.T) {
	h := newHarness(t, false, nil)
	victim := filepath.Join(filepath.Dir(h.root), "victim")
	for _, dir := range []string{filepath.Join(victim, "volumes"), filepath.Join(h.root, "pods"), filepath.Join(h.root, "logs")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := []string{filepath.Join(h.root, "pods", "orphan-uid"), filepath.Join(h.root, "logs", "ns_p_orphan-uid")}
	for _, l := range links {
		if err := os.Symlink(victim, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.syncer.GarbageCollect(context.Background(), podsync.DefaultGCPolicy, func(types.UID) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Fatalf("victim's file: %v", err)
	}
	if _, err := os.Lstat(links[0]); !os.IsNotExist(err) {
		t.Fatalf("the orphan pod directory's link is still there: %v", err)
	}
}
