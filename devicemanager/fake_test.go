package devicemanager

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"
)

// waitLimit bounds a wait for an event that must come; reaching it fails
// the test (it is not a synchronisation).
const waitLimit = 20 * time.Second

// fakePlugin is a device plugin served over a real unix socket.
type fakePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	resource, socket string
	endpoint         string // registered endpoint (default: the socket's name)
	opts             *pluginapi.DevicePluginOptions
	server           *grpc.Server
	updates          chan []*pluginapi.Device
	initial          []*pluginapi.Device

	mu        sync.Mutex
	allocate  func(ctx context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error)
	preferred func(ctx context.Context, r *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error)
	options   func(ctx context.Context) error
	preStart  func(ctx context.Context, r *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error)
	calls     []string
	allocated [][]string
	preStarts [][]string
}

func (p *fakePlugin) record(call string) {
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
}

func (p *fakePlugin) GetDevicePluginOptions(ctx context.Context, _ *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	p.record("GetDevicePluginOptions")
	if p.options != nil {
		if err := p.options(ctx); err != nil {
			return nil, err
		}
	}
	o := &pluginapi.DevicePluginOptions{}
	if p.opts != nil {
		o.PreStartRequired, o.GetPreferredAllocationAvailable = p.opts.PreStartRequired, p.opts.GetPreferredAllocationAvailable
	}
	return o, nil
}

func (p *fakePlugin) ListAndWatch(_ *pluginapi.Empty, s pluginapi.DevicePlugin_ListAndWatchServer) error {
	p.record("ListAndWatch")
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: p.initial}); err != nil {
		return err
	}
	for {
		select {
		case <-s.Context().Done():
			return nil
		case d, ok := <-p.updates:
			if !ok {
				return nil
			}
			if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: d}); err != nil {
				return err
			}
		}
	}
}

func (p *fakePlugin) Allocate(ctx context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	p.record("Allocate")
	p.mu.Lock()
	p.allocated = append(p.allocated, r.ContainerRequests[0].DevicesIds)
	f := p.allocate
	p.mu.Unlock()
	if f != nil {
		return f(ctx, r)
	}
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range r.ContainerRequests {
		c := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{}}
		for _, id := range cr.DevicesIds {
			c.Envs["DEV_"+id] = id
			c.Devices = append(c.Devices, &pluginapi.DeviceSpec{ContainerPath: "/dev/" + id, HostPath: "/dev/host-" + id, Permissions: "rw"})
		}
		resp.ContainerResponses = append(resp.ContainerResponses, c)
	}
	return resp, nil
}

func (p *fakePlugin) GetPreferredAllocation(ctx context.Context, r *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	p.record("GetPreferredAllocation")
	p.mu.Lock()
	f := p.preferred
	p.mu.Unlock()
	if f != nil {
		return f(ctx, r)
	}
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *fakePlugin) PreStartContainer(ctx context.Context, r *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	p.record("PreStartContainer")
	p.mu.Lock()
	p.preStarts = append(p.preStarts, r.DevicesIds)
	f := p.preStart
	p.mu.Unlock()
	if f != nil {
		return f(ctx, r)
	}
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (p *fakePlugin) callsOf(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		if c == name {
			n++
		}
	}
	return n
}

// serve starts p on <dir>/<name>.
func (p *fakePlugin) serve(t testing.TB, dir, name string) {
	t.Helper()
	p.socket = filepath.Join(dir, name)
	if p.updates == nil {
		p.updates = make(chan []*pluginapi.Device, 16)
	}
	ln, err := net.Listen("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	p.server = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(p.server, p)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.server.Serve(ln) }()
	t.Cleanup(func() { p.server.Stop(); <-done })
}

// register calls the Manager's Registration service as a plugin does.
func (p *fakePlugin) register(ctx context.Context, m *Manager, version string) error {
	conn, err := grpc.NewClient("unix://"+m.SocketPath(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ep := p.endpoint
	if ep == "" {
		ep = filepath.Base(p.socket)
	}
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: version, Endpoint: ep, ResourceName: p.resource, Options: p.opts,
	})
	return err
}

// harness is a started Manager on a fake clock whose changes are counted.
type harness struct {
	m      *Manager
	dir    string
	clock  *clocktesting.FakeClock
	events chan string
}

func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newHarness(t testing.TB, dir string, opts ...Option) *harness {
	t.Helper()
	h := &harness{dir: dir, clock: clocktesting.NewFakeClock(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)), events: make(chan string, 1024)}
	opts = append([]Option{WithDir(dir), WithClock(h.clock), WithOnChange(func(r string) { h.events <- r })}, opts...)
	m, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.m = m
	t.Cleanup(m.Stop)
	return h
}

// wait waits for n change events.
func (h *harness) wait(t testing.TB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-h.events:
		case <-time.After(waitLimit):
			t.Fatalf("waited for change %d of %d", i+1, n)
		}
	}
}

// plugin serves and registers a plugin of resource with devices, and
// waits for its registration and first device list.
func (h *harness) plugin(t testing.TB, resource, name string, devs []*pluginapi.Device, opts *pluginapi.DevicePluginOptions) *fakePlugin {
	t.Helper()
	p := &fakePlugin{resource: resource, initial: devs, opts: opts}
	p.serve(t, h.dir, name)
	if err := p.register(context.Background(), h.m, pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 2) // connected, devices
	return p
}

func devices(health string, ids ...string) []*pluginapi.Device {
	var out []*pluginapi.Device
	for _, id := range ids {
		out = append(out, &pluginapi.Device{ID: id, Health: health})
	}
	return out
}

func podWith(uid string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)}, Spec: corev1.PodSpec{Containers: containers}}
}

func ctr(name string, limits map[string]int64) corev1.Container {
	c := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}}}
	for k, v := range limits {
		c.Resources.Limits[corev1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	return c
}
