package dra_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/dra"
)

// Claims the pod may not use, and claims that cannot be resolved, fail
// the prepare with kubelet's messages before anything changes: no driver
// call, no cache entry, nothing to unprepare.
func TestPrepareRefusesBeforeActing(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	mk := func() *corev1.Pod { return pod("ns", "p", "uid-p", "c1") }
	owned := func(c *resourcev1.ResourceClaim, uid string) *resourcev1.ResourceClaim {
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: types.UID(uid), Controller: ptr.To(true)}}
		return c
	}
	for _, tc := range []struct {
		name  string
		pod   func() *corev1.Pod
		claim func(p *corev1.Pod) *resourcev1.ResourceClaim
		class error
		text  string
	}{{
		name:  "claim missing from the API",
		pod:   mk,
		claim: func(*corev1.Pod) *resourcev1.ResourceClaim { return nil },
		text:  `prepare dynamic resources: fetch ResourceClaim c1: resourceclaims.resource.k8s.io "c1" not found`,
	}, {
		name: "not allocated",
		pod:  mk,
		claim: func(p *corev1.Pod) *resourcev1.ResourceClaim {
			c := claim("ns", "c1", "uid-c1", "gpu.example.com", p)
			c.Status.Allocation = nil
			return c
		},
		class: dra.ErrClaimNotUsable,
		text:  "prepare dynamic resources: ResourceClaim c1: not allocated",
	}, {
		name: "not reserved for the pod",
		pod:  mk,
		claim: func(*corev1.Pod) *resourcev1.ResourceClaim {
			return claim("ns", "c1", "uid-c1", "gpu.example.com", pod("ns", "other", "uid-other"))
		},
		class: dra.ErrClaimNotUsable,
		text:  "prepare dynamic resources: pod p (uid-p) is not allowed to use ResourceClaim c1 (uid-c1)",
	}, {
		name: "template claim not in the status yet",
		pod: func() *corev1.Pod {
			p := mk()
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "pc-c1", ResourceClaimTemplateName: ptr.To("t")}}
			return p
		},
		claim: func(*corev1.Pod) *resourcev1.ResourceClaim { return nil },
		class: dra.ErrClaimNotFound,
		text:  `prepare dynamic resources: pod "ns/p": ResourceClaim not created yet`,
	}, {
		name: "template claim owned by another pod",
		pod: func() *corev1.Pod {
			p := mk()
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "pc-c1", ResourceClaimTemplateName: ptr.To("t")}}
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "pc-c1", ResourceClaimName: ptr.To("c1")}}
			return p
		},
		claim: func(p *corev1.Pod) *resourcev1.ResourceClaim {
			return owned(claim("ns", "c1", "uid-c1", "gpu.example.com", p), "uid-somebody")
		},
		class: dra.ErrClaimNotUsable,
		text:  "prepare dynamic resources: ResourceClaim ns/c1 was not created for Pod ns/p (Pod is not owner)",
	}, {
		name: "neither name nor template",
		pod: func() *corev1.Pod {
			p := mk()
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "pc-c1"}}
			return p
		},
		claim: func(*corev1.Pod) *resourcev1.ResourceClaim { return nil },
		class: dra.ErrAPIUnsupported,
		text:  `prepare dynamic resources: pod "ns/p", spec.resourceClaim "pc-c1": none of the supported fields are set`,
	}, {
		name: "driver not registered (a claim for another node's driver)",
		pod:  mk,
		claim: func(p *corev1.Pod) *resourcev1.ResourceClaim {
			return claim("ns", "c1", "uid-c1", "fpga.example.com", p)
		},
		class: dra.ErrDriverNotRegistered,
		text:  "prepare dynamic resources: DRA driver fpga.example.com is not registered",
	}, {
		name: "optional node operations",
		pod:  mk,
		claim: func(p *corev1.Pod) *resourcev1.ResourceClaim {
			c := claim("ns", "c1", "uid-c1", "gpu.example.com", p)
			c.Status.Allocation.Devices.Results[0].SkipNodeOperations = []resourcev1.SkipNodeOperation{resourcev1.SkipNodeOperationAll}
			return c
		},
		class: dra.ErrUnsupported,
		text:  "prepare dynamic resources: ResourceClaim c1: DRAOptionalNodeOperations feature gate is disabled on kubelet",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod()
			e.claims.mu.Lock()
			delete(e.claims.claims, "ns/c1")
			e.claims.mu.Unlock()
			if c := tc.claim(p); c != nil {
				e.claims.put(c)
			}
			err := e.mgr.PrepareResources(context.Background(), p)
			expectErr(t, err, tc.class, tc.text)
			if len(d.getCalls()) != 0 || len(e.mgr.Claims()) != 0 || e.mgr.PodMightNeedToUnprepareResources(p.UID) {
				t.Fatalf("acted on a refused pod: calls %v, claims %+v", d.getCalls(), e.mgr.Claims())
			}
			if err := e.mgr.UnprepareResources(context.Background(), p); err != nil && !errors.Is(err, dra.ErrClaimNotFound) && !errors.Is(err, dra.ErrAPIUnsupported) {
				t.Fatalf("unprepare of a refused pod: %v", err)
			}
			if len(d.getCalls()) != 0 {
				t.Fatalf("unprepare called the driver: %v", d.getCalls())
			}
		})
	}
	if !apierrors.IsNotFound(errors.Unwrap(errors.Unwrap(e.mgr.PrepareResources(context.Background(), pod("ns", "p", "uid-p", "absent"))))) {
		t.Error("the getter's NotFound is not wrapped")
	}
}

// Entry points refuse what they cannot act on.
func TestValidateInput(t *testing.T) {
	e := newEnv(t)
	for _, p := range []*corev1.Pod{nil, {}, pod("", "p", "uid"), pod("ns", "p", "")} {
		if err := e.mgr.PrepareResources(context.Background(), p); err == nil {
			t.Errorf("PrepareResources(%v) accepted", p)
		}
		if err := e.mgr.UnprepareResources(context.Background(), p); err == nil {
			t.Errorf("UnprepareResources(%v) accepted", p)
		}
	}
	if _, err := e.mgr.DeviceOptions(context.Background(), pod("ns", "p", "u"), nil); err == nil {
		t.Error("DeviceOptions with a nil container accepted")
	}
	for _, dir := range []string{"", "relative", "/a/../b"} {
		if _, err := dra.New(context.Background(), dir, e.claims); err == nil || !strings.Contains(err.Error(), "clean absolute") {
			t.Errorf("New(%q): %v", dir, err)
		}
	}
	if _, err := dra.New(context.Background(), e.root, nil); err == nil {
		t.Error("New with a nil getter accepted")
	}
}
