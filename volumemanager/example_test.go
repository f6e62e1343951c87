package volumemanager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/csi"
	csifake "github.com/podstart/podstart/csi/fake"
	"github.com/podstart/podstart/volumemanager"
)

// A pod with a claim bound to a CSI volume: the manager stages and
// publishes it, gives podsync its host path, and takes it down when the
// pod's containers are gone.
func Example() {
	dir, _ := os.MkdirTemp("", "kubelet")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	ctx := context.Background()

	// A CSI driver (here a fake one) registers with kubelet's CSI plugin,
	// as the plugin watcher reports it (pluginmanager in an agent).
	driver := csifake.New("hostpath.csi.k8s.io", csifake.WithCapabilities(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME))
	sock, _ := driver.Serve(filepath.Join(dir, "csi.sock"))
	defer driver.Stop()
	plugin, _ := csi.New(root, "node-1")
	if err := plugin.RegisterPlugin(ctx, "hostpath.csi.k8s.io", sock, []string{"1.0.0"}, 0); err != nil {
		panic(err)
	}

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
	m, err := volumemanager.New("node-1", root, objs, volumemanager.CSI(plugin))
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
	for _, c := range driver.Calls() {
		if c.Method != csifake.NodeGetInfo && c.Method != csifake.NodeGetCapabilities {
			fmt.Println(c.Method)
		}
	}
	_, err = os.Stat(filepath.Join(root, "pods", "pod-1", "volumes", "kubernetes.io~csi", "pv-1"))
	fmt.Println("volume dir removed:", os.IsNotExist(err))
	// Output:
	// data at /pods/pod-1/volumes/kubernetes.io~csi/pv-1/mount
	// NodeStageVolume
	// NodePublishVolume
	// NodeUnpublishVolume
	// NodeUnstageVolume
	// volume dir removed: true
}
