package pluginmanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func TestNewRefusesBadDirs(t *testing.T) {
	for _, dir := range []string{"", "plugins_registry", "./plugins_registry", "/var/lib/kubelet/../kubelet/plugins_registry", "/var/lib/kubelet/plugins_registry/"} {
		if _, err := New(dir); !errors.Is(err, ErrInvalidDir) {
			t.Errorf("New(%q): %v, want ErrInvalidDir", dir, err)
		}
	}
	if _, err := New(DefaultDir); err != nil {
		t.Errorf("New(%q): %v", DefaultDir, err)
	}
}

func TestRunRefusesBadDirs(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o750); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		want      error
	}{
		{"regular file", file, ErrInvalidDir},
		{"symlink", link, ErrInvalidDir},
		{"beneath a file", filepath.Join(file, DirName), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			err = m.Run(context.Background())
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Run: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRunCreatesDirWithKubeletMode(t *testing.T) {
	e := newEnv(t)
	h := newHandler()
	e.m.AddHandler(registerapi.CSIPlugin, h)
	e.run()
	// A plugin registered proves the directory exists and is watched.
	p := newPlugin(e.path("a.sock"), registerapi.CSIPlugin, "a").start(t)
	e.waitRegistered(p.path)
	fi, err := os.Stat(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != DirMode {
		t.Errorf("mode %v, want %v", got, os.FileMode(DirMode))
	}
	if err := e.m.Run(context.Background()); !errors.Is(err, ErrAlreadyRun) {
		t.Errorf("second Run: %v, want ErrAlreadyRun", err)
	}
}

func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		name     string
		typ      string
		sub      string // subdirectory of the socket
		endpoint string // GetInfo's endpoint
		before   bool   // socket made before Run (the initial walk)
	}{
		{name: "csi", typ: registerapi.CSIPlugin},
		{name: "dra", typ: registerapi.DRAPlugin, endpoint: "/var/lib/kubelet/plugins/dra.example.com/dra.sock"},
		{name: "device", typ: registerapi.DevicePlugin},
		{name: "walk", typ: registerapi.CSIPlugin, before: true},
		{name: "subdir", typ: registerapi.CSIPlugin, sub: "a/b"},
		{name: "walksub", typ: registerapi.DRAPlugin, sub: "a", before: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, WithPluginClientTimeout(7*time.Second))
			handlers := map[string]*fakeHandler{}
			for _, typ := range []string{registerapi.CSIPlugin, registerapi.DRAPlugin, registerapi.DevicePlugin} {
				handlers[typ] = newHandler()
				e.m.AddHandler(typ, handlers[typ])
			}
			makeIt := func() *fakePlugin {
				if err := os.MkdirAll(e.path(tc.sub), 0o750); err != nil {
					t.Fatal(err)
				}
				p := newPlugin(e.path(tc.sub, "p.sock"), tc.typ, "example.com", "1.0.0", "v1beta1")
				p.info.Endpoint = tc.endpoint
				return p.start(t)
			}
			var p *fakePlugin
			if tc.before {
				p = makeIt()
			}
			e.run()
			if !tc.before {
				p = makeIt()
			}
			endpoint := tc.endpoint
			if endpoint == "" {
				endpoint = p.path
			}
			h := handlers[tc.typ]
			h.expect(t,
				call{"validate", "example.com", endpoint, "[1.0.0 v1beta1]"},
				call{"register", "example.com", endpoint, "[1.0.0 v1beta1]"})
			if got := <-h.timeouts; got != 7*time.Second {
				t.Errorf("RegisterPlugin timeout %v, want 7s", got)
			}
			if s := p.status(t); !s.PluginRegistered || s.Error != "" {
				t.Errorf("status %+v, want registered", s)
			}
			e.waitRegistered(p.path)
			want := Plugin{Type: tc.typ, Name: "example.com", Endpoint: endpoint, Versions: []string{"1.0.0", "v1beta1"}, SocketPath: p.path, Registered: e.clock.Now()}
			got := e.m.Plugins()
			if len(got) != 1 || got[0].Type != want.Type || got[0].Name != want.Name || got[0].Endpoint != want.Endpoint ||
				got[0].SocketPath != want.SocketPath || !got[0].Registered.Equal(want.Registered) || len(got[0].Versions) != 2 {
				t.Errorf("Plugins: %+v, want [%+v]", got, want)
			}
			for _, other := range handlers {
				if other != h {
					other.none(t)
				}
			}
		})
	}
}

// A socket replaced at its path is deregistered, then registered again.
func TestReregisterReplacedSocket(t *testing.T) {
	e := newEnv(t)
	h := newHandler()
	e.m.AddHandler(registerapi.CSIPlugin, h)
	e.run()
	path := e.path("csi.sock")
	old := newPlugin(path, registerapi.CSIPlugin, "csi.example.com", "1.0.0").start(t)
	h.expect(t, call{"validate", "csi.example.com", path, "[1.0.0]"}, call{"register", "csi.example.com", path, "[1.0.0]"})
	e.waitRegistered(path)

	old.stop(true)
	p := newPlugin(path, registerapi.CSIPlugin, "csi.example.com", "1.1.0").start(t)
	h.expect(t,
		call{"deregister", "csi.example.com", path, ""},
		call{"validate", "csi.example.com", path, "[1.1.0]"},
		call{"register", "csi.example.com", path, "[1.1.0]"})
	if s := p.status(t); !s.PluginRegistered {
		t.Errorf("status %+v, want registered", s)
	}
	e.waitRegistered(path)
	if got := e.m.Plugins(); len(got) != 1 || got[0].Versions[0] != "1.1.0" {
		t.Errorf("Plugins: %+v", got)
	}
}

func TestDeregisterRemovedSocket(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sub    string
		remove func(e *env, p *fakePlugin) error
	}{
		{"exit", "", func(_ *env, p *fakePlugin) error { p.stop(true); return nil }},
		{"rm", "", func(_ *env, p *fakePlugin) error { return os.Remove(p.path) }},
		{"rename", "", func(e *env, p *fakePlugin) error { return os.Rename(p.path, e.path(".old.sock")) }},
		{"rmdir", "d/e", func(e *env, _ *fakePlugin) error { return os.RemoveAll(e.path("d")) }},
		{"mvdir", "d", func(e *env, _ *fakePlugin) error {
			return os.Rename(e.path("d"), filepath.Join(filepath.Dir(e.dir), "d"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHandler()
			e.m.AddHandler(registerapi.DRAPlugin, h)
			if err := os.MkdirAll(e.path(tc.sub), 0o750); err != nil {
				t.Fatal(err)
			}
			e.run()
			p := newPlugin(e.path(tc.sub, "dra.sock"), registerapi.DRAPlugin, "dra.example.com", "v1").start(t)
			h.expect(t, call{"validate", "dra.example.com", p.path, "[v1]"}, call{"register", "dra.example.com", p.path, "[v1]"})
			e.waitRegistered(p.path)
			if err := tc.remove(e, p); err != nil {
				t.Fatal(err)
			}
			h.expect(t, call{"deregister", "dra.example.com", p.path, ""})
			e.waitFor("no sockets", func() bool { return len(e.m.Sockets()) == 0 })
			if got := e.m.Plugins(); len(got) != 0 {
				t.Errorf("Plugins: %+v, want none", got)
			}
		})
	}
}

// A handler's refusal or failure is sent to the plugin with kubelet's
// message, and the plugin stays unregistered.
func TestHandlerErrors(t *testing.T) {
	refused := errors.New(`CSI driver "x" already registered with a newer version`)
	for _, tc := range []struct {
		name       string
		validate   func(string, string, []string) error
		register   func(context.Context, string) error
		notifyFail bool // the plugin fails NotifyRegistrationStatus
		calls      []string
		status     string // sent to the plugin
		err        string // Socket.Err; "" means the status
		classes    []error
	}{
		{
			name:     "validate",
			validate: func(string, string, []string) error { return refused },
			calls:    []string{"validate"},
			status:   "RegisterPlugin error -- plugin validation failed with err: " + refused.Error(),
			err:      "RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed",
			classes:  []error{ErrValidation, refused},
		},
		{
			name:     "validatepanic",
			validate: func(string, string, []string) error { panic("boom") },
			calls:    []string{"validate"},
			status:   `RegisterPlugin error -- plugin validation failed with err: recovered from panic "boom"`,
			err:      "RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed",
			classes:  []error{ErrValidation},
		},
		{
			name:     "register",
			register: func(context.Context, string) error { return refused },
			calls:    []string{"validate", "register"},
			status:   "RegisterPlugin error -- plugin registration failed with err: " + refused.Error(),
			classes:  []error{ErrRegistration, refused},
		},
		{
			name:     "registerpanic",
			register: func(context.Context, string) error { panic("boom") },
			calls:    []string{"validate", "register"},
			status:   `RegisterPlugin error -- plugin registration failed with err: recovered from panic "boom"`,
			classes:  []error{ErrRegistration},
		},
		{
			name:       "refusalnotsent",
			validate:   func(string, string, []string) error { return refused },
			notifyFail: true,
			calls:      []string{"validate"},
			status:     "RegisterPlugin error -- plugin validation failed with err: " + refused.Error(),
			err:        "RegisterPlugin error -- failed to send error at socket SOCK, err: RegisterPlugin error -- plugin validation failed with err: " + refused.Error() + ": rpc error: code = Unknown desc = plugin gone",
			classes:    []error{ErrValidation, ErrNotify, refused},
		},
		{
			name:       "registerednotsent",
			notifyFail: true,
			calls:      []string{"validate", "register", "deregister"},
			err:        "RegisterPlugin error -- failed to send registration status at socket SOCK, err: : rpc error: code = Unknown desc = plugin gone",
			classes:    []error{ErrNotify},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			h := newHandler()
			h.validate, h.register = tc.validate, tc.register
			e.m.AddHandler(registerapi.CSIPlugin, h)
			e.run()
			p := newPlugin(e.path("x.sock"), registerapi.CSIPlugin, "x", "1.0.0")
			if tc.notifyFail {
				p.notify = func(context.Context, *registerapi.RegistrationStatus) error { return errors.New("plugin gone") }
			}
			p.start(t)
			for _, m := range tc.calls {
				want := call{m, "x", p.path, "[1.0.0]"}
				if m == "deregister" {
					want.versions = ""
				}
				h.expect(t, want)
			}
			s := p.status(t)
			if tc.status == "" {
				if !s.PluginRegistered {
					t.Errorf("status %+v, want registered", s)
				}
			} else if s.PluginRegistered || s.Error != tc.status {
				t.Errorf("status %+v, want not registered with %q", s, tc.status)
			}
			err := e.waitFailed(p.path, tc.classes[0])
			want := tc.err
			if want == "" {
				want = tc.status
			}
			if want = replaceSock(want, p.path); err.Error() != want {
				t.Errorf("Socket.Err:\n got %q\nwant %q", err, want)
			}
			for _, c := range tc.classes {
				if !errors.Is(err, c) {
					t.Errorf("Socket.Err %v is not %v", err, c)
				}
			}
			if got := e.m.Plugins(); len(got) != 0 {
				t.Errorf("Plugins: %+v, want none", got)
			}
			h.none(t)
		})
	}
}

func replaceSock(s, path string) string {
	const sock = "SOCK"
	for i := 0; i+len(sock) <= len(s); i++ {
		if s[i:i+len(sock)] == sock {
			return s[:i] + path + s[i+len(sock):]
		}
	}
	return s
}

// Two sockets announcing one name both reach the handler, which judges
// (here as kubelet's CSI handler: the first keeps the name).
func TestDuplicateNames(t *testing.T) {
	e := newEnv(t)
	h := newHandler()
	taken := map[string]bool{}
	h.validate = func(name, _ string, _ []string) error {
		if taken[name] {
			return errors.New("RegisterPlugin for CSI driver " + `"` + name + `"` + " failed: already registered")
		}
		return nil
	}
	h.register = func(_ context.Context, name string) error { taken[name] = true; return nil }
	e.m.AddHandler(registerapi.CSIPlugin, h)
	e.run()
	first := newPlugin(e.path("a.sock"), registerapi.CSIPlugin, "same", "1.0.0").start(t)
	h.expect(t, call{"validate", "same", first.path, "[1.0.0]"}, call{"register", "same", first.path, "[1.0.0]"})
	e.waitRegistered(first.path)

	second := newPlugin(e.path("b.sock"), registerapi.CSIPlugin, "same", "1.0.0").start(t)
	h.expect(t, call{"validate", "same", second.path, "[1.0.0]"})
	want := `RegisterPlugin error -- plugin validation failed with err: RegisterPlugin for CSI driver "same" failed: already registered`
	if s := second.status(t); s.PluginRegistered || s.Error != want {
		t.Errorf("second's status %+v, want %q", s, want)
	}
	e.waitFailed(second.path, ErrValidation)
	if got := e.m.Plugins(); len(got) != 1 || got[0].SocketPath != first.path {
		t.Errorf("Plugins: %+v, want only %s", got, first.path)
	}
}

// A plugin of a type with no handler is refused with kubelet's message and
// retried after kubelet's back-off; a handler added meanwhile takes it.
func TestUnknownTypeRetriedWithBackoff(t *testing.T) {
	e := newEnv(t)
	e.run()
	p := newPlugin(e.path("gpu.sock"), "GPUPlugin", "gpu.example.com", "v1").start(t)
	want := "RegisterPlugin error -- no handler registered for plugin type: GPUPlugin at socket " + p.path
	backoff := initialBackoff
	for i := 0; ; i++ {
		if s := p.status(t); s.PluginRegistered || s.Error != want {
			t.Fatalf("attempt %d: status %+v, want %q", i, s, want)
		}
		err := e.waitFailed(p.path, ErrNoHandler)
		if err.Error() != want {
			t.Errorf("Socket.Err %q, want %q", err, want)
		}
		s, _ := e.socket(p.path)
		if got := s.RetryAfter.Sub(e.clock.Now()); got != backoff {
			t.Fatalf("attempt %d: retry after %v, want %v", i, got, backoff)
		}
		// Not before the back-off expires: a pass a millisecond short of it
		// starts nothing.
		for len(e.passes) > 0 {
			<-e.passes
		}
		e.clock.Step(backoff - time.Millisecond)
		e.m.wake()
		select {
		case <-e.passes:
		case <-time.After(hang):
			t.Fatal("no pass after a wake")
		}
		if s, _ := e.socket(p.path); s.Pending {
			t.Fatalf("attempt %d: retried before its back-off", i)
		}
		if i == 2 {
			break
		}
		e.clock.Step(time.Millisecond)
		backoff *= 2
	}
	// A handler added meanwhile serves the next attempt.
	h := newHandler()
	e.m.AddHandler("GPUPlugin", h)
	e.clock.Step(time.Millisecond)
	h.expect(t, call{"validate", "gpu.example.com", p.path, "[v1]"}, call{"register", "gpu.example.com", p.path, "[v1]"})
	if s := p.status(t); !s.PluginRegistered {
		t.Errorf("status %+v, want registered", s)
	}
	e.waitRegistered(p.path)
}

func TestBackoffIsCapped(t *testing.T) {
	op := &operation{}
	now := time.Now()
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, 2*time.Minute + 2*time.Second, 2*time.Minute + 2*time.Second}
	for i, w := range want {
		op.failed(errors.New("x"), now)
		if op.backoff != w || !op.retryAt().Equal(now.Add(w)) {
			t.Errorf("failure %d: back-off %v, want %v", i+1, op.backoff, w)
		}
	}
}

// A socket removed while its handler's RegisterPlugin runs is deregistered
// once RegisterPlugin returns (kubelet records the plugin first for this).
func TestRemovedDuringRegistration(t *testing.T) {
	e := newEnv(t)
	h := newHandler()
	inRegister, release := make(chan struct{}), make(chan struct{})
	h.register = func(context.Context, string) error {
		close(inRegister)
		<-release
		return nil
	}
	e.m.AddHandler(registerapi.CSIPlugin, h)
	e.run()
	p := newPlugin(e.path("x.sock"), registerapi.CSIPlugin, "x", "1.0.0").start(t)
	h.expect(t, call{"validate", "x", p.path, "[1.0.0]"}, call{"register", "x", p.path, "[1.0.0]"})
	<-inRegister
	if err := os.Remove(p.path); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the removal seen", func() bool {
		s, _ := e.socket(p.path)
		return s.Registered && s.Pending // only the actual state holds it
	})
	close(release)
	if s := p.status(t); !s.PluginRegistered {
		t.Errorf("status %+v, want registered", s)
	}
	h.expect(t, call{"deregister", "x", p.path, ""})
	e.waitFor("no sockets", func() bool { return len(e.m.Sockets()) == 0 })
}
