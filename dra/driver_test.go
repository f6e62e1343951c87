package dra_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/podstart/podstart/dra"
	"github.com/podstart/podstart/pluginmanager"
)

// A driver answering garbage fails the prepare with kubelet's message
// (or, for CDI IDs that are not CDI names, podstart's); the pod stays
// recorded on the claim, unprepared, so a later prepare with a sane
// answer prepares it and an unprepare reaches the driver, as kubelet's.
func TestDriverGarbage(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name   string
		answer func(*drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse
		text   string
	}{{
		name: "no result for the claim",
		answer: func(*drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse {
			return &drapb.NodePrepareResourcesResponse{}
		},
		text: "prepare dynamic resources: NodePrepareResources skipped 1 ResourceClaims",
	}, {
		name: "result for an unknown claim",
		answer: func(*drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse {
			return &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{"uid-nobody": {}}}
		},
		text: "prepare dynamic resources: NodePrepareResources returned result for unknown claim UID uid-nobody",
	}, {
		name: "unknown claim with a hostile UID",
		answer: func(*drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse {
			return &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{"a\nb": {}}}
		},
		text: `prepare dynamic resources: NodePrepareResources returned result for unknown claim UID "a\nb"`,
	}, {
		name: "error for the claim",
		answer: func(req *drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse {
			return &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{req.Claims[0].Uid: {Error: "device on fire"}}}
		},
		text: "prepare dynamic resources: NodePrepareResources failed for ResourceClaim c1: device on fire",
	}, {
		name: "a huge error is cut",
		answer: func(req *drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse {
			return &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{req.Claims[0].Uid: {Error: long}}}
		},
		text: `prepare dynamic resources: NodePrepareResources failed for ResourceClaim c1: "` + long[:1024] + `"...`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			garbage(t, tc.answer, tc.text)
		})
	}
	for _, id := range []string{"", "gpu0", "/dev/nvidia0", "example.com/gpu", "example.com/gpu=", "=gpu0", "example.com=gpu0",
		"example.com/gpu=../../etc", "example.com/gpu=a b", "1example.com/gpu=a", "example.com/g/pu=a", "example.com/gpu=a\x00", "example.com/gpu=a\nb"} {
		t.Run("CDI ID "+strings.ToValidUTF8(id[:min(len(id), 40)], "?"), func(t *testing.T) {
			text := "prepare dynamic resources: NodePrepareResources returned an invalid CDI device ID for ResourceClaim c1: "
			garbage(t, func(req *drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse {
				return &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{req.Claims[0].Uid: {
					Devices: []*drapb.Device{{PoolName: "pool", DeviceName: "d", CdiDeviceIds: []string{"example.com/gpu=ok", id}}},
				}}}
			}, text)
		})
	}
}

func garbage(t *testing.T, answer func(*drapb.NodePrepareResourcesRequest) *drapb.NodePrepareResourcesResponse, text string) {
	t.Helper()
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	p := pod("ns", "p", "uid-p", "c1")
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	d.setPrepare(func(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
		return answer(req), nil
	})
	err := e.mgr.PrepareResources(context.Background(), p)
	if !errors.Is(err, dra.ErrDriver) {
		t.Fatalf("error %v does not match ErrDriver", err)
	}
	if strings.HasSuffix(text, ": ") {
		if !strings.HasPrefix(err.Error(), text) || strings.Contains(err.Error(), "\n") || len(err.Error()) > len(text)+1200 {
			t.Fatalf("error %q, want prefix %q, one line, short", err, text)
		}
	} else if err.Error() != text {
		t.Fatalf("error\n %q\nwant\n %q", err, text)
	}
	for _, c := range e.mgr.Claims() {
		for _, ds := range c.DriverState {
			for _, dev := range ds.Devices {
				for _, id := range dev.CDIDeviceIDs {
					if id != "example.com/gpu=ok" && id != cdiFor("c1") {
						t.Fatalf("garbage recorded: %q", id)
					}
				}
			}
		}
	}
	if !e.mgr.PodMightNeedToUnprepareResources(p.UID) {
		t.Fatal("the pod is not recorded on its claim after a failed prepare")
	}
	d.setPrepare(nil)
	mustPrepare(t, e.mgr, p)
	opts, err := e.mgr.DeviceOptions(context.Background(), p, &p.Spec.Containers[0])
	if err != nil || len(opts.CDIDevices) != 1 || opts.CDIDevices[0] != cdiFor("c1") {
		t.Fatalf("after a sane answer: %v %v", opts.CDIDevices, err)
	}
	if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if calls := d.getCalls(); len(calls) != 3 || calls[2].method != "unprepare" {
		t.Fatalf("calls %v", calls)
	}
}

// A driver that hangs is bounded by the call timeout the registration
// gives (the plugin manager's WithPluginClientTimeout), and with none by
// kubelet's 45s; the claim is left for a retry, no goroutine left behind
// (TestMain).
func TestDriverHangs(t *testing.T) {
	e := newEnvWith(t, []pluginmanager.Option{pluginmanager.WithPluginClientTimeout(100 * time.Millisecond)})
	d := e.startDriver("gpu.example.com")
	p := pod("ns", "p", "uid-p", "c1")
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	d.setPrepare(func(ctx context.Context, _ *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	err := e.mgr.PrepareResources(context.Background(), p)
	if status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded || !errors.Is(err, dra.ErrDriver) ||
		!strings.HasPrefix(err.Error(), "prepare dynamic resources: NodePrepareResources: rpc error: code = DeadlineExceeded") {
		t.Fatalf("error %v", err)
	}
	d.setUnprepare(func(ctx context.Context, _ *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	err = e.mgr.UnprepareResources(context.Background(), p)
	if !strings.HasPrefix(fmtErr(err), "unprepare dynamic resources: NodeUnprepareResources: rpc error: code = DeadlineExceeded") {
		t.Fatalf("error %v", err)
	}
	// The unprepare started: a new pod may not attach to the claim.
	p2 := pod("ns", "p2", "uid-p2", "c1")
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p, p2))
	expectErr(t, e.mgr.PrepareResources(context.Background(), p2), dra.ErrClaimNotUsable, "prepare dynamic resources: ResourceClaim c1 is being unprepared")
	d.setUnprepare(nil)
	d.setPrepare(nil)
	if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	mustPrepare(t, e.mgr, p2)

	// Without a timeout from the registration: kubelet's 45s.
	e2 := newEnv(t)
	d2 := e2.startDriver("gpu.example.com")
	e2.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	left := make(chan time.Duration, 1)
	d2.setPrepare(func(ctx context.Context, _ *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			left <- -1
		} else {
			left <- time.Until(dl)
		}
		return &drapb.NodePrepareResourcesResponse{}, nil
	})
	_ = e2.mgr.PrepareResources(context.Background(), p)
	if l := <-left; l <= 40*time.Second || l > dra.DefaultCallTimeout || dra.DefaultCallTimeout != 45*time.Second {
		t.Errorf("the driver saw a deadline %v away, want about %v", l, dra.DefaultCallTimeout)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// A driver that dies during the call fails the prepare; its registration
// socket goes, the plugin manager deregisters it, and a new instance
// registering at the same paths serves the retry on a new connection.
func TestDriverDiesAndReregisters(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	p := pod("ns", "p", "uid-p", "c1")
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	d.setPrepare(func(ctx context.Context, _ *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
		go d.stop()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	err := e.mgr.PrepareResources(context.Background(), p)
	// Unavailable when the server's end reaches the call first, Canceled
	// when the deregistration closed the connection first.
	if code := status.Code(errors.Unwrap(err)); !errors.Is(err, dra.ErrDriver) || (code != codes.Unavailable && code != codes.Canceled) {
		t.Fatalf("error %v", err)
	}
	e.waitDeregistered("gpu.example.com")
	expectErr(t, e.mgr.PrepareResources(context.Background(), p), dra.ErrDriverNotRegistered, "prepare dynamic resources: DRA driver gpu.example.com is not registered")

	d2 := e.startDriver("gpu.example.com")
	mustPrepare(t, e.mgr, p)
	if n := len(d2.getCalls()); n != 1 {
		t.Fatalf("new instance got %d calls", n)
	}
	if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// Kubelet's version check: a plugin offering no service kubelet speaks is
// refused with its message; v1beta1 drivers are served through kubelet's
// conversion.
func TestPluginVersions(t *testing.T) {
	e := newEnv(t)
	err := e.mgr.ValidatePlugin("x.example.com", "/e.sock", []string{"v2.DRAPlugin"})
	expectErr(t, err, dra.ErrRegistration, `invalid supported gRPC versions of DRA driver plugin x.example.com at endpoint /e.sock: none of services supported by the plugin (["v2.DRAPlugin"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])`)
	err = e.mgr.ValidatePlugin("x.example.com", "/e.sock", nil)
	expectErr(t, err, dra.ErrRegistration, "invalid supported gRPC versions of DRA driver plugin x.example.com at endpoint /e.sock: empty list of supported gRPC services (aka supported versions)")

	d := e.startDriver("old.example.com", "v9.DRAPlugin", drapbv1beta1.DRAPluginService)
	p := pod("ns", "p", "uid-p", "c1")
	e.claims.put(claim("ns", "c1", "uid-c1", "old.example.com", p))
	mustPrepare(t, e.mgr, p)
	opts, err := e.mgr.DeviceOptions(context.Background(), p, &p.Spec.Containers[0])
	if err != nil || len(opts.CDIDevices) != 1 || opts.CDIDevices[0] != cdiFor("c1") {
		t.Fatalf("through v1beta1: %v %v", opts.CDIDevices, err)
	}
	if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if n := len(d.getCalls()); n != 2 {
		t.Fatalf("calls %v", d.getCalls())
	}
}

// A rolling update: a driver's second instance registers beside the
// first (both serve calls; kubelet picks the newest connected one), and
// when one goes the other serves every call.
func TestDriverRollingUpdate(t *testing.T) {
	e := newEnv(t)
	old := e.startDriverAt("gpu.example.com", "gpu-old")
	nu := e.startDriverAt("gpu.example.com", "gpu-new")
	p := pod("ns", "p", "uid-p", "c1")
	q := pod("ns", "q", "uid-q", "c2")
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", p))
	e.claims.put(claim("ns", "c2", "uid-c2", "gpu.example.com", q))
	mustPrepare(t, e.mgr, p)
	if n := len(old.getCalls()) + len(nu.getCalls()); n != 1 {
		t.Fatalf("%d calls", n)
	}
	nu.stop()
	e.waitDeregistered("gpu.example.com")
	oldCalls := len(old.getCalls())
	mustPrepare(t, e.mgr, q)
	if err := e.mgr.UnprepareResources(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if calls := old.getCalls(); len(calls) != oldCalls+2 || calls[oldCalls].method != "prepare" || calls[oldCalls+1].method != "unprepare" {
		t.Fatalf("old %v", calls)
	}
	if got := e.mgr.Drivers(); len(got) != 1 || got[0] != "gpu.example.com" {
		t.Fatalf("drivers %v", got)
	}
}
