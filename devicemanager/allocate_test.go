package devicemanager

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/podstart/podstart/admission"
	"github.com/podstart/podstart/criconfig"
)

func rejection(t *testing.T, err error) *admission.Rejection {
	t.Helper()
	var r *admission.Rejection
	if !errors.As(err, &r) {
		t.Fatalf("error %v is not a rejection", err)
	}
	return r
}

func TestAdmitAllocatesAndRejects(t *testing.T) {
	h := newHarness(t, shortDir(t))
	p := h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "d0", "d1", "d2"), &pluginapi.DevicePluginOptions{})
	ctx := context.Background()
	p1 := podWith("u1", ctr("a", map[string]int64{res: 2, "cpu": 1}))
	if err := h.m.Admit(ctx, p1, nil); err != nil {
		t.Fatal(err)
	}
	p2 := podWith("u2", ctr("a", map[string]int64{res: 2}))
	err := h.m.Admit(ctx, p2, []*corev1.Pod{p1})
	r := rejection(t, err)
	if r.Reason() != "UnexpectedAdmissionError" {
		t.Errorf("reason %q", r.Reason())
	}
	want := "Allocate failed due to requested number of devices unavailable for example.com/dongle. Requested: 2, Available: 1, which is unexpected"
	if r.Message() != want {
		t.Errorf("message\n%q\nwant\n%q", r.Message(), want)
	}
	if !errors.Is(err, admission.ErrRejected) {
		t.Error("not ErrRejected")
	}
	// p1 is gone: its devices are free for p2.
	if err := h.m.Admit(ctx, p2, nil); err != nil {
		t.Fatal(err)
	}
	opts, err := h.m.DeviceOptions(ctx, p2, &p2.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	want2 := criconfig.DeviceOptions{
		Env: []criconfig.EnvVar{{Name: "DEV_d0", Value: "d0"}, {Name: "DEV_d1", Value: "d1"}},
		Devices: []*runtimeapi.Device{
			{ContainerPath: "/dev/d0", HostPath: "/dev/host-d0", Permissions: "rw"},
			{ContainerPath: "/dev/d1", HostPath: "/dev/host-d1", Permissions: "rw"},
		},
	}
	if !reflect.DeepEqual(opts, want2) {
		t.Errorf("DeviceOptions = %+v\nwant %+v", opts, want2)
	}
	if n := p.callsOf("Allocate"); n != 2 {
		t.Errorf("Allocate calls = %d, want 2", n)
	}
	// Pod-resources view.
	got := h.m.GetDevices("u2", "a")
	if len(got) != 2 || got[0].ResourceName != res || got[0].DeviceIds[0] != "d0" || got[0].Topology != nil {
		t.Errorf("GetDevices = %v", got)
	}
	if n := len(h.m.GetAllocatableDevices()); n != 3 {
		t.Errorf("GetAllocatableDevices: %d entries", n)
	}
}

func TestAdmitErrors(t *testing.T) {
	h := newHarness(t, shortDir(t))
	h.plugin(t, res, "dongle.sock", devices(pluginapi.Unhealthy, "d0"), &pluginapi.DevicePluginOptions{})
	err := h.m.Admit(context.Background(), podWith("u1", ctr("a", map[string]int64{res: 1})), nil)
	if got, want := rejection(t, err).Message(), "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/dongle, which is unexpected"; got != want {
		t.Errorf("message %q", got)
	}
	pod := podWith("u1", ctr("a", map[string]int64{res: 1}))
	if err := h.m.Allocate(context.Background(), pod, &pod.Spec.Containers[0], nil); !errors.Is(err, ErrAllocate) {
		t.Errorf("Allocate: %v, not ErrAllocate", err)
	}
}

// Init containers' devices are reused by the containers after them; a
// sidecar's are not.
func TestInitContainerDevicesReused(t *testing.T) {
	h := newHarness(t, shortDir(t))
	p := h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "d0", "d1", "d2", "d3"), &pluginapi.DevicePluginOptions{})
	always := corev1.ContainerRestartPolicyAlways
	side := ctr("side", map[string]int64{res: 1})
	side.RestartPolicy = &always
	pod := podWith("u1", ctr("app", map[string]int64{res: 2}))
	pod.Spec.InitContainers = []corev1.Container{ctr("init", map[string]int64{res: 2}), side}
	if err := h.m.Admit(context.Background(), pod, nil); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	got := p.allocated
	p.mu.Unlock()
	want := [][]string{{"d0", "d1"}, {"d0"}, {"d1", "d2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("allocations %v, want %v", got, want)
	}
	// The sidecar's d0 came from the init container's; the app container
	// reused the init container's d1 and took d2: d3 is free.
	u2 := podWith("u2", ctr("a", map[string]int64{res: 1}))
	if err := h.m.Admit(context.Background(), u2, []*corev1.Pod{pod}); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Admit(context.Background(), podWith("u3", ctr("a", map[string]int64{res: 1})), []*corev1.Pod{pod, u2}); err == nil {
		t.Error("a fifth device was allocated")
	}
}

// GetPreferredAllocation: preferred devices first; IDs the plugin invents
// are ignored.
func TestPreferredAllocation(t *testing.T) {
	h := newHarness(t, shortDir(t))
	p := &fakePlugin{resource: res, initial: devices(pluginapi.Healthy, "d0", "d1", "d2", "d3"), opts: &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}}
	var req *pluginapi.ContainerPreferredAllocationRequest
	p.preferred = func(_ context.Context, r *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
		req = r.ContainerRequests[0]
		return &pluginapi.PreferredAllocationResponse{ContainerResponses: []*pluginapi.ContainerPreferredAllocationResponse{{DeviceIDs: []string{"ghost", "d3"}}}}, nil
	}
	p.serve(t, h.dir, "dongle.sock")
	if err := p.register(context.Background(), h.m, pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 2)
	if err := h.m.Admit(context.Background(), podWith("u1", ctr("a", map[string]int64{res: 2})), nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.AvailableDeviceIDs, []string{"d0", "d1", "d2", "d3"}) || req.AllocationSize != 2 || len(req.MustIncludeDeviceIDs) != 0 {
		t.Errorf("preferred request %v", req)
	}
	if got := p.allocated[0]; !reflect.DeepEqual(got, []string{"d0", "d3"}) {
		t.Errorf("allocated %v, want d3 and d0", got)
	}
}

// A plugin that answers garbage: the pod is rejected and the devices are
// free again.
func TestBadAllocateResponses(t *testing.T) {
	tests := []struct {
		name string
		resp *pluginapi.ContainerAllocateResponse
		none bool
		want string
	}{
		{name: "no container responses", none: true, want: "no containers return in allocation response"},
		{name: "unqualified CDI name", resp: &pluginapi.ContainerAllocateResponse{CdiDevices: []*pluginapi.CDIDevice{{Name: "gpu0"}}}, want: `CDI device "gpu0"`},
		{name: "hostile CDI name", resp: &pluginapi.ContainerAllocateResponse{CdiDevices: []*pluginapi.CDIDevice{{Name: "vendor.com/gpu=0;rm -rf /"}}}, want: "invalid device name"},
		{name: "CDI class with slash", resp: &pluginapi.ContainerAllocateResponse{CdiDevices: []*pluginapi.CDIDevice{{Name: "vendor.com/a/b=0"}}}, want: "invalid class"},
		{name: "relative host path", resp: &pluginapi.ContainerAllocateResponse{Devices: []*pluginapi.DeviceSpec{{ContainerPath: "/dev/x", HostPath: "dev/x"}}}, want: "device"},
		{name: "bad permissions", resp: &pluginapi.ContainerAllocateResponse{Devices: []*pluginapi.DeviceSpec{{ContainerPath: "/dev/x", HostPath: "/dev/x", Permissions: "rwx"}}}, want: "permissions"},
		{name: "mount with NUL", resp: &pluginapi.ContainerAllocateResponse{Mounts: []*pluginapi.Mount{{ContainerPath: "/a\x00b", HostPath: "/x"}}}, want: "mount"},
		{name: "env with =", resp: &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"A=B": "c"}}, want: "environment variable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, shortDir(t))
			p := &fakePlugin{resource: res, initial: devices(pluginapi.Healthy, "d0")}
			p.allocate = func(context.Context, *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
				if tc.none {
					return &pluginapi.AllocateResponse{}, nil
				}
				return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{tc.resp}}, nil
			}
			p.serve(t, h.dir, "dongle.sock")
			if err := p.register(context.Background(), h.m, pluginapi.Version); err != nil {
				t.Fatal(err)
			}
			h.wait(t, 2)
			err := h.m.Admit(context.Background(), podWith("u1", ctr("a", map[string]int64{res: 1})), nil)
			if err == nil || !strings.Contains(rejection(t, err).Message(), tc.want) {
				t.Fatalf("Admit: %v, want %q", err, tc.want)
			}
			// The device is free: a well-behaved answer now gets it.
			p.mu.Lock()
			p.allocate = nil
			p.mu.Unlock()
			if err := h.m.Admit(context.Background(), podWith("u2", ctr("a", map[string]int64{res: 1})), nil); err != nil {
				t.Fatalf("device not freed: %v", err)
			}
		})
	}
}

// A plugin that hangs in Allocate: bounded by the caller's context (as
// kubelet's admission context bounds it); the device is freed; no
// goroutine is left (TestMain).
func TestAllocateHangs(t *testing.T) {
	h := newHarness(t, shortDir(t))
	p := &fakePlugin{resource: res, initial: devices(pluginapi.Healthy, "d0")}
	entered := make(chan struct{}, 1)
	p.allocate = func(ctx context.Context, _ *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	p.serve(t, h.dir, "dongle.sock")
	if err := p.register(context.Background(), h.m, pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.m.Admit(ctx, podWith("u1", ctr("a", map[string]int64{res: 1})), nil) }()
	<-entered
	cancel()
	err := <-errc
	if status.Code(errors.Unwrap(errors.Unwrap(err))) != codes.Canceled && !strings.Contains(err.Error(), "Canceled") {
		t.Errorf("Admit: %v", err)
	}
	p.mu.Lock()
	p.allocate = nil
	p.mu.Unlock()
	if err := h.m.Admit(context.Background(), podWith("u2", ctr("a", map[string]int64{res: 1})), nil); err != nil {
		t.Fatalf("device not freed: %v", err)
	}
}

// PreStartContainer when the plugin asks, at DeviceOptions (kubelet calls
// it from GetDeviceRunContainerOptions, at container start), bounded by
// its timeout.
func TestPreStartContainer(t *testing.T) {
	h := newHarness(t, shortDir(t), WithPreStartContainerTimeout(50*time.Millisecond))
	p := &fakePlugin{resource: res, initial: devices(pluginapi.Healthy, "d0", "d1"), opts: &pluginapi.DevicePluginOptions{PreStartRequired: true}}
	p.serve(t, h.dir, "dongle.sock")
	if err := p.register(context.Background(), h.m, pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 2)
	pod := podWith("u1", ctr("a", map[string]int64{res: 2}))
	ctx := context.Background()
	if err := h.m.Admit(ctx, pod, nil); err != nil {
		t.Fatal(err)
	}
	if n := p.callsOf("PreStartContainer"); n != 0 {
		t.Errorf("PreStartContainer at admission: %d calls", n)
	}
	if _, err := h.m.DeviceOptions(ctx, pod, &pod.Spec.Containers[0]); err != nil {
		t.Fatal(err)
	}
	if got := p.preStarts; len(got) != 1 || !reflect.DeepEqual(got[0], []string{"d0", "d1"}) {
		t.Errorf("PreStartContainer requests %v", got)
	}
	// It hangs: the timeout ends it.
	p.mu.Lock()
	p.preStart = func(ctx context.Context, _ *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	p.mu.Unlock()
	_, err := h.m.DeviceOptions(ctx, pod, &pod.Spec.Containers[0])
	if err == nil || !strings.Contains(err.Error(), "device plugin PreStartContainer rpc failed with err") || !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Errorf("DeviceOptions with a hung PreStartContainer: %v", err)
	}
}

// DeviceOptions allocates a container that has no devices yet (its pod
// admitted before the plugin registered).
func TestDeviceOptionsReallocates(t *testing.T) {
	h := newHarness(t, shortDir(t))
	pod := podWith("u1", ctr("a", map[string]int64{res: 1}))
	if err := h.m.Admit(context.Background(), pod, nil); err != nil {
		t.Fatal(err) // not a device plugin resource yet
	}
	p := h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "d0"), &pluginapi.DevicePluginOptions{})
	opts, err := h.m.DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Devices) != 1 || p.callsOf("Allocate") != 1 {
		t.Errorf("options %+v, Allocate calls %d", opts, p.callsOf("Allocate"))
	}
}

// Merging across resources: the first resource (by name) wins a
// duplicate environment variable, device or mount path and annotation;
// CDI devices are de-duplicated.
func TestDeviceOptionsMerge(t *testing.T) {
	h := newHarness(t, shortDir(t))
	answer := func(host string) func(context.Context, *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
		return func(context.Context, *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
			return &pluginapi.AllocateResponse{ContainerResponses: []*pluginapi.ContainerAllocateResponse{{
				Envs:        map[string]string{"SHARED": host, "ONLY_" + strings.ToUpper(host): "1"},
				Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/shared", HostPath: "/dev/" + host, Permissions: "r"}},
				Mounts:      []*pluginapi.Mount{{ContainerPath: "/shared", HostPath: "/" + host, ReadOnly: true}},
				Annotations: map[string]string{"shared": host},
				CdiDevices:  []*pluginapi.CDIDevice{{Name: "vendor.com/class=shared"}, {Name: "vendor.com/class=" + host}},
			}}}, nil
		}
	}
	for _, name := range []string{"b", "a"} {
		p := &fakePlugin{resource: "example.com/" + name, initial: devices(pluginapi.Healthy, "d0")}
		p.allocate = answer(name)
		p.serve(t, h.dir, name+".sock")
		if err := p.register(context.Background(), h.m, pluginapi.Version); err != nil {
			t.Fatal(err)
		}
		h.wait(t, 2)
	}
	pod := podWith("u1", ctr("c", map[string]int64{"example.com/a": 1, "example.com/b": 1}))
	if err := h.m.Admit(context.Background(), pod, nil); err != nil {
		t.Fatal(err)
	}
	got, err := h.m.DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	want := criconfig.DeviceOptions{
		Env:         []criconfig.EnvVar{{Name: "ONLY_A", Value: "1"}, {Name: "SHARED", Value: "a"}, {Name: "ONLY_B", Value: "1"}},
		Devices:     []*runtimeapi.Device{{ContainerPath: "/dev/shared", HostPath: "/dev/a", Permissions: "r"}},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/shared", HostPath: "/a", Readonly: true}},
		Annotations: map[string]string{"shared": "a"},
		CDIDevices:  []string{"vendor.com/class=shared", "vendor.com/class=a", "vendor.com/class=b"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DeviceOptions\n%+v\nwant\n%+v", got, want)
	}
}

func TestUpdatePluginResources(t *testing.T) {
	h := newHarness(t, shortDir(t))
	h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "d0", "d1"), &pluginapi.DevicePluginOptions{})
	pod := podWith("u1", ctr("a", map[string]int64{res: 2}))
	if err := h.m.Admit(context.Background(), pod, nil); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{res: resource.MustParse("1")}}}
	got := h.m.UpdatePluginResources(pod, node)
	if q := got.Status.Allocatable[res]; q.Value() != 2 {
		t.Errorf("allocatable %v, want 2", q.String())
	}
	if q := node.Status.Allocatable[res]; q.Value() != 1 {
		t.Error("node changed in place")
	}
	other := podWith("u9")
	if h.m.UpdatePluginResources(other, node) != node {
		t.Error("a pod without devices changed the node")
	}
}

func TestValidateCDIName(t *testing.T) {
	for name, ok := range map[string]bool{
		"vendor.com/class=name": true, "nvidia.com/gpu=0": true, "a/b=c": true, "vendor.com/class=na:me.1": true,
		"": false, "/dev/x": false, "vendor.com/class": false, "class=name": false, "vendor.com/=x": false,
		"vendor.com/class=": false, "1vendor/class=x": false, "vendor-/class=x": false, "vendor/class=-x": false,
		"vendor/cl ass=x": false, "vendor/class=x y": false, "vendor/cl/ass=x": false, "vendör/class=x": false,
	} {
		if err := ValidateCDIName(name); (err == nil) != ok {
			t.Errorf("ValidateCDIName(%q) = %v", name, err)
		}
	}
}
