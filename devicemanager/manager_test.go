package devicemanager

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const res = "example.com/dongle"

func counts(t *testing.T, rl corev1.ResourceList) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for k, v := range rl {
		out[string(k)] = v.Value()
	}
	return out
}

func checkCapacity(t *testing.T, m *Manager, wantCap, wantAlloc map[string]int64, wantDeleted []string) {
	t.Helper()
	c, a, d := m.Capacity()
	if got := counts(t, c); !reflect.DeepEqual(got, wantCap) {
		t.Errorf("capacity = %v, want %v", got, wantCap)
	}
	if got := counts(t, a); !reflect.DeepEqual(got, wantAlloc) {
		t.Errorf("allocatable = %v, want %v", got, wantAlloc)
	}
	if len(d) == 0 {
		d = nil
	}
	if !reflect.DeepEqual(d, wantDeleted) {
		t.Errorf("deleted = %v, want %v", d, wantDeleted)
	}
}

func TestRegisterAndCapacity(t *testing.T) {
	h := newHarness(t, shortDir(t))
	p := h.plugin(t, res, "dongle.sock", append(devices(pluginapi.Healthy, "a", "b"), devices(pluginapi.Unhealthy, "c")...), &pluginapi.DevicePluginOptions{})
	checkCapacity(t, h.m, map[string]int64{res: 3}, map[string]int64{res: 2}, nil)

	// The plugin reports a device unhealthy, then adds one.
	p.updates <- append(devices(pluginapi.Healthy, "a"), devices(pluginapi.Unhealthy, "b", "c")...)
	h.wait(t, 1)
	checkCapacity(t, h.m, map[string]int64{res: 3}, map[string]int64{res: 1}, nil)
	p.updates <- devices(pluginapi.Healthy, "a", "b", "c", "d")
	h.wait(t, 1)
	checkCapacity(t, h.m, map[string]int64{res: 4}, map[string]int64{res: 4}, nil)
	if n := p.callsOf("GetDevicePluginOptions"); n != 1 {
		t.Errorf("GetDevicePluginOptions called %d times, want 1", n)
	}
}

func TestRegisterRefused(t *testing.T) {
	h := newHarness(t, shortDir(t), WithDialTimeout(100*time.Millisecond))
	tests := []struct {
		name, version, resource, endpoint, want string
	}{
		{"old version", "v1alpha", res, "x.sock", `requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]`},
		{"not extended", pluginapi.Version, "cpu", "x.sock", `the ResourceName "cpu" is invalid`},
		{"kubernetes.io", pluginapi.Version, "kubernetes.io/gpu", "x.sock", `the ResourceName "kubernetes.io/gpu" is invalid`},
		{"escaping endpoint", pluginapi.Version, res, "../../x.sock", `is not a file name`},
		{"own socket", pluginapi.Version, res, SocketName, `is not a file name`},
		{"no socket", pluginapi.Version, res, "absent.sock", "failed to dial device plugin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePlugin{resource: tc.resource, endpoint: tc.endpoint}
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			err := p.register(ctx, h.m, tc.version)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Register: %v, want %q", err, tc.want)
			}
		})
	}
	checkCapacity(t, h.m, map[string]int64{}, map[string]int64{}, nil)
}

// A plugin that dies mid-ListAndWatch: its devices stay in capacity,
// unhealthy, for the grace period, then the resource is deleted.
func TestPluginDiesGracePeriod(t *testing.T) {
	h := newHarness(t, shortDir(t))
	p := h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "a", "b"), &pluginapi.DevicePluginOptions{})
	p.server.Stop()
	h.wait(t, 1) // disconnected
	checkCapacity(t, h.m, map[string]int64{res: 2}, map[string]int64{res: 0}, nil)

	h.clock.Step(EndpointStopGracePeriod)
	checkCapacity(t, h.m, map[string]int64{res: 2}, map[string]int64{res: 0}, nil)
	h.clock.Step(time.Second)
	checkCapacity(t, h.m, map[string]int64{}, map[string]int64{}, []string{res})
	checkCapacity(t, h.m, map[string]int64{}, map[string]int64{}, nil)

	// A pod asking for it now: the resource is still known (devices
	// were never allocated, so it is not); it is no longer a device
	// plugin resource and the manager leaves it to the predicates.
	if err := h.m.Admit(context.Background(), podWith("u1", ctr("c", map[string]int64{res: 1})), nil); err != nil {
		t.Fatalf("Admit: %v", err)
	}
}

// Re-registration (a new socket) replaces the endpoint: capacity and
// allocations follow the new plugin.
func TestReRegistration(t *testing.T) {
	h := newHarness(t, shortDir(t))
	old := h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "a", "b"), &pluginapi.DevicePluginOptions{})
	old.server.Stop()
	h.wait(t, 1)
	h.clock.Step(time.Minute)
	p := h.plugin(t, res, "dongle-2.sock", devices(pluginapi.Healthy, "a", "b", "c"), &pluginapi.DevicePluginOptions{})
	h.clock.Step(EndpointStopGracePeriod)
	checkCapacity(t, h.m, map[string]int64{res: 3}, map[string]int64{res: 3}, nil)
	if err := h.m.Admit(context.Background(), podWith("u1", ctr("c", map[string]int64{res: 3})), nil); err != nil {
		t.Fatal(err)
	}
	if p.callsOf("Allocate") != 1 || old.callsOf("Allocate") != 0 {
		t.Errorf("Allocate calls: new %d, old %d", p.callsOf("Allocate"), old.callsOf("Allocate"))
	}
}

// Two plugins of one resource on two sockets: the one still connected
// serves when the other goes.
func TestSecondEndpointTakesOver(t *testing.T) {
	h := newHarness(t, shortDir(t))
	a := h.plugin(t, res, "a.sock", devices(pluginapi.Healthy, "a"), &pluginapi.DevicePluginOptions{})
	b := h.plugin(t, res, "b.sock", devices(pluginapi.Healthy, "b"), &pluginapi.DevicePluginOptions{})
	b.server.Stop()
	h.wait(t, 1)
	h.clock.Step(EndpointStopGracePeriod + time.Second)
	// b's list was the last one: its device "b" is healthy; a serves.
	checkCapacity(t, h.m, map[string]int64{res: 1}, map[string]int64{res: 1}, nil)
	if err := h.m.Admit(context.Background(), podWith("u1", ctr("c", map[string]int64{res: 1})), nil); err != nil {
		t.Fatal(err)
	}
	if a.callsOf("Allocate") != 1 {
		t.Errorf("a's Allocate calls = %d", a.callsOf("Allocate"))
	}
}

// Stop disconnects every plugin: resources turn unhealthy; the socket is
// gone.
func TestStop(t *testing.T) {
	h := newHarness(t, shortDir(t))
	h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "a"), &pluginapi.DevicePluginOptions{})
	h.m.Stop()
	checkCapacity(t, h.m, map[string]int64{res: 1}, map[string]int64{res: 0}, nil)
	if _, err := os.Stat(h.m.SocketPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Stop: %v", err)
	}
}

// Start removes stale sockets but keeps the checkpoint and other files.
func TestStartCleansSockets(t *testing.T) {
	dir := shortDir(t)
	ln, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if err := os.WriteFile(filepath.Join(dir, "note"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	newHarness(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "stale.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale socket: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "note")); err != nil {
		t.Errorf("regular file removed: %v", err)
	}
}

func TestHostileDeviceIDs(t *testing.T) {
	h := newHarness(t, shortDir(t))
	ids := []string{"ok", "", "bad\nline", strings.Repeat("x", MaxDeviceIDLength+1), "esc\x1b[31m", "fine-2"}
	h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, ids...), &pluginapi.DevicePluginOptions{})
	checkCapacity(t, h.m, map[string]int64{res: 2}, map[string]int64{res: 2}, nil)
}

func TestNewValidates(t *testing.T) {
	for _, dir := range []string{"", "relative/dir", "/" + strings.Repeat("d", 120)} {
		if _, err := New(WithDir(dir)); err == nil {
			t.Errorf("New(%q) accepted", dir)
		}
	}
}

func TestIsExtendedResourceName(t *testing.T) {
	for name, want := range map[string]bool{
		"example.com/dongle": true, "nvidia.com/gpu": true, "cpu": false, "kubernetes.io/x": false,
		"requests.example.com/x": false, "example.com/": false, "example.com/a b": false,
	} {
		if got := IsExtendedResourceName(name); got != want {
			t.Errorf("IsExtendedResourceName(%q) = %v", name, got)
		}
	}
}

// The plugin watcher's path (pluginmanager's DevicePlugin handler):
// validate, register, deregister.
func TestWatcherHandler(t *testing.T) {
	h := newHarness(t, shortDir(t))
	w := h.m.WatcherHandler()
	if err := w.ValidatePlugin(res, "/x.sock", []string{"v1alpha"}); err == nil || !errors.Is(err, ErrRegistration) {
		t.Errorf("old version: %v", err)
	}
	if err := w.ValidatePlugin("cpu", "/x.sock", []string{pluginapi.Version}); err == nil {
		t.Error("cpu accepted")
	}
	p := &fakePlugin{resource: res, initial: devices(pluginapi.Healthy, "a")}
	p.serve(t, h.dir, "w.sock")
	if err := w.ValidatePlugin(res, p.socket, []string{pluginapi.Version}); err != nil {
		t.Fatal(err)
	}
	if err := w.RegisterPlugin(context.Background(), res, p.socket, []string{pluginapi.Version}, 0); err != nil {
		t.Fatal(err)
	}
	h.wait(t, 2)
	checkCapacity(t, h.m, map[string]int64{res: 1}, map[string]int64{res: 1}, nil)
	w.DeRegisterPlugin(res, p.socket)
	h.wait(t, 1)
	checkCapacity(t, h.m, map[string]int64{res: 1}, map[string]int64{res: 0}, nil)
}

// A plugin that hangs in GetDevicePluginOptions: its Register call's
// context ends the wait (kubelet asks under the Register call's
// context); nothing is registered and no goroutine is left (TestMain).
func TestPluginHangsInOptions(t *testing.T) {
	h := newHarness(t, shortDir(t))
	entered := make(chan struct{}, 1)
	p := &fakePlugin{resource: res, options: func(ctx context.Context) error {
		entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}}
	p.serve(t, h.dir, "hang.sock")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.register(ctx, h.m, pluginapi.Version) }()
	<-entered
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("Register of a hung plugin succeeded")
	}
	checkCapacity(t, h.m, map[string]int64{}, map[string]int64{}, nil)
}
