package dra_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/dra"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// The manager wired into a Syncer as a node agent wires it, over the fake
// runtime: the pod's claim is prepared before its sandbox, and its
// container is created with the claim's CDI device; a pod whose claim is
// not reserved for it gets no sandbox.
func TestWiredIntoSyncer(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	rt := fake.New()
	ims := images.NewManager(rt)
	t.Cleanup(func() { ims.Close() })
	root := t.TempDir()
	s := podsync.NewSyncer(rt, ims,
		podsync.WithNode(criconfig.Node{RootDir: root, PodLogsDir: filepath.Join(root, "logs"), DynamicResourceAllocation: true}),
		podsync.WithResourcePreparer(e.mgr),
		podsync.WithDevices(podsync.JoinDevices(e.mgr, nil)))
	p := pod("ns", "p", "uid-p", "c1")
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	ctx := context.Background()
	for range 3 {
		st, err := s.Status(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SyncPod(ctx, p, st, nil).Error(); err != nil {
			t.Fatal(err)
		}
	}
	var cdi []string
	for _, c := range rt.Calls() {
		if req, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
			for _, dev := range req.Config.CDIDevices {
				cdi = append(cdi, dev.Name)
			}
		}
	}
	if !slices.Equal(cdi, []string{cdiFor("c1")}) || len(d.getCalls()) != 1 {
		t.Fatalf("CDI devices %v, driver calls %v", cdi, d.getCalls())
	}

	other := pod("ns", "q", "uid-q", "c2")
	e.claims.put(claim("ns", "c2", "uid-c2", "gpu.example.com", p)) // reserved for p, not q
	st, err := s.Status(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	err = s.SyncPod(ctx, other, st, nil).Error()
	if !errors.Is(err, podsync.ErrPrepareResources) || !errors.Is(err, dra.ErrClaimNotUsable) {
		t.Fatalf("sync of a pod with a claim not reserved for it: %v", err)
	}
	if n := rt.CallCount("RunPodSandbox"); n != 1 {
		t.Fatalf("%d sandboxes", n)
	}
}
