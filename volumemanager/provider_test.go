package volumemanager_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/volumemanager"
)

var (
	_ podsync.VolumeProvider  = volumemanager.Provider{}
	_ podsync.VolumeRemounter = volumemanager.Provider{}
)

// TestProviderBesideInTree: an emptyDir comes from podsync.DefaultVolumes,
// a claim from the manager; a claim not yet published is an error.
func TestProviderBesideInTree(t *testing.T) {
	root := t.TempDir()
	plugin, err := csi.New(root, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := volumemanager.New("node-1", root, &volumemanager.Objects{}, volumemanager.CSI(plugin), volumemanager.WithMounter(fake.New()))
	if err != nil {
		t.Fatal(err)
	}
	p := volumemanager.Provider{Manager: m, InTree: podsync.DefaultVolumes{RootDir: root}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "pod-1"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "db", Image: "postgres", VolumeMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"},
			}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	_, err = p.Volumes(context.Background(), pod)
	if !errors.Is(err, volumemanager.ErrNotPublished) {
		t.Fatalf("err = %v, want ErrNotPublished", err)
	}
	pod.Spec.Containers[0].VolumeMounts = pod.Spec.Containers[0].VolumeMounts[1:]
	vols, err := p.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vols["tmp"]; !ok || len(vols) != 1 {
		t.Errorf("volumes = %v, want tmp only (data is unused)", vols)
	}
}

// An image volume is left to podsync, which pulls and adds it: the
// provider neither serves nor refuses it (the conformance tier's
// ImageVolume spec failed on the agent once the provider asked the in-tree
// provider for it).
func TestProviderLeavesImageVolumes(t *testing.T) {
	root := t.TempDir()
	plugin, err := csi.New(root, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	m, err := volumemanager.New("node-1", root, &volumemanager.Objects{}, volumemanager.CSI(plugin), volumemanager.WithMounter(fake.New()))
	if err != nil {
		t.Fatal(err)
	}
	p := volumemanager.Provider{Manager: m, InTree: podsync.DefaultVolumes{RootDir: root}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "img", UID: "pod-2"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "kitten", MountPath: "/volume"}}}},
			Volumes:    []corev1.Volume{{Name: "kitten", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "kitten:1.8", PullPolicy: corev1.PullAlways}}}},
		},
	}
	vols, err := p.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatalf("an image volume: %v", err)
	}
	if len(vols) != 0 {
		t.Fatalf("volumes = %v, want none (podsync adds image volumes)", vols)
	}
}
