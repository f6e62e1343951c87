package csi_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/csi"
)

func int32p(v int32) *int32 { return &v }

func TestCSINodeInstallUninstall(t *testing.T) {
	c := csi.NewCSINode("node-a", "node-uid")
	if ok, _ := csi.NodeOwnsCSINode(c, "node-a", "node-uid"); !ok {
		t.Error("new CSINode not owned by its node")
	}
	if ok, owner := csi.NodeOwnsCSINode(c, "node-a", "other-uid"); ok || owner != "node-uid" {
		t.Errorf("owned by a node of another UID: %v %s", ok, owner)
	}
	if got := c.Annotations[corev1.MigratedPluginsAnnotationKey]; got != "kubernetes.io/aws-ebs,kubernetes.io/azure-disk,kubernetes.io/azure-file,kubernetes.io/cinder,kubernetes.io/gce-pd,kubernetes.io/portworx-volume,kubernetes.io/vsphere-volume" {
		t.Errorf("migrated plugins = %s", got)
	}
	c.Spec.Drivers = append(c.Spec.Drivers, storagev1.CSINodeDriver{Name: "other.io", NodeID: "x"})
	info := csi.NodeInfo{Driver: "d.io", NodeID: "n1", MaxVolumes: 1 << 40, Topology: map[string]string{"z": "1", "a": "2"}}
	out, changed, err := csi.InstallDriverOnCSINode(c, info)
	if err != nil || !changed {
		t.Fatalf("install: %v %v", changed, err)
	}
	want := []storagev1.CSINodeDriver{
		{Name: "other.io", NodeID: "x"},
		{Name: "d.io", NodeID: "n1", TopologyKeys: []string{"a", "z"}, Allocatable: &storagev1.VolumeNodeResources{Count: int32p(1<<31 - 1)}},
	}
	if diff := cmp.Diff(want, out.Spec.Drivers); diff != "" {
		t.Errorf("drivers (-want +got):\n%s", diff)
	}
	if len(c.Spec.Drivers) != 1 {
		t.Error("the input CSINode was modified")
	}
	// As kubelet, a limit above MaxInt32 never compares equal to the
	// capped count: such a driver's entry is written at every registration.
	info.MaxVolumes = 25
	out, changed, _ = csi.InstallDriverOnCSINode(out, info)
	if !changed || *out.Spec.Drivers[1].Allocatable.Count != 25 {
		t.Errorf("limit not updated: %+v", out.Spec.Drivers)
	}
	if again, changed, _ := csi.InstallDriverOnCSINode(out, info); changed || again != out {
		t.Error("installing the same info again changed the CSINode")
	}
	info.MaxVolumes = 0
	out2, changed, _ := csi.InstallDriverOnCSINode(out, info)
	if !changed || out2.Spec.Drivers[1].Allocatable != nil {
		t.Errorf("limit dropped: %+v", out2.Spec.Drivers)
	}
	gone, changed := csi.UninstallDriverFromCSINode(out2, "d.io")
	if !changed || len(gone.Spec.Drivers) != 1 || gone.Spec.Drivers[0].Name != "other.io" {
		t.Errorf("uninstall: %+v", gone.Spec.Drivers)
	}
	if _, changed := csi.UninstallDriverFromCSINode(gone, "d.io"); changed {
		t.Error("uninstalling twice changed the CSINode")
	}
	if _, _, err := csi.InstallDriverOnCSINode(c, csi.NodeInfo{Driver: "d.io"}); !errors.Is(err, csi.ErrInvalidRequest) {
		t.Errorf("empty node ID: %v", err)
	}
}

func TestNodeAnnotationAndTopologyLabels(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"zone": "z1"}}}
	info := csi.NodeInfo{Driver: "d.io", NodeID: "n1", Topology: map[string]string{"zone": "z1", "rack": "r7"}}
	out, changed, err := csi.InstallDriverOnNode(node, info)
	if err != nil || !changed {
		t.Fatalf("%v %v", changed, err)
	}
	if got := out.Annotations[csi.NodeIDAnnotation]; got != `{"d.io":"n1"}` {
		t.Errorf("annotation = %s", got)
	}
	if out.Labels["rack"] != "r7" || len(node.Labels) != 1 {
		t.Errorf("labels = %v (input %v)", out.Labels, node.Labels)
	}
	out, _, _ = csi.InstallDriverOnNode(out, csi.NodeInfo{Driver: "a.io", NodeID: "n2"})
	if got := out.Annotations[csi.NodeIDAnnotation]; got != `{"a.io":"n2","d.io":"n1"}` {
		t.Errorf("annotation = %s", got)
	}
	_, _, err = csi.InstallDriverOnNode(out, csi.NodeInfo{Driver: "b.io", NodeID: "n3", Topology: map[string]string{"zone": "z2"}})
	if err == nil || err.Error() != `detected topology value collision: driver reported "zone":"z2" but existing label is "zone":"z1"` {
		t.Errorf("collision: %v", err)
	}
	out, changed, err = csi.UninstallDriverFromNode(out, "d.io")
	if err != nil || !changed || out.Annotations[csi.NodeIDAnnotation] != `{"a.io":"n2"}` || out.Labels["rack"] != "r7" {
		t.Errorf("uninstall: %v %v %v", out.Annotations, changed, err)
	}
	out, _, _ = csi.UninstallDriverFromNode(out, "a.io")
	if _, ok := out.Annotations[csi.NodeIDAnnotation]; ok {
		t.Error("empty annotation kept")
	}
	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{csi.NodeIDAnnotation: "{"}}}
	if _, _, err := csi.InstallDriverOnNode(bad, info); err == nil {
		t.Error("malformed annotation accepted")
	}
}
