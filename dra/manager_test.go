package dra_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A pod's claims, one direct and one made from a template, are prepared
// in one NodePrepareResources call to their driver; the container gets
// their CDI devices; a second pod sharing a claim does not prepare it
// again; the claim is unprepared only when its last pod is gone; the
// checkpoint follows each step.
func TestPrepareShareUnprepare(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	p1 := pod("ns", "p1", "uid-p1", "shared")
	p1.Spec.ResourceClaims = append(p1.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "own", ResourceClaimTemplateName: ptr.To("tmpl")})
	p1.Spec.Containers[0].Resources.Claims = append(p1.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: "own"})
	p1.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "own", ResourceClaimName: ptr.To("p1-own-x7")}}
	p2 := pod("ns", "p2", "uid-p2", "shared")
	e.claims.put(claim("ns", "shared", "uid-shared", "gpu.example.com", p1, p2))
	own := claim("ns", "p1-own-x7", "uid-own", "gpu.example.com", p1)
	own.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p1", UID: "uid-p1", Controller: ptr.To(true)}}
	e.claims.put(own)

	mustPrepare(t, e.mgr, p1)
	if got, want := d.getCalls(), []call{{"prepare", []string{"uid-shared", "uid-own"}}}; !cmp.Equal(got, want, cmp.AllowUnexported(call{})) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	opts, err := e.mgr.DeviceOptions(context.Background(), p1, &p1.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{cdiFor("shared"), cdiFor("p1-own-x7")}; !slices.Equal(opts.CDIDevices, want) {
		t.Errorf("CDI devices %v, want %v", opts.CDIDevices, want)
	}

	// Prepared again (a sandbox re-created): nothing new.
	mustPrepare(t, e.mgr, p1)
	mustPrepare(t, e.mgr, p2)
	if n := len(d.getCalls()); n != 1 {
		t.Fatalf("%d driver calls, want 1: %v", n, d.getCalls())
	}
	got := e.mgr.Claims()
	if len(got) != 2 || got[1].ClaimName != "shared" || !got[1].PodUIDs.HasAll("uid-p1", "uid-p2") || got[1].DriverState["gpu.example.com"].Devices[0].CDIDeviceIDs[0] != cdiFor("shared") {
		t.Fatalf("claims %+v", got)
	}
	fromDisk := readClaims(t, e)
	if !cmp.Equal(fromDisk, got) {
		t.Errorf("checkpoint differs from the cache: %s", cmp.Diff(got, fromDisk))
	}

	if err := e.mgr.UnprepareResources(context.Background(), p1); err != nil {
		t.Fatal(err)
	}
	if got, want := d.getCalls()[1:], []call{{"unprepare", []string{"uid-own"}}}; !cmp.Equal(got, want, cmp.AllowUnexported(call{})) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if !e.mgr.PodMightNeedToUnprepareResources("uid-p2") || e.mgr.PodMightNeedToUnprepareResources("uid-p1") {
		t.Error("pod references wrong after p1's unprepare")
	}
	// Idempotent.
	if err := e.mgr.UnprepareResources(context.Background(), p1); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.UnprepareResources(context.Background(), p2); err != nil {
		t.Fatal(err)
	}
	if got, want := d.getCalls()[2:], []call{{"unprepare", []string{"uid-shared"}}}; !cmp.Equal(got, want, cmp.AllowUnexported(call{})) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	if c := e.mgr.Claims(); len(c) != 0 || len(readClaims(t, e)) != 0 {
		t.Errorf("claims left: %+v", c)
	}
}

// A container gets only the claims it lists, and of a claim listed with a
// request only that request's devices (a device naming no request serves
// all); extended resources backed by DRA come from the scheduler's claim.
func TestDeviceOptionsPerContainerAndRequest(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	p := pod("ns", "p", "uid-p", "a", "b")
	p.Spec.Containers = append(p.Spec.Containers,
		corev1.Container{Name: "only-a-x", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "pc-a", Request: "x"}}}},
		corev1.Container{Name: "none"},
		corev1.Container{Name: "ext", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": resourceOne}}},
	)
	p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{
		ResourceClaimName: "p-extended-resources-abc",
		RequestMappings:   []corev1.ContainerExtendedResourceRequest{{ContainerName: "ext", ResourceName: "example.com/gpu", RequestName: "container-2-request-0"}},
	}
	e.claims.put(claim("ns", "a", "uid-a", "gpu.example.com", p))
	e.claims.put(claim("ns", "b", "uid-b", "gpu.example.com", p))
	e.claims.put(claim("ns", "p-extended-resources-abc", "uid-ext", "gpu.example.com", p))
	d.setPrepare(answerDevices(map[string][]deviceAnswer{
		"uid-a":   {{[]string{"x"}, "example.com/gpu=a-x"}, {[]string{"y"}, "example.com/gpu=a-y"}, {nil, "example.com/gpu=a-all"}},
		"uid-b":   {{[]string{"z"}, "example.com/gpu=b-z"}},
		"uid-ext": {{[]string{"container-2-request-0"}, "example.com/gpu=ext0"}, {[]string{"other"}, "example.com/gpu=ext-other"}},
	}))
	mustPrepare(t, e.mgr, p)
	want := map[string][]string{
		"c":        {"example.com/gpu=a-x", "example.com/gpu=a-y", "example.com/gpu=a-all", "example.com/gpu=b-z"},
		"only-a-x": {"example.com/gpu=a-x", "example.com/gpu=a-all"},
		"none":     nil,
		"ext":      {"example.com/gpu=ext0"},
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		opts, err := e.mgr.DeviceOptions(context.Background(), p, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(opts.CDIDevices, want[c.Name]) {
			t.Errorf("%s: CDI devices %v, want %v", c.Name, opts.CDIDevices, want[c.Name])
		}
	}
	// A container's claim the manager never prepared: kubelet's internal
	// error.
	other := pod("ns", "q", "uid-q", "a")
	_, err := e.mgr.DeviceOptions(context.Background(), other, &other.Spec.Containers[0])
	if err != nil {
		t.Fatal(err) // claim a is prepared (for p): kubelet looks up the claim, not the pod
	}
	other = pod("ns", "q", "uid-q", "zzz")
	_, err = e.mgr.DeviceOptions(context.Background(), other, &other.Spec.Containers[0])
	expectErr(t, err, nil, "internal error: unable to get claim info for ResourceClaim zzz in namespace ns")
}

// Two pod claims naming one ResourceClaim: prepared and unprepared once.
func TestClaimNamedTwice(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	p := pod("ns", "p", "uid-p", "c1")
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "again", ResourceClaimName: ptr.To("c1")})
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	mustPrepare(t, e.mgr, p)
	if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := []call{{"prepare", []string{"uid-c1"}}, {"unprepare", []string{"uid-c1"}}}
	if got := d.getCalls(); !cmp.Equal(got, want, cmp.AllowUnexported(call{})) {
		t.Fatalf("calls %v, want %v", got, want)
	}
}
