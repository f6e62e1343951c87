package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hang bounds every wait of a test: a wait that ends here is a failure
// (a hang), never a synchronisation.
const hang = 30 * time.Second

// fakePlugin serves pluginregistration.v1's Registration service on a unix
// socket, counting its calls.
type fakePlugin struct {
	registerapi.UnimplementedRegistrationServer
	path string
	info *registerapi.PluginInfo

	// getInfo and notify, if set, answer the calls instead.
	getInfo func(ctx context.Context) (*registerapi.PluginInfo, error)
	notify  func(ctx context.Context, s *registerapi.RegistrationStatus) error

	getInfoCalls chan struct{}
	statuses     chan *registerapi.RegistrationStatus

	srv    *grpc.Server
	lis    *net.UnixListener
	served chan struct{}
	once   sync.Once
}

func (p *fakePlugin) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	p.getInfoCalls <- struct{}{}
	if p.getInfo != nil {
		return p.getInfo(ctx)
	}
	return p.info, nil
}

func (p *fakePlugin) NotifyRegistrationStatus(ctx context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	p.statuses <- s
	if p.notify != nil {
		if err := p.notify(ctx, s); err != nil {
			return nil, err
		}
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// newPlugin makes a plugin for path; start serves it.
func newPlugin(path, typ, name string, versions ...string) *fakePlugin {
	return &fakePlugin{
		path:         path,
		info:         &registerapi.PluginInfo{Type: typ, Name: name, SupportedVersions: versions},
		getInfoCalls: make(chan struct{}, 100),
		statuses:     make(chan *registerapi.RegistrationStatus, 100),
	}
}

func (p *fakePlugin) start(t testing.TB) *fakePlugin {
	t.Helper()
	l, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.lis = l.(*net.UnixListener)
	p.srv = grpc.NewServer()
	registerapi.RegisterRegistrationServer(p.srv, p)
	p.served = make(chan struct{})
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(p.lis)
	}()
	t.Cleanup(func() { p.stop(true) })
	return p
}

// stop ends the server; unlink says whether its socket file goes too (a
// plugin that exits cleanly) or stays (a plugin that died).
func (p *fakePlugin) stop(unlink bool) {
	p.once.Do(func() {
		p.lis.SetUnlinkOnClose(unlink)
		p.srv.Stop()
		<-p.served
	})
}

// status waits for the plugin's next NotifyRegistrationStatus.
func (p *fakePlugin) status(t *testing.T) *registerapi.RegistrationStatus {
	t.Helper()
	select {
	case s := <-p.statuses:
		return s
	case <-time.After(hang):
		t.Fatalf("%s: no NotifyRegistrationStatus", p.path)
		return nil
	}
}

func (p *fakePlugin) waitGetInfo(t *testing.T) {
	t.Helper()
	select {
	case <-p.getInfoCalls:
	case <-time.After(hang):
		t.Fatalf("%s: no GetInfo", p.path)
	}
}

// call is one call of a fakeHandler.
type call struct {
	method   string // "validate", "register", "deregister"
	name     string
	endpoint string
	versions string
}

func (c call) String() string {
	return fmt.Sprintf("%s %s %s %s", c.method, c.name, c.endpoint, c.versions)
}

// fakeHandler records its calls; validate and register script failures.
type fakeHandler struct {
	calls    chan call
	validate func(name, endpoint string, versions []string) error
	register func(ctx context.Context, name string) error
	timeouts chan time.Duration
}

func newHandler() *fakeHandler {
	return &fakeHandler{calls: make(chan call, 100), timeouts: make(chan time.Duration, 100)}
}

func (h *fakeHandler) ValidatePlugin(name, endpoint string, versions []string) error {
	h.calls <- call{"validate", name, endpoint, fmt.Sprint(versions)}
	if h.validate != nil {
		return h.validate(name, endpoint, versions)
	}
	return nil
}

func (h *fakeHandler) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, timeout time.Duration) error {
	h.calls <- call{"register", name, endpoint, fmt.Sprint(versions)}
	h.timeouts <- timeout
	if h.register != nil {
		return h.register(ctx, name)
	}
	return nil
}

func (h *fakeHandler) DeRegisterPlugin(name, endpoint string) {
	h.calls <- call{"deregister", name, endpoint, ""}
}

// next waits for the handler's next call.
func (h *fakeHandler) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(hang):
		t.Fatal("no handler call")
		return call{}
	}
}

// expect waits for the handler's next calls and compares them.
func (h *fakeHandler) expect(t *testing.T, want ...call) {
	t.Helper()
	for _, w := range want {
		if got := h.next(t); got != w {
			t.Fatalf("handler call: got %q, want %q", got, w)
		}
	}
}

// none checks that the handler has no call left unread.
func (h *fakeHandler) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-h.calls:
		t.Fatalf("unexpected handler call %q", c)
	default:
	}
}

// env is a Manager of a fresh directory on a fake clock, run by the test.
type env struct {
	t     *testing.T
	dir   string
	m     *Manager
	clock *testingclock.FakeClock

	passes chan struct{}
	mu     sync.Mutex
	next   time.Time // the last pass's next retry

	cancel context.CancelFunc
	done   chan error
}

func newEnv(t *testing.T, opts ...Option) *env {
	t.Helper()
	e := &env{
		t:      t,
		dir:    filepath.Join(t.TempDir(), DirName),
		clock:  testingclock.NewFakeClock(time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)),
		passes: make(chan struct{}, 1),
	}
	// Kubelet's timeouts are short for a loaded -race run, and a failure
	// is retried only when the test steps the fake clock: tests get long
	// ones unless they ask for others.
	base := []Option{WithClock(e.clock), WithDialTimeout(hang), WithGetInfoTimeout(hang), WithNotifyTimeout(hang)}
	m, err := New(e.dir, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.afterPass = func(next time.Time) {
		e.mu.Lock()
		e.next = next
		e.mu.Unlock()
		select {
		case e.passes <- struct{}{}:
		default:
		}
	}
	e.m = m
	return e
}

// run starts Run; the test's cleanup stops it and checks it returned
// context.Canceled.
func (e *env) run() {
	e.t.Helper()
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), testr.NewWithOptions(e.t, testr.Options{Verbosity: 6})))
	e.cancel = cancel
	e.done = make(chan error, 1)
	go func() { e.done <- e.m.Run(ctx) }()
	// The first pass follows the directory's walk: it is watched.
	select {
	case <-e.passes:
	case err := <-e.done:
		e.t.Fatalf("Run: %v", err)
	case <-time.After(hang):
		e.t.Fatal("Run made no first pass")
	}
	e.t.Cleanup(func() {
		if err := e.stop(); !errors.Is(err, context.Canceled) {
			e.t.Errorf("Run: %v, want context.Canceled", err)
		}
	})
}

func (e *env) stop() error {
	e.cancel()
	select {
	case err := <-e.done:
		e.done <- err // a second stop sees it too
		return err
	case <-time.After(hang):
		e.t.Fatal("Run did not return after its context ended")
		return nil
	}
}

// waitFor waits, pass after pass of the reconciler, until cond holds.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.After(hang)
	for !cond() {
		select {
		case <-e.passes:
		case <-deadline:
			e.t.Fatalf("waiting for %s: sockets %+v", what, e.m.Sockets())
		}
	}
}

func (e *env) nextRetry() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.next
}

// socket returns the manager's view of path.
func (e *env) socket(path string) (Socket, bool) {
	for _, s := range e.m.Sockets() {
		if s.Path == path {
			return s, true
		}
	}
	return Socket{}, false
}

// waitFailed waits until path's operation failed with class and the
// reconciler armed its retry; it returns the error.
func (e *env) waitFailed(path string, class error) error {
	e.t.Helper()
	var got Socket
	e.waitFor(fmt.Sprintf("%s to fail with %v", path, class), func() bool {
		s, ok := e.socket(path)
		got = s
		return ok && !s.Pending && errors.Is(s.Err, class) && e.nextRetry().Equal(s.RetryAfter)
	})
	return got.Err
}

// waitRegistered waits until path is registered and its operation done.
func (e *env) waitRegistered(path string) {
	e.t.Helper()
	e.waitFor(path+" registered", func() bool {
		s, ok := e.socket(path)
		return ok && s.Registered && !s.Pending && s.Err == nil
	})
}

func (e *env) path(elem ...string) string {
	return filepath.Join(append([]string{e.dir}, elem...)...)
}
