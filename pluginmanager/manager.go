package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// DirName is the name of kubelet's plugin registration directory under its
// root directory (kubelet's DefaultKubeletPluginsRegistrationDirName).
const DirName = "plugins_registry"

// DefaultDir is kubelet's plugin registration directory for the default root
// directory /var/lib/kubelet.
const DefaultDir = "/var/lib/kubelet/" + DirName

// DirMode is the mode Run creates the registration directory with, as
// kubelet's setupDataDirs.
const DirMode = 0o750

// Kubelet's timeouts for the registration handshake.
const (
	// DefaultDialTimeout bounds the connection to a registration socket
	// (kubelet's dialTimeoutDuration).
	DefaultDialTimeout = 10 * time.Second
	// DefaultGetInfoTimeout bounds the GetInfo call.
	DefaultGetInfoTimeout = time.Second
	// DefaultNotifyTimeout bounds the NotifyRegistrationStatus call
	// (kubelet's notifyTimeoutDuration).
	DefaultNotifyTimeout = 5 * time.Second
)

// Back-off between failed operations on one socket, as kubelet's
// goroutinemap: 500ms, doubled after each failure, at most 2m2s.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 2*time.Minute + 2*time.Second
)

// Handler registers the plugins of one type ("CSIPlugin", "DRAPlugin",
// "DevicePlugin": the constants of k8s.io/kubelet/pkg/apis/pluginregistration/v1).
// For one socket its methods are called in the order ValidatePlugin,
// RegisterPlugin, and, once registered, DeRegisterPlugin; calls for
// different sockets may run concurrently, so a Handler must be safe for
// concurrent use. Handlers implement it by method set alone: they need not
// import this package.
type Handler interface {
	// ValidatePlugin returns an error if the plugin must not be registered
	// (an unsupported version, a name already taken, ...). The error is
	// sent to the plugin in its NotifyRegistrationStatus.
	ValidatePlugin(pluginName string, endpoint string, versions []string) error
	// RegisterPlugin registers the plugin. ctx ends when the manager's Run
	// ends, and Run waits for RegisterPlugin to return. timeout is the timeout the handler should use for its calls to
	// the plugin; 0 means the handler's own default (kubelet passes nil).
	RegisterPlugin(ctx context.Context, pluginName, endpoint string, versions []string, timeout time.Duration) error
	// DeRegisterPlugin is called when the plugin's socket is removed or
	// replaced, or when the plugin could not be told it was registered.
	// It should not block: the socket's next operation waits for it.
	DeRegisterPlugin(pluginName, endpoint string)
}

// Errors of New and Run, for errors.Is.
var (
	// ErrInvalidDir: the registration directory is not usable (relative,
	// not clean, a symlink, not a directory).
	ErrInvalidDir = errors.New("pluginmanager: invalid registration directory")
	// ErrAlreadyRun: Run was called a second time.
	ErrAlreadyRun = errors.New("pluginmanager: Run called twice")
	// ErrWatchEnded: the directory's watch ended before Run's context (an
	// inotify read error, reported to the log first).
	ErrWatchEnded = errors.New("pluginmanager: the directory watch ended")
)

// Option configures a Manager.
type Option func(*Manager)

// WithDialTimeout sets how long a registration socket may take to accept
// the connection (default DefaultDialTimeout). Values <= 0 are ignored.
func WithDialTimeout(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.dialTimeout = d
		}
	}
}

// WithGetInfoTimeout sets how long GetInfo may take (default
// DefaultGetInfoTimeout). Values <= 0 are ignored.
func WithGetInfoTimeout(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.getInfoTimeout = d
		}
	}
}

// WithNotifyTimeout sets how long NotifyRegistrationStatus may take
// (default DefaultNotifyTimeout). Values <= 0 are ignored.
func WithNotifyTimeout(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.notifyTimeout = d
		}
	}
}

// WithPluginClientTimeout sets the timeout passed to Handler.RegisterPlugin
// (default 0: the handler's own default, as kubelet's nil).
func WithPluginClientTimeout(d time.Duration) Option {
	return func(m *Manager) { m.pluginClientTimeout = d }
}

// WithClock sets the clock of the retry back-off and of the times reported
// by Plugins and Sockets (default the real clock).
func WithClock(c clock.Clock) Option { return func(m *Manager) { m.clock = c } }

// Plugin is a registered plugin.
type Plugin struct {
	Type       string    // GetInfo's type, the handler's key
	Name       string    // GetInfo's name
	Endpoint   string    // GetInfo's endpoint, or SocketPath when it gave none
	Versions   []string  // GetInfo's supported versions
	SocketPath string    // the registration socket
	Registered time.Time // when it was recorded, just before the handler's RegisterPlugin
}

// Socket is what the manager knows of one registration socket in its
// directory: registered or not, and the last failure.
type Socket struct {
	Path       string
	Registered bool
	// Pending: a registration or deregistration is under way.
	Pending bool
	// Err is the last failed operation's error (kubelet's message), nil
	// after a success; RetryAfter is when it may be retried.
	Err        error
	RetryAfter time.Time
}

// Manager watches a plugin registration directory and registers the
// plugins whose sockets appear there with the handler of their type, as
// kubelet's pluginmanager. Build it with New, add handlers, then Run.
type Manager struct {
	dir                 string
	clock               clock.Clock
	dialTimeout         time.Duration
	getInfoTimeout      time.Duration
	notifyTimeout       time.Duration
	pluginClientTimeout time.Duration

	ran   atomic.Bool
	nudge chan struct{} // wakes Run's loop: an operation ended, a handler was added

	mu       sync.Mutex
	handlers map[string]Handler
	desired  map[string]desiredSocket // by socket path
	actual   map[string]actualPlugin  // by socket path
	ops      map[string]*operation    // by socket path
	gen      uint64

	// afterPass, in tests, is called after each reconcile pass with the
	// time of the next retry (zero when none is due).
	afterPass func(next time.Time)
}

type desiredSocket struct {
	gen uint64 // bumped each time the socket is (re)created
	id  fileID
}

type actualPlugin struct {
	gen     uint64
	handler Handler
	plugin  Plugin
}

// operation is kubelet's goroutinemap entry: at most one operation per
// socket path, and an exponential back-off after a failure.
type operation struct {
	pending bool
	err     error
	errAt   time.Time
	backoff time.Duration
}

// failed records a failure at now and doubles the back-off (kubelet's
// ExponentialBackoff.Update).
func (o *operation) failed(err error, now time.Time) {
	if o.backoff == 0 {
		o.backoff = initialBackoff
	} else {
		o.backoff = min(2*o.backoff, maxBackoff)
	}
	o.err, o.errAt = err, now
}

func (o *operation) retryAt() time.Time {
	if o.err == nil {
		return time.Time{}
	}
	return o.errAt.Add(o.backoff)
}

// New returns a Manager of the registration directory dir (for kubelet's
// layout, filepath.Join(rootDir, DirName)). dir must be absolute and clean;
// New does not touch the disk: Run creates dir if missing.
func New(dir string, opts ...Option) (*Manager, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%w: %q is not an absolute path", ErrInvalidDir, dir)
	}
	if filepath.Clean(dir) != dir {
		return nil, fmt.Errorf("%w: %q is not clean (want %q)", ErrInvalidDir, dir, filepath.Clean(dir))
	}
	m := &Manager{
		dir:            dir,
		clock:          clock.RealClock{},
		dialTimeout:    DefaultDialTimeout,
		getInfoTimeout: DefaultGetInfoTimeout,
		notifyTimeout:  DefaultNotifyTimeout,
		nudge:          make(chan struct{}, 1),
		handlers:       map[string]Handler{},
		desired:        map[string]desiredSocket{},
		actual:         map[string]actualPlugin{},
		ops:            map[string]*operation{},
	}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// Dir returns the registration directory.
func (m *Manager) Dir() string { return m.dir }

// AddHandler sets the handler of the plugins of type pluginType, replacing
// any earlier one. It may be called before or during Run; a plugin refused
// for want of a handler is tried again after its back-off. It panics if h
// is nil.
func (m *Manager) AddHandler(pluginType string, h Handler) {
	if h == nil {
		panic("pluginmanager: AddHandler with a nil Handler for type " + pluginType)
	}
	m.mu.Lock()
	m.handlers[pluginType] = h
	m.mu.Unlock()
	m.wake()
}

// Plugins returns the registered plugins, sorted by socket path. As in
// kubelet's actual state, a plugin is listed from just before its handler's
// RegisterPlugin, and dropped again if that or the notification fails;
// Sockets tells whether its operation is still pending.
func (m *Manager) Plugins() []Plugin {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Plugin, 0, len(m.actual))
	for _, a := range m.actual {
		p := a.plugin
		p.Versions = append([]string(nil), p.Versions...)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SocketPath < out[j].SocketPath })
	return out
}

// Sockets returns every registration socket the manager knows of (found
// in its directory, or still registered), sorted by path.
func (m *Manager) Sockets() []Socket {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []Socket
	add := func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		s := Socket{Path: path}
		_, s.Registered = m.actual[path]
		if op := m.ops[path]; op != nil {
			s.Pending = op.pending
			s.Err = op.err
			s.RetryAfter = op.retryAt()
		}
		out = append(out, s)
	}
	for p := range m.desired {
		add(p)
	}
	for p := range m.actual {
		add(p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func (m *Manager) wake() {
	select {
	case m.nudge <- struct{}{}:
	default:
	}
}

// Run creates the registration directory if it is missing (mode DirMode),
// watches it and its subdirectories, and registers and deregisters plugins
// until ctx ends. It returns ctx's error once every operation it started
// has returned; or an error if the directory cannot be watched (at once) or
// its watch ends (ErrWatchEnded).
// Failures of single plugins are logged to ctx's logr logger and retried
// after kubelet's back-off; Sockets reports them.
func (m *Manager) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	ctx = logr.NewContext(ctx, logr.FromContextOrDiscard(ctx).WithName("pluginmanager"))
	w, err := m.startWatch(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	log := logr.FromContextOrDiscard(ctx)
	log.Info("Starting plugin manager", "path", m.dir)
	defer log.Info("Shutting down plugin manager", "path", m.dir)

	var ops sync.WaitGroup
	defer ops.Wait()

	var timer clock.Timer
	var timerAt time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		next := m.reconcile(ctx, &ops)
		if !next.Equal(timerAt) {
			if timer != nil {
				timer.Stop()
				timer = nil
			}
			timerAt = next
			if !next.IsZero() {
				timer = m.clock.NewTimer(next.Sub(m.clock.Now()))
			}
		}
		if m.afterPass != nil {
			m.afterPass(next)
		}
		var fired <-chan time.Time
		if timer != nil {
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.fs.Events:
			if !ok {
				return fmt.Errorf("%w: %s", ErrWatchEnded, m.dir)
			}
			w.handle(ctx, ev)
		case err, ok := <-w.fs.Errors:
			if !ok {
				return fmt.Errorf("%w: %s", ErrWatchEnded, m.dir)
			}
			w.handleError(ctx, err)
		case <-m.nudge:
		case <-fired:
			timer, timerAt = nil, time.Time{}
		}
	}
}

// reconcile is kubelet's reconciler pass: deregistrations first (sockets
// gone or replaced), then registrations, each started only when no
// operation on its socket is pending and its back-off has expired. It
// returns the earliest time a refused operation may be retried.
func (m *Manager) reconcile(ctx context.Context, wg *sync.WaitGroup) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var next time.Time
	canStart := func(path string) bool {
		op := m.ops[path]
		if op == nil {
			m.ops[path] = &operation{pending: true}
			return true
		}
		if op.pending {
			return false
		}
		if at := op.retryAt(); now.Before(at) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			return false
		}
		op.pending = true
		return true
	}
	for path, a := range m.actual {
		if d, ok := m.desired[path]; ok && d.gen == a.gen {
			continue
		}
		if canStart(path) {
			m.start(ctx, wg, path, func() error { return m.unregister(ctx, path, a) })
		}
	}
	for path, d := range m.desired {
		if a, ok := m.actual[path]; ok && a.gen == d.gen {
			continue
		}
		if canStart(path) {
			handlers := make(map[string]Handler, len(m.handlers))
			for t, h := range m.handlers {
				handlers[t] = h
			}
			gen := d.gen
			m.start(ctx, wg, path, func() error { return m.register(ctx, path, gen, handlers) })
		}
	}
	return next
}

// start runs fn for path in a goroutine of its own; its end records the
// outcome (kubelet's operationComplete) and wakes the loop.
func (m *Manager) start(ctx context.Context, wg *sync.WaitGroup, path string, fn func() error) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := guard(fn)
		m.mu.Lock()
		op := m.ops[path]
		op.pending = false
		if err == nil {
			delete(m.ops, path)
		} else {
			op.failed(err, m.clock.Now())
		}
		backoff := op.backoff
		m.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			logr.FromContextOrDiscard(ctx).Error(err, "Plugin operation failed; no retries permitted until the back-off expires", "path", path, "backoff", backoff)
		}
		m.wake()
	}()
}
