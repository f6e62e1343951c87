package volumemanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// failingNodes is an API whose GetNode fails.
type failingNodes struct{ *Objects }

func (failingNodes) GetNode(context.Context, string) (*corev1.Node, error) {
	return nil, errors.New("apiserver down")
}

// TestVolumesAttachedInNodeStatus: with an API that reads the Node, an
// attachable volume is mounted only once node.status.volumesAttached
// lists it, even with its VolumeAttachment attached (kubelet's
// VerifyControllerAttachedVolume); a failed read of the Node is kubelet's
// error, without an event.
func TestVolumesAttachedInNodeStatus(t *testing.T) {
	e := newEnv(t)
	m, err := New(node, e.root, e.objs.WithNodes(), e.node, WithClock(e.clock), WithEventRecorder(e.rec))
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	name := UniqueVolumeName(driver, "vol-1")
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: AttachmentName("vol-1", driver, node)},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	e.objs.Set(claim, pv, va, n)
	pod := newPod("db", "uid-db", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.m.MarkVolumesReportedInUse([]corev1.UniqueVolumeName{name})
	e.reconcile(t)
	if got := e.node.callsOf("Stage"); len(got) != 0 {
		t.Fatalf("staged before node.status.volumesAttached listed the volume: %q", got)
	}
	n.Status.VolumesAttached = []corev1.AttachedVolume{{Name: name, DevicePath: "csi-123"}}
	e.objs.Set(n)
	e.reconcile(t)
	if got := e.node.callsOf("Stage"); len(got) != 1 {
		t.Fatalf("stages %q, want one once the node lists the volume", got)
	}
	if ev := e.rec.list(); len(ev) != 0 {
		t.Errorf("events while waiting for the node's status (kubelet records none): %q", ev)
	}

	// A Node that cannot be read.
	e2 := newEnv(t)
	m2, err := New(node, e2.root, failingNodes{e2.objs}, e2.node, WithClock(e2.clock), WithEventRecorder(e2.rec))
	if err != nil {
		t.Fatal(err)
	}
	e2.objs.Set(claim, pv, va)
	if err := m2.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	m2.MarkVolumesReportedInUse([]corev1.UniqueVolumeName{name})
	err = m2.Reconcile(ctx)
	if err == nil || !strings.Contains(err.Error(), `VerifyControllerAttachedVolume failed fetching node from API server for volume "pv-data" : apiserver down`) {
		t.Fatalf("pass error %v", err)
	}
	if ev := e2.rec.list(); len(ev) != 0 {
		t.Errorf("events for a failed Node read: %q", ev)
	}
}
