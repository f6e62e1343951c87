package csi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/csi/fake"
)

// A driver registers (as the plugin watcher would report it), then a
// PersistentVolume is staged and published for a pod, and torn down.
func Example() {
	dir, _ := os.MkdirTemp("", "csi")
	defer os.RemoveAll(dir)
	driver := fake.New("hostpath.csi.k8s.io",
		fake.WithNodeInfo("node-a", 0, nil),
		fake.WithCapabilities(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME))
	sock, _ := driver.Serve(filepath.Join(dir, "csi.sock"))
	defer driver.Stop()

	ctx := context.Background()
	root := filepath.Join(dir, "kubelet")
	p, _ := csi.New(root, "node-a")
	if err := p.RegisterPlugin(ctx, "hostpath.csi.k8s.io", sock, []string{"1.0.0"}, 0); err != nil {
		fmt.Println(err)
		return
	}

	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1234"},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "hostpath.csi.k8s.io", VolumeHandle: "vol-1", FSType: "ext4",
			}},
		},
	}
	vol, err := csi.VolumeFromPV(pv, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	staged, err := p.Stage(ctx, csi.StageRequest{Volume: vol})
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "default", UID: "6f1c"}}
	published, err := p.Publish(ctx, csi.PublishRequest{Volume: vol, Pod: pod})
	if err != nil {
		fmt.Println(err)
		return
	}
	rel := func(p string) string { r, _ := filepath.Rel(root, p); return r }
	fmt.Println("staged at", rel(staged.StagingPath)[:46]+"...")
	fmt.Println("published at", rel(published.TargetPath))

	_ = p.Unpublish(ctx, csi.UnpublishRequest{Driver: vol.Driver, VolumeHandle: vol.VolumeHandle, PodUID: "6f1c", SpecName: vol.SpecName})
	_ = p.Unstage(ctx, csi.UnstageRequest{Driver: vol.Driver, VolumeHandle: vol.VolumeHandle})
	fmt.Println(driver.Methods())
	// Output:
	// staged at plugins/kubernetes.io/csi/hostpath.csi.k8s.io/...
	// published at pods/6f1c/volumes/kubernetes.io~csi/pvc-1234/mount
	// [NodeGetInfo NodeGetCapabilities NodeGetCapabilities NodeGetCapabilities NodeStageVolume NodeGetCapabilities NodeGetCapabilities NodeGetCapabilities NodePublishVolume NodeUnpublishVolume NodeGetCapabilities NodeUnstageVolume]
}
