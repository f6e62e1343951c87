package diff

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	kubeletpm "k8s.io/kubernetes/pkg/kubelet/pluginmanager"

	"github.com/podstart/podstart/pluginmanager"
)

// TestPluginManager runs kubelet's plugin manager and podstart's on the
// same scripts of registration sockets (real unix sockets served by a
// fake pluginregistration.v1 plugin) and compares what each plugin and
// handler saw, in order: the handler's calls with their arguments, and the
// NotifyRegistrationStatus each plugin received (kubelet's messages).
func TestPluginManager(t *testing.T) {
	for _, sc := range pmScenarios {
		t.Run(sc.name, func(t *testing.T) {
			kubelet := runPMScenario(t, sc, startKubeletPM)
			podstart := runPMScenario(t, sc, startPodstartPM)
			if d := cmp.Diff(kubelet, podstart); d != "" {
				t.Errorf("kubelet (-) and podstart (+) differ:\n%s", d)
			}
		})
	}
}

type pmScenario struct {
	name string
	// before makes the sockets there when the manager starts (found by its
	// walk); then makes what the script does while it runs. Each returns the
	// number of events to wait for.
	before, then func(w *pmWorld) int
}

var pmScenarios = []pmScenario{
	{name: "register", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.CSIPlugin, "csi.example.com", "", "1.0.0")
		return 3
	}},
	{name: "endpoint", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.DRAPlugin, "dra.example.com", "/var/lib/kubelet/plugins/dra.example.com/dra.sock", "v1.DRAPlugin", "v1beta1.DRAPlugin")
		return 3
	}},
	{name: "unknowntype", before: func(w *pmWorld) int {
		w.plugin("a.sock", "GPUPlugin", "gpu.example.com", "", "v1")
		return 1
	}},
	{name: "validatefails", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.CSIPlugin, "refuse-validate", "", "0.3.0")
		return 2
	}},
	{name: "registerfails", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.CSIPlugin, "refuse-register", "", "1.0.0")
		return 3
	}},
	{name: "notifyfails", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.CSIPlugin, "fail-notify", "", "1.0.0")
		return 4
	}},
	{name: "replace", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.CSIPlugin, "csi.example.com", "", "1.0.0")
		return 3
	}, then: func(w *pmWorld) int {
		w.stop("a.sock")
		w.plugin("a.sock", registerapi.CSIPlugin, "csi.example.com", "", "1.1.0")
		return 4
	}},
	{name: "remove", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.DevicePlugin, "example.com/gpu", "", "v1beta1")
		return 3
	}, then: func(w *pmWorld) int {
		w.stop("a.sock")
		return 1
	}},
	{name: "subdir", before: func(w *pmWorld) int {
		w.plugin("a.sock", registerapi.CSIPlugin, "first", "", "1.0.0")
		return 3
	}, then: func(w *pmWorld) int {
		if err := os.MkdirAll(filepath.Join(w.dir, "d", "e"), 0o750); err != nil {
			w.t.Fatal(err)
		}
		w.plugin("d/e/b.sock", registerapi.CSIPlugin, "second", "", "1.0.0")
		return 3
	}},
	{name: "ignored", before: func(w *pmWorld) int {
		w.notSockets("1")
		w.plugin("a.sock", registerapi.CSIPlugin, "first", "", "1.0.0")
		return 3
	}, then: func(w *pmWorld) int {
		w.notSockets("2")
		w.plugin("b.sock", registerapi.CSIPlugin, "second", "", "1.0.0")
		return 3
	}},
}

// pmWorld is one run of a scenario: a registration directory, its plugins
// and the events they and the handlers saw.
type pmWorld struct {
	t       *testing.T
	dir     string
	events  chan string
	servers map[string]*pmPlugin
}

func (w *pmWorld) record(format string, args ...any) {
	w.events <- strings.ReplaceAll(fmt.Sprintf(format, args...), w.dir, "DIR")
}

// notSockets makes a regular file, a FIFO and a dot-file socket.
func (w *pmWorld) notSockets(suffix string) {
	if err := os.WriteFile(filepath.Join(w.dir, "file"+suffix+".sock"), []byte("x"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(w.dir, "fifo"+suffix+".sock"), 0o600); err != nil {
		w.t.Fatal(err)
	}
	w.plugin(".hidden"+suffix+".sock", registerapi.CSIPlugin, "hidden", "", "1.0.0")
}

// pmPlugin serves Registration; names script its handler's answers
// ("refuse-validate", "refuse-register") and its own ("fail-notify").
type pmPlugin struct {
	registerapi.UnimplementedRegistrationServer
	w    *pmWorld
	sock string
	info *registerapi.PluginInfo
	srv  *grpc.Server
}

func (p *pmPlugin) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return p.info, nil
}

func (p *pmPlugin) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.w.record("status %s registered=%v error=%q", p.sock, s.PluginRegistered, s.Error)
	if p.info.Name == "fail-notify" {
		return nil, errors.New("plugin going away")
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (w *pmWorld) plugin(sock, typ, name, endpoint string, versions ...string) {
	l, err := net.Listen("unix", filepath.Join(w.dir, sock))
	if err != nil {
		w.t.Fatal(err)
	}
	p := &pmPlugin{w: w, sock: sock, srv: grpc.NewServer(),
		info: &registerapi.PluginInfo{Type: typ, Name: name, Endpoint: endpoint, SupportedVersions: versions}}
	registerapi.RegisterRegistrationServer(p.srv, p)
	go func() { _ = p.srv.Serve(l) }()
	w.servers[sock] = p
	w.t.Cleanup(p.srv.Stop)
}

// stop ends a plugin; its socket file is removed.
func (w *pmWorld) stop(sock string) { w.servers[sock].srv.Stop() }

// pmHandler answers for every type; it records its calls.
type pmHandler struct{ w *pmWorld }

func (h pmHandler) validate(name, endpoint string, versions []string) error {
	h.w.record("validate %s %s %v", name, endpoint, versions)
	if name == "refuse-validate" {
		return fmt.Errorf("none of the versions specified %v are supported", versions)
	}
	return nil
}

func (h pmHandler) register(name, endpoint string, versions []string) error {
	h.w.record("register %s %s %v", name, endpoint, versions)
	if name == "refuse-register" {
		return errors.New("error initializing CSI driver: no node ID")
	}
	return nil
}

func (h pmHandler) deregister(name, endpoint string) {
	h.w.record("deregister %s %s", name, endpoint)
}

// podstart's Handler method set.
type podstartHandler struct{ pmHandler }

func (h podstartHandler) ValidatePlugin(name, endpoint string, versions []string) error {
	return h.validate(name, endpoint, versions)
}
func (h podstartHandler) RegisterPlugin(_ context.Context, name, endpoint string, versions []string, _ time.Duration) error {
	return h.register(name, endpoint, versions)
}
func (h podstartHandler) DeRegisterPlugin(name, endpoint string) { h.deregister(name, endpoint) }

// kubelet's cache.PluginHandler.
type kubeletHandler struct{ pmHandler }

func (h kubeletHandler) ValidatePlugin(_ context.Context, name, endpoint string, versions []string) error {
	return h.validate(name, endpoint, versions)
}
func (h kubeletHandler) RegisterPlugin(_ context.Context, name, endpoint string, versions []string, _ *time.Duration) error {
	return h.register(name, endpoint, versions)
}
func (h kubeletHandler) DeRegisterPlugin(_ context.Context, name, endpoint string) {
	h.deregister(name, endpoint)
}

var pmTypes = []string{registerapi.CSIPlugin, registerapi.DRAPlugin, registerapi.DevicePlugin}

// A starter runs one manager on dir until ctx ends; it returns when the
// manager has stopped (as far as the manager tells).
type pmStarter func(ctx context.Context, t *testing.T, w *pmWorld) (wait func())

func startKubeletPM(ctx context.Context, _ *testing.T, w *pmWorld) func() {
	pm := kubeletpm.NewPluginManager(w.dir, nil)
	for _, typ := range pmTypes {
		pm.AddHandler(typ, kubeletHandler{pmHandler{w}})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pm.Run(ctx, nil, ctx.Done())
	}()
	return func() { <-done }
}

func startPodstartPM(ctx context.Context, t *testing.T, w *pmWorld) func() {
	m, err := pluginmanager.New(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range pmTypes {
		m.AddHandler(typ, podstartHandler{pmHandler{w}})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("podstart Run: %v", err)
		}
	}()
	return func() { <-done }
}

// runPMScenario runs sc against one manager and returns the events seen.
func runPMScenario(t *testing.T, sc pmScenario, start pmStarter) []string {
	t.Helper()
	w := &pmWorld{t: t, dir: filepath.Join(t.TempDir(), "plugins_registry"), events: make(chan string, 100), servers: map[string]*pmPlugin{}}
	if err := os.MkdirAll(w.dir, 0o750); err != nil {
		t.Fatal(err)
	}
	var got []string
	collect := func(n int) {
		t.Helper()
		for range n {
			select {
			case e := <-w.events:
				got = append(got, e)
			case <-time.After(30 * time.Second):
				t.Fatalf("after %q: no more events", got)
			}
		}
	}
	n := sc.before(w)
	ctx, cancel := context.WithCancel(context.Background())
	wait := start(ctx, t, w)
	defer func() { cancel(); wait() }()
	collect(n)
	if sc.then != nil {
		collect(sc.then(w))
	}
	return got
}
