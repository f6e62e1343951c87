package devicemanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/devicemanager/checkpoint"
)

// DefaultDir is kubelet's device-plugins directory: the Registration
// socket (kubelet.sock), the plugins' sockets and the checkpoint.
const DefaultDir = "/var/lib/kubelet/device-plugins"

// Kubelet's constants for the device plugin API and its manager.
const (
	// SocketName is the Registration socket's name in the directory.
	SocketName = "kubelet.sock"
	// EndpointStopGracePeriod: the devices of a resource whose plugin is
	// gone stay in capacity (unhealthy) this long, then the resource is
	// deleted (kubelet's endpointStopGracePeriod).
	EndpointStopGracePeriod = 5 * time.Minute
	// DialTimeout bounds connecting to a plugin's socket (kubelet's dial).
	DialTimeout = 10 * time.Second
	// PreStartContainerTimeout bounds PreStartContainer (kubelet's
	// KubeletPreStartContainerRPCTimeoutInSecs).
	PreStartContainerTimeout = pluginapi.KubeletPreStartContainerRPCTimeoutInSecs * time.Second
)

var (
	// ErrRegistration is matched by every refused Register call.
	ErrRegistration = errors.New("device plugin registration refused")
	// ErrAllocate is matched by every allocation failure.
	ErrAllocate = errors.New("device allocation failed")
	// ErrBadResponse is matched when a plugin's answer is refused
	// (invalid CDI names, paths, environment).
	ErrBadResponse = errors.New("invalid device plugin response")
)

// Option configures a Manager.
type Option func(*options)

type options struct {
	dir             string
	clock           clock.PassiveClock
	sourcesReady    func() bool
	activePods      func() []*corev1.Pod
	onChange        func(resource string)
	preStartTimeout time.Duration
	dialTimeout     time.Duration
	logger          *logr.Logger
}

// WithDir sets the device-plugins directory (default DefaultDir).
func WithDir(dir string) Option { return func(o *options) { o.dir = dir } }

// WithClock sets the clock of the stop grace period (default: real).
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// WithSourcesReady tells whether the caller knows all its pods yet
// (kubelet's sourcesReady.AllReady). Until it does, devices of pods that
// are not among the active pods are not freed: after a restart, pods of
// the checkpoint the caller has not yet seen keep their devices. Default:
// always ready.
func WithSourcesReady(f func() bool) Option { return func(o *options) { o.sourcesReady = f } }

// WithActivePods gives kubelet's activePods for allocations that do not
// come from Admit (DeviceOptions' re-allocation): devices of pods not
// among them are freed first, and a pod not among them is not
// re-allocated. Default: none (nothing freed there; the pod is taken as
// active).
func WithActivePods(f func() []*corev1.Pod) Option { return func(o *options) { o.activePods = f } }

// WithOnChange is called, without locks held, after each change of a
// resource's devices or endpoints (a plugin registered, sent devices, or
// went away): a node agent may update its Node status sooner than its
// period.
func WithOnChange(f func(resource string)) Option { return func(o *options) { o.onChange = f } }

// WithPreStartContainerTimeout overrides PreStartContainerTimeout (tests).
func WithPreStartContainerTimeout(d time.Duration) Option {
	return func(o *options) { o.preStartTimeout = d }
}

// WithDialTimeout overrides DialTimeout (tests).
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithLogger sets the logger for the Manager's own goroutines (plugin
// streams); calls log through their context's logger.
func WithLogger(l logr.Logger) Option { return func(o *options) { o.logger = &l } }

// Manager is kubelet's device manager: the Registration server, one
// endpoint per resource, the devices they report, allocations per
// container and their checkpoint.
type Manager struct {
	o       options
	log     logr.Logger
	allocMu sync.Mutex // one allocation at a time (kubelet admits one pod at a time)

	mu        sync.Mutex
	endpoints map[string]*endpoint            // resource → endpoint in use (kubelet's endpoints)
	store     map[string]map[string]*endpoint // resource → socket → connected endpoint
	all       map[string]map[string]*pluginapi.Device
	healthy   map[string]set
	unhealthy map[string]set
	allocated map[string]set
	pods      podDevices
	reuse     map[string]map[string]set // kubelet's devicesToReuse: pod UID → resource → devices
	started   bool
	stopped   bool
	noCkpt    bool

	ctx    context.Context // ends plugin streams
	cancel context.CancelFunc
	server *grpc.Server
	wg     sync.WaitGroup
	pluginapi.UnsafeRegistrationServer
}

// New returns a Manager; Start serves it.
func New(opts ...Option) (*Manager, error) {
	o := options{dir: DefaultDir, clock: clock.RealClock{}, preStartTimeout: PreStartContainerTimeout, dialTimeout: DialTimeout}
	for _, f := range opts {
		f(&o)
	}
	if o.dir == "" || !filepath.IsAbs(o.dir) {
		return nil, fmt.Errorf("devicemanager: bad socketPath, must be an absolute path: %q", o.dir)
	}
	o.dir = filepath.Clean(o.dir)
	if len(filepath.Join(o.dir, SocketName)) > 107 {
		return nil, fmt.Errorf("devicemanager: socket path %q is too long for a unix socket", filepath.Join(o.dir, SocketName))
	}
	m := &Manager{
		o:         o,
		log:       logr.Discard(),
		endpoints: map[string]*endpoint{},
		store:     map[string]map[string]*endpoint{},
		all:       map[string]map[string]*pluginapi.Device{},
		healthy:   map[string]set{},
		unhealthy: map[string]set{},
		allocated: map[string]set{},
		pods:      podDevices{},
		reuse:     map[string]map[string]set{},
	}
	if o.logger != nil {
		m.log = *o.logger
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Dir is the device-plugins directory.
func (m *Manager) Dir() string { return m.o.dir }

// SocketPath is the Registration socket, <dir>/kubelet.sock.
func (m *Manager) SocketPath() string { return filepath.Join(m.o.dir, SocketName) }

// Start reads the checkpoint, removes stale sockets from the directory
// (every socket but the checkpoint, as kubelet does) and serves the
// Registration service on SocketPath. A checkpoint that cannot be read is
// logged and ignored, as kubelet does: allocations start empty. Start
// returns once the socket listens.
func (m *Manager) Start(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return errors.New("devicemanager: already started")
	}
	m.started = true
	m.mu.Unlock()
	if err := os.MkdirAll(m.o.dir, 0o750); err != nil {
		return err
	}
	if err := m.readCheckpoint(); err != nil {
		log.Error(err, "Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date")
	}
	if err := m.cleanupDir(); err != nil {
		return fmt.Errorf("devicemanager: cleanup %s: %w", m.o.dir, err)
	}
	ln, err := net.Listen("unix", m.SocketPath())
	if err != nil {
		return err
	}
	// Stop waits for Register calls in flight, so none connects a plugin
	// after Stop returns.
	s := grpc.NewServer(grpc.WaitForHandlers(true))
	pluginapi.RegisterRegistrationServer(s, m)
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		ln.Close()
		return errors.New("devicemanager: stopped")
	}
	m.server = s
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := s.Serve(ln); err != nil {
			m.log.Error(err, "Error while serving device plugin registration grpc server")
		}
	}()
	return nil
}

// Stop stops the Registration server, disconnects every plugin (their
// resources turn unhealthy, as kubelet's Stop does) and waits for the
// Manager's goroutines.
func (m *Manager) Stop() {
	m.mu.Lock()
	m.stopped = true
	s := m.server
	m.mu.Unlock()
	m.cancel()
	if s != nil {
		s.Stop()
	}
	m.wg.Wait()
}

// cleanupDir is kubelet's CleanupPluginDirectory.
func (m *Manager) cleanupDir() error {
	entries, err := os.ReadDir(m.o.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == checkpoint.FileName {
			continue
		}
		p := filepath.Join(m.o.dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Register is the Registration service: kubelet's version and resource
// name checks, then the plugin's socket is dialled, its options read and
// its ListAndWatch stream started.
func (m *Manager) Register(ctx context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	log := m.log.WithValues("resourceName", r.ResourceName)
	log.Info("Got registration request from device plugin with resource")
	if !versionSupported(r.Version) {
		err := regError(fmt.Sprintf("requested API version %q is not supported by kubelet. Supported version is %q", r.Version, pluginapi.SupportedVersions))
		log.Error(err, "Bad registration request from device plugin")
		return &pluginapi.Empty{}, err
	}
	if !IsExtendedResourceName(r.ResourceName) {
		err := regError(fmt.Sprintf("the ResourceName %q is invalid", r.ResourceName))
		log.Error(err, "Bad registration request from device plugin")
		return &pluginapi.Empty{}, err
	}
	if !validEndpoint(r.Endpoint) {
		err := regError(fmt.Sprintf("endpoint %q is not a file name in %s", r.Endpoint, m.o.dir))
		log.Error(err, "Bad registration request from device plugin")
		return &pluginapi.Empty{}, err
	}
	if err := m.connect(ctx, r.ResourceName, filepath.Join(m.o.dir, r.Endpoint)); err != nil {
		log.Error(err, "Error connecting to device plugin client")
		return &pluginapi.Empty{}, err
	}
	return &pluginapi.Empty{}, nil
}

// regError is a refused registration with kubelet's message; it matches
// ErrRegistration.
type regError string

func (e regError) Error() string        { return string(e) }
func (e regError) Is(target error) bool { return target == ErrRegistration }

func versionSupported(v string) bool {
	for _, s := range pluginapi.SupportedVersions {
		if v == s {
			return true
		}
	}
	return false
}

// validEndpoint: a plain file name in the directory (kubelet joins any
// endpoint to its directory).
func validEndpoint(e string) bool {
	return e != "" && e != "." && e != ".." && !strings.ContainsAny(e, "/\x00") && e != SocketName && e != checkpoint.FileName
}

// IsExtendedResourceName is kubelet's v1helper.IsExtendedResourceName: a
// domain-prefixed name outside kubernetes.io, valid as a quota name.
func IsExtendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+name)) == 0
}

func (m *Manager) changed(resource string) {
	if m.o.onChange != nil {
		m.o.onChange(resource)
	}
}

// set is a set of device IDs.
type set map[string]struct{}

func newSet(ids ...string) set {
	s := make(set, len(ids))
	for _, id := range ids {
		s[id] = struct{}{}
	}
	return s
}

func (s set) has(id string) bool { _, ok := s[id]; return ok }

func (s set) sorted() []string {
	out := make([]string, 0, len(s))
	for id := range s {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func (s set) union(o set) set {
	r := make(set, len(s)+len(o))
	for id := range s {
		r[id] = struct{}{}
	}
	for id := range o {
		r[id] = struct{}{}
	}
	return r
}

func (s set) minus(o set) set {
	r := make(set, len(s))
	for id := range s {
		if !o.has(id) {
			r[id] = struct{}{}
		}
	}
	return r
}

func sortedKeys[K ~string, V any](mp map[K]V) []string {
	out := make([]string, 0, len(mp))
	for k := range mp {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}
