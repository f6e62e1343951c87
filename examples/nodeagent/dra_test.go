package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/dra/fake"
	"github.com/podstart/podstart/pluginmanager"
)

// A DRA driver registering through the agent's plugins_registry prepares
// a pod's allocated, reserved claim before its sandbox; the container runs
// with the claim's CDI device; deleting the pod unprepares the claim.
func TestDRAPod(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	const driverName = "gpu.example.com"
	d := fake.New(driverName)
	if err := d.Serve(filepath.Join(h.root, "plugins", driverName, "dra.sock"),
		filepath.Join(h.root, pluginmanager.DirName, driverName+"-reg.sock")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	select {
	case st := <-d.Registration():
		if !st.PluginRegistered {
			t.Fatalf("driver not registered: %s", st.Error)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a wait
		t.Fatal("the agent's plugin manager never answered the driver's registration")
	}

	pod := testPod("dra")
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gpu-claim", UID: "claim-uid"},
		Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
				Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: driverName, Pool: "pool", Device: "gpu-0"}}}},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}},
		},
	}
	if _, err := h.client.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the DRA pod Running", func() bool {
		p, ok := h.get(t, "dra")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	// Its device's health, Unknown (the fake driver has no health
	// service), in its container's status, as kubelet reports it.
	eventually(t, "the container's allocatedResourcesStatus", func() bool {
		p, ok := h.get(t, "dra")
		if !ok || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		rs := p.Status.ContainerStatuses[0].AllocatedResourcesStatus
		return len(rs) == 1 && rs[0].Name == "claim:gpu" && len(rs[0].Resources) == 1 &&
			rs[0].Resources[0].ResourceID == corev1.ResourceID(fake.CDIDeviceID("gpu-claim")) &&
			rs[0].Resources[0].Health == corev1.ResourceHealthStatusUnknown
	})
	if got := d.Prepared()["claim-uid"]; got != 1 {
		t.Errorf("claim prepared %d times, want 1", got)
	}
	var cdi []string
	for _, c := range h.rt.Calls() {
		if r, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok && r.Config.Metadata.Name == "app" {
			for _, dev := range r.Config.CDIDevices {
				cdi = append(cdi, dev.Name)
			}
		}
	}
	if len(cdi) != 1 || cdi[0] != fake.CDIDeviceID("gpu-claim") {
		t.Errorf("container's CDI devices %v, want [%s]", cdi, fake.CDIDeviceID("gpu-claim"))
	}

	p, _ := h.get(t, "dra")
	now := metav1.NewTime(time.Now())
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, ptr.To(int64(0))
	if _, err := h.client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the claim unprepared", func() bool {
		for _, c := range d.Calls() {
			if c.Method == fake.Unprepare && len(c.UIDs) == 1 && c.UIDs[0] == "claim-uid" {
				return true
			}
		}
		return false
	})
}
