package pluginmanager

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Only unix sockets count: regular files, FIFOs, symlinks (to a live
// plugin's socket, to a directory holding one), dot-files and sockets in
// dot-directories are ignored, whether present at start or made later. A
// good socket made after them is registered alone.
func TestIgnoresWhatIsNotASocket(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, e *env, outside string)
	}{
		{"file", func(t *testing.T, e *env, _ string) {
			if err := os.WriteFile(e.path("f.sock"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", func(t *testing.T, e *env, _ string) {
			if err := syscall.Mkfifo(e.path("p.sock"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"link", func(t *testing.T, e *env, outside string) {
			if err := os.Symlink(filepath.Join(outside, "o.sock"), e.path("l.sock")); err != nil {
				t.Fatal(err)
			}
		}},
		{"dirlink", func(t *testing.T, e *env, outside string) {
			if err := os.Symlink(outside, e.path("d")); err != nil {
				t.Fatal(err)
			}
		}},
		{"dotfile", func(t *testing.T, e *env, _ string) {
			newPlugin(e.path(".hidden.sock"), registerapi.CSIPlugin, "hidden", "1.0.0").start(t)
		}},
		{"dotdir", func(t *testing.T, e *env, _ string) {
			if err := os.Mkdir(e.path(".d"), 0o750); err != nil {
				t.Fatal(err)
			}
			newPlugin(e.path(".d", "h.sock"), registerapi.CSIPlugin, "hidden", "1.0.0").start(t)
		}},
	} {
		for _, before := range []bool{true, false} {
			name := tc.name + "/running"
			if before {
				name = tc.name + "/walk"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				h := newHandler()
				e.m.AddHandler(registerapi.CSIPlugin, h)
				// A live plugin outside the directory, for the links.
				outside := t.TempDir()
				target := newPlugin(filepath.Join(outside, "o.sock"), registerapi.CSIPlugin, "outside", "1.0.0").start(t)
				if before {
					if err := os.MkdirAll(e.dir, DirMode); err != nil {
						t.Fatal(err)
					}
					tc.make(t, e, outside)
				}
				e.run()
				if !before {
					tc.make(t, e, outside)
				}
				good := newPlugin(e.path("good.sock"), registerapi.CSIPlugin, "good", "1.0.0").start(t)
				h.expect(t, call{"validate", "good", good.path, "[1.0.0]"}, call{"register", "good", good.path, "[1.0.0]"})
				e.waitRegistered(good.path)
				// Events are handled in order: the bad file's came first.
				if got := e.m.Sockets(); len(got) != 1 || got[0].Path != good.path {
					t.Errorf("Sockets: %+v, want only %s", got, good.path)
				}
				h.none(t)
				if len(target.getInfoCalls) != 0 {
					t.Error("the plugin behind the link was called")
				}
			})
		}
	}
}

// A socket that becomes something else is forgotten.
func TestSocketReplacedByFile(t *testing.T) {
	e := newEnv(t)
	h := newHandler()
	e.m.AddHandler(registerapi.CSIPlugin, h)
	e.run()
	p := newPlugin(e.path("x.sock"), registerapi.CSIPlugin, "x", "1.0.0").start(t)
	h.expect(t, call{"validate", "x", p.path, "[1.0.0]"}, call{"register", "x", p.path, "[1.0.0]"})
	e.waitRegistered(p.path)
	p.stop(false)
	tmp := e.path(".x.tmp")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p.path); err != nil { // atomically: no Remove event for x.sock
		t.Fatal(err)
	}
	h.expect(t, call{"deregister", "x", p.path, ""})
	e.waitFor("no sockets", func() bool { return len(e.m.Sockets()) == 0 })
}

// A plugin that never answers GetInfo is given up after the timeout, with
// no status sent; the operation ends when Run's context ends, whatever the
// timeout (TestMain checks no goroutine is left).
func TestGetInfoHangs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"timeout", 50 * time.Millisecond},
		{"cancel", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, WithGetInfoTimeout(tc.timeout))
			h := newHandler()
			e.m.AddHandler(registerapi.CSIPlugin, h)
			e.run()
			p := newPlugin(e.path("hang.sock"), registerapi.CSIPlugin, "hang", "1.0.0")
			p.getInfo = func(ctx context.Context) (*registerapi.PluginInfo, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			p.start(t)
			if tc.name == "cancel" {
				p.waitGetInfo(t)
				if err := e.stop(); !errors.Is(err, context.Canceled) {
					t.Fatalf("Run: %v", err)
				}
				if s, _ := e.socket(p.path); s.Registered {
					t.Errorf("socket %+v registered", s)
				}
			} else {
				// (Under load the deadline may pass before the call
				// reaches the plugin: the same failure.)
				err := e.waitFailed(p.path, ErrGetInfo)
				if status.Code(err) != codes.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Socket.Err %v: want a deadline", err)
				}
				want := "RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket " + p.path + ", err: "
				if len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
					t.Errorf("Socket.Err %q, want prefix %q", err, want)
				}
			}
			if len(p.statuses) != 0 {
				t.Error("a status was sent after GetInfo failed")
			}
			h.none(t)
		})
	}
}

// A plugin that dies in the middle of a call: its registration fails (and
// is retried after the back-off); a socket file with nobody behind it is
// refused until the dial timeout.
func TestPluginDies(t *testing.T) {
	t.Run("getinfo", func(t *testing.T) {
		e := newEnv(t)
		h := newHandler()
		e.m.AddHandler(registerapi.CSIPlugin, h)
		e.run()
		p := newPlugin(e.path("d.sock"), registerapi.CSIPlugin, "d", "1.0.0")
		p.getInfo = func(ctx context.Context) (*registerapi.PluginInfo, error) {
			<-ctx.Done() // until the server stops
			return nil, ctx.Err()
		}
		p.start(t)
		p.waitGetInfo(t)
		p.stop(false)
		err := e.waitFailed(p.path, ErrGetInfo)
		if status.Code(err) != codes.Unavailable {
			t.Errorf("Socket.Err %v: want Unavailable beneath", err)
		}
		h.none(t)
	})
	t.Run("notify", func(t *testing.T) {
		e := newEnv(t)
		h := newHandler()
		e.m.AddHandler(registerapi.DRAPlugin, h)
		e.run()
		p := newPlugin(e.path("d.sock"), registerapi.DRAPlugin, "d", "v1")
		p.notify = func(context.Context, *registerapi.RegistrationStatus) error {
			return status.Error(codes.Unavailable, "plugin exiting")
		}
		p.start(t)
		h.expect(t, call{"validate", "d", p.path, "[v1]"}, call{"register", "d", p.path, "[v1]"}, call{"deregister", "d", p.path, ""})
		err := e.waitFailed(p.path, ErrNotify)
		if status.Code(err) != codes.Unavailable {
			t.Errorf("Socket.Err %v: want the gRPC status beneath", err)
		}
		if got := e.m.Plugins(); len(got) != 0 {
			t.Errorf("Plugins: %+v, want none", got)
		}
	})
	t.Run("deadsocket", func(t *testing.T) {
		e := newEnv(t, WithDialTimeout(100*time.Millisecond))
		h := newHandler()
		e.m.AddHandler(registerapi.CSIPlugin, h)
		if err := os.MkdirAll(e.dir, DirMode); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", e.path("dead.sock"))
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		e.run()
		path := e.path("dead.sock")
		err = e.waitFailed(path, ErrDial)
		want := "RegisterPlugin error -- dial failed at socket " + path + ", err: failed to dial socket " + path + ", err: context deadline exceeded"
		if err.Error() != want {
			t.Errorf("Socket.Err %q, want %q", err, want)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Socket.Err %v: want context.DeadlineExceeded beneath", err)
		}
		h.none(t)
	})
	t.Run("registered", func(t *testing.T) {
		// A registered plugin that dies leaving its socket file stays
		// registered, as kubelet; the file's removal deregisters it.
		e := newEnv(t)
		h := newHandler()
		e.m.AddHandler(registerapi.CSIPlugin, h)
		e.run()
		p := newPlugin(e.path("r.sock"), registerapi.CSIPlugin, "r", "1.0.0").start(t)
		h.expect(t, call{"validate", "r", p.path, "[1.0.0]"}, call{"register", "r", p.path, "[1.0.0]"})
		e.waitRegistered(p.path)
		p.stop(false)
		e.m.wake()
		e.waitRegistered(p.path)
		h.none(t)
		if err := os.Remove(p.path); err != nil {
			t.Fatal(err)
		}
		h.expect(t, call{"deregister", "r", p.path, ""})
	})
}
