package dra_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// The pod-resources API's view of a container's claims, as kubelet's
// GetDynamicResources builds it (a device's CDI devices include those of
// the driver's devices before it, as kubelet's).
func TestGetDynamicResources(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	p := pod("ns", "p", "uid-p", "a")
	e.claims.put(claim("ns", "a", "uid-a", "gpu.example.com", p))
	d.setPrepare(answerDevices(map[string][]deviceAnswer{
		"uid-a": {{[]string{"gpu"}, "example.com/gpu=a0"}, {[]string{"gpu"}, "example.com/gpu=a1"}},
	}))
	mustPrepare(t, e.mgr, p)
	got := e.mgr.GetDynamicResources(p, &p.Spec.Containers[0])
	want := []*podresourcesv1.DynamicResource{{ClaimName: "a", ClaimNamespace: "ns", ClaimResources: []*podresourcesv1.ClaimResource{
		{DriverName: "gpu.example.com", PoolName: "pool", DeviceName: "a-0", CdiDevices: []*podresourcesv1.CDIDevice{{Name: "example.com/gpu=a0"}}},
		{DriverName: "gpu.example.com", PoolName: "pool", DeviceName: "a-1", CdiDevices: []*podresourcesv1.CDIDevice{{Name: "example.com/gpu=a0"}, {Name: "example.com/gpu=a1"}}},
	}}}
	if len(got) != 1 || !proto.Equal(got[0], want[0]) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// A container listing no claim, and one whose claim is not prepared.
	if r := e.mgr.GetDynamicResources(p, &corev1.Container{Name: "none"}); len(r) != 0 {
		t.Errorf("no claims: %v", r)
	}
	q := pod("ns", "q", "uid-q", "zzz")
	if r := e.mgr.GetDynamicResources(q, &q.Spec.Containers[0]); r == nil || len(r) != 0 {
		t.Errorf("unprepared: %v", r)
	}
}
