package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/podstart/podstart/csi"
)

// TestNodeInfoWriter: the CSINode made at start owned by the Node; a
// driver's registration puts its node ID in the Node's annotation, its
// topology in the Node's labels and its entry in the CSINode; a CSINode
// another Node object owns is made again; deregistration takes the entry
// and the annotation away and leaves the labels, as kubelet's.
func TestNodeInfoWriter(t *testing.T) {
	ctx := context.Background()
	client := newFakeClientset()
	node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-uid"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := nodeInfoWriter{client: client, nodeName: nodeName}
	if err := w.initCSINode(ctx, node); err != nil {
		t.Fatal(err)
	}
	cn, err := client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owns, _ := csi.NodeOwnsCSINode(cn, nodeName, node.UID); !owns || len(cn.Spec.Drivers) != 0 {
		t.Fatalf("CSINode at start %+v", cn)
	}

	// A CSINode of an earlier Node object is made again.
	cn.OwnerReferences[0].UID = "old-node-uid"
	if _, err := client.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	info := csi.NodeInfo{Driver: "fake.csi.io", NodeID: "id-1", MaxVolumes: 8, Topology: map[string]string{"topology.fake.csi.io/zone": "z1"}}
	if err := w.InstallDriver(ctx, info); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Annotations[csi.NodeIDAnnotation]; got != `{"fake.csi.io":"id-1"}` {
		t.Errorf("nodeid annotation %q", got)
	}
	if got := n.Labels["topology.fake.csi.io/zone"]; got != "z1" {
		t.Errorf("topology label %q", got)
	}
	cn, err = client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owns, _ := csi.NodeOwnsCSINode(cn, nodeName, node.UID); !owns {
		t.Errorf("CSINode owners %+v, want the Node %s", cn.OwnerReferences, node.UID)
	}
	want := storagev1.CSINodeDriver{Name: "fake.csi.io", NodeID: "id-1", TopologyKeys: []string{"topology.fake.csi.io/zone"}}
	if len(cn.Spec.Drivers) != 1 || cn.Spec.Drivers[0].NodeID != want.NodeID || cn.Spec.Drivers[0].Allocatable == nil ||
		*cn.Spec.Drivers[0].Allocatable.Count != 8 || len(cn.Spec.Drivers[0].TopologyKeys) != 1 {
		t.Errorf("CSINode drivers %+v, want %+v with 8 volumes", cn.Spec.Drivers, want)
	}

	if err := w.UninstallDriver(ctx, "fake.csi.io"); err != nil {
		t.Fatal(err)
	}
	n, err = client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Annotations[csi.NodeIDAnnotation]; ok || n.Labels["topology.fake.csi.io/zone"] != "z1" {
		t.Errorf("after deregistration: annotations %v labels %v", n.Annotations, n.Labels)
	}
	cn, err = client.StorageV1().CSINodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil || len(cn.Spec.Drivers) != 0 {
		t.Errorf("CSINode after deregistration %+v, %v", cn, err)
	}
	if _, err := client.StorageV1().CSINodes().Get(ctx, "other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("unexpected CSINode: %v", err)
	}
}

// TestStorageObjectsFromInformers: CSIDrivers and the Node come from
// informers once synced (no live read however often the volume manager
// asks: kubelet's listers); a VolumeAttachment is read live (a node may
// only get one, as kubelet's CSI attacher does).
func TestStorageObjectsFromInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := newFakeClientset()
	if _, err := client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "a.csi.io"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := newStorageObjects(client, nodeName)
	done := make(chan struct{})
	go func() { o.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), o.synced) {
		t.Fatal("not synced")
	}
	client.ClearActions()
	for range 10 {
		if d, err := o.GetCSIDriver(ctx, "a.csi.io"); err != nil || d.Name != "a.csi.io" {
			t.Fatalf("GetCSIDriver = %v, %v", d, err)
		}
		if n, err := o.GetNode(ctx, nodeName); err != nil || n.Name != nodeName {
			t.Fatalf("GetNode = %v, %v", n, err)
		}
	}
	if _, err := o.GetCSIDriver(ctx, "missing.csi.io"); !apierrors.IsNotFound(err) {
		t.Errorf("a missing driver: %v, want NotFound", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("a live read from the informers' getters: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if _, err := o.GetVolumeAttachment(ctx, "csi-x"); !apierrors.IsNotFound(err) {
		t.Errorf("GetVolumeAttachment: %v", err)
	}
	if acts := client.Actions(); len(acts) == 0 || acts[len(acts)-1].GetResource().Resource != "volumeattachments" {
		t.Errorf("the VolumeAttachment was not read live: %v", acts)
	}
}
