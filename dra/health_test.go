package dra_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/dra"
)

// runningStatus is a status with the pod's container c running.
func runningStatus() *corev1.PodStatus {
	return &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c"}, {Name: "other"}}}
}

// A prepared claim's device reads Unknown until its driver reports it
// (kubelet's default with ResourceHealthStatus on); a report that turns
// it Unhealthy names the pod to the WithHealthChange callback and the
// container status carries the health and message; the same report
// again changes nothing; a device no longer reported turns Unknown once
// its timeout passed; a stream that ends drops the driver's health.
func TestDeviceHealth(t *testing.T) {
	changes := make(chan []types.UID, 16)
	// The clock counts its reads: the manager reads it once per report
	// it receives, before it records it.
	mu := make(chan struct{}, 1)
	reads := make(chan struct{}, 1024)
	now := time.Unix(1000, 0)
	clock := func() time.Time {
		mu <- struct{}{}
		defer func() { <-mu }()
		select {
		case reads <- struct{}{}:
		default:
		}
		return now
	}
	setNow := func(t time.Time) { mu <- struct{}{}; now = t; <-mu }
	drain := func() {
		for {
			select {
			case <-reads:
			default:
				return
			}
		}
	}
	e := newEnv(t, dra.WithHealthChange(func(uids []types.UID) { changes <- uids }), dra.WithClock(clock))
	d := e.startDriver("gpu.example.com", drapb.DRAPluginService, drahealthv1.DRAResourceHealthService)
	p := pod("ns", "p1", "uid-p1", "c1")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "other"})
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	mustPrepare(t, e.mgr, p)

	status := func() []corev1.ResourceStatus {
		st := runningStatus()
		e.mgr.UpdateAllocatedResourcesStatus(p, st)
		if st.ContainerStatuses[1].AllocatedResourcesStatus != nil {
			t.Errorf("container without claims got %+v", st.ContainerStatuses[1].AllocatedResourcesStatus)
		}
		return st.ContainerStatuses[0].AllocatedResourcesStatus
	}
	want := func(h corev1.ResourceHealthStatus, msg string) []corev1.ResourceStatus {
		rh := corev1.ResourceHealth{ResourceID: corev1.ResourceID(cdiFor("c1")), Health: h}
		if msg != "" {
			rh.Message = ptr.To(msg)
		}
		return []corev1.ResourceStatus{{Name: "claim:pc-c1", Resources: []corev1.ResourceHealth{rh}}}
	}
	if got := status(); !cmp.Equal(got, want(corev1.ResourceHealthStatusUnknown, "")) {
		t.Fatalf("before any report: %s", cmp.Diff(want(corev1.ResourceHealthStatusUnknown, ""), got))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad := &drahealthv1.DeviceHealth{Device: &drahealthv1.DeviceIdentifier{PoolName: "pool", DeviceName: "dev-c1"},
		Health: drahealthv1.HealthStatus_UNHEALTHY, Message: strings.Repeat("x", 2000), HealthCheckTimeoutSeconds: 60}
	if err := d.SendHealth(ctx, bad); err != nil {
		t.Fatal(err)
	}
	select {
	case uids := <-changes:
		if !cmp.Equal(uids, []types.UID{"uid-p1"}) {
			t.Fatalf("pods %v, want uid-p1", uids)
		}
	case <-ctx.Done():
		t.Fatal("no health change reported")
	}
	msg := strings.Repeat("x", corev1.ResourceHealthMessageMaxLength-3) + "..."
	if got := status(); !cmp.Equal(got, want(corev1.ResourceHealthStatusUnhealthy, msg)) {
		t.Fatalf("after the report: %s", cmp.Diff(want(corev1.ResourceHealthStatusUnhealthy, msg), got))
	}

	// The same report: no change. Then, 61s later, a report without the
	// device: it timed out, turns Unknown, and the pod is named again.
	drain()
	if err := d.SendHealth(ctx, bad); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reads: // the repeated report is being recorded at the old time
	case <-ctx.Done():
		t.Fatal("the repeated report was not read")
	}
	setNow(time.Unix(1061, 0))
	if err := d.SendHealth(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case uids := <-changes:
		if !cmp.Equal(uids, []types.UID{"uid-p1"}) {
			t.Fatalf("pods %v, want uid-p1", uids)
		}
	case <-ctx.Done():
		t.Fatal("no change when the device timed out")
	}
	if got := status(); !cmp.Equal(got, want(corev1.ResourceHealthStatusUnknown, "")) {
		t.Fatalf("after the timeout: %s", cmp.Diff(want(corev1.ResourceHealthStatusUnknown, ""), got))
	}
	select {
	case uids := <-changes:
		t.Fatalf("the repeated report changed %v", uids)
	default:
	}
}

// A claim request named by the container reports under
// "claim:<name>/<request>"; claims not prepared on the node are left out;
// entries the status had for other resources stay.
func TestAllocatedResourcesStatusRequestAndUnprepared(t *testing.T) {
	e := newEnv(t)
	e.startDriver("gpu.example.com")
	p := pod("ns", "p1", "uid-p1", "c1", "c2")
	p.Spec.Containers[0].Resources.Claims[0].Request = "gpu"
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	e.claims.put(claim("ns", "c2", "uid-c2", "gpu.example.com", p))
	st := runningStatus()
	e.mgr.UpdateAllocatedResourcesStatus(p, st)
	if st.ContainerStatuses[0].AllocatedResourcesStatus != nil {
		t.Fatalf("unprepared claims reported: %+v", st.ContainerStatuses[0].AllocatedResourcesStatus)
	}
	mustPrepare(t, e.mgr, p)
	st = runningStatus()
	st.ContainerStatuses[0].AllocatedResourcesStatus = []corev1.ResourceStatus{{Name: "example.com/dev", Resources: []corev1.ResourceHealth{{ResourceID: "d0", Health: "Healthy"}}}}
	e.mgr.UpdateAllocatedResourcesStatus(p, st)
	want := []corev1.ResourceStatus{
		{Name: "example.com/dev", Resources: []corev1.ResourceHealth{{ResourceID: "d0", Health: "Healthy"}}},
		{Name: "claim:pc-c1/gpu", Resources: []corev1.ResourceHealth{{ResourceID: corev1.ResourceID(cdiFor("c1")), Health: "Unknown"}}},
		{Name: "claim:pc-c2", Resources: []corev1.ResourceHealth{{ResourceID: corev1.ResourceID(cdiFor("c2")), Health: "Unknown"}}},
	}
	if got := st.ContainerStatuses[0].AllocatedResourcesStatus; !cmp.Equal(got, want) {
		t.Fatal(cmp.Diff(want, got))
	}
}
