package volumemanager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/volumemanager"
)

// printingDriver is a NodeVolumes that prints the calls a CSI driver
// would get (a real agent passes its CSI client).
type printingDriver struct{ root string }

func (d printingDriver) rel(p string) string { return strings.TrimPrefix(p, d.root) }

func (printingDriver) Capabilities(context.Context, string) (volumemanager.NodeCapabilities, error) {
	return volumemanager.NodeCapabilities{StageUnstage: true}, nil
}
func (d printingDriver) Stage(_ context.Context, r volumemanager.StageRequest) error {
	fmt.Println("NodeStageVolume", r.VolumeHandle, d.rel(r.StagingPath))
	return nil
}
func (d printingDriver) Unstage(_ context.Context, r volumemanager.UnstageRequest) error {
	fmt.Println("NodeUnstageVolume", r.VolumeHandle)
	return nil
}
func (d printingDriver) Publish(_ context.Context, r volumemanager.PublishRequest) error {
	fmt.Println("NodePublishVolume", r.VolumeHandle, d.rel(r.TargetPath))
	return os.MkdirAll(r.TargetPath, 0o750)
}
func (d printingDriver) Unpublish(_ context.Context, r volumemanager.UnpublishRequest) error {
	fmt.Println("NodeUnpublishVolume", r.VolumeHandle)
	return os.RemoveAll(r.TargetPath)
}

// A pod with a claim bound to a CSI volume: the manager stages and
// publishes it, gives podsync its host path, and takes it down when the
// pod's containers are gone.
func Example() {
	root, _ := os.MkdirTemp("", "kubelet")
	defer os.RemoveAll(root)
	ctx := context.Background()

	objs := &volumemanager.Objects{}
	attach, policy := false, storagev1.FileFSGroupPolicy
	objs.Set(
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", UID: "claim-1"},
			Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		},
		&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
			Spec: corev1.PersistentVolumeSpec{
				ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data", UID: "claim-1"},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "hostpath.csi.k8s.io", VolumeHandle: "vol-1",
				}},
			},
		},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io"}, Spec: storagev1.CSIDriverSpec{AttachRequired: &attach, FSGroupPolicy: &policy}},
	)
	m, err := volumemanager.New("node-1", root, objs, printingDriver{root}, volumemanager.WithMounter(fake.New()))
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { m.Run(runCtx); close(done) }()
	m.SourcesReady()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "pod-1"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "db", Image: "postgres", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql"}}}},
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	if err := m.WaitForAttachAndMount(ctx, pod); err != nil {
		panic(err)
	}
	vols, _ := m.Volumes(ctx, pod)
	fmt.Println("data at", strings.TrimPrefix(vols["data"].HostPath, root))

	// The pod's containers are gone.
	if err := m.WaitForUnmount(ctx, pod); err != nil {
		panic(err)
	}
	stop()
	<-done
	_, err = os.Stat(filepath.Join(root, "pods", "pod-1", "volumes", "kubernetes.io~csi", "pv-1"))
	fmt.Println("volume dir removed:", os.IsNotExist(err))
	// Output:
	// NodeStageVolume vol-1 /plugins/kubernetes.io/csi/hostpath.csi.k8s.io/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount
	// NodePublishVolume vol-1 /pods/pod-1/volumes/kubernetes.io~csi/pv-1/mount
	// data at /pods/pod-1/volumes/kubernetes.io~csi/pv-1/mount
	// NodeUnpublishVolume vol-1
	// NodeUnstageVolume vol-1
	// volume dir removed: true
}
