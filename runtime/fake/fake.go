package fake

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/runtime"
)

// Runtime is an in-memory CRI runtime. It implements runtime.Runtime and is
// safe for concurrent use. Build it with New.
type Runtime struct {
	clock clock.Clock

	mu           sync.Mutex
	nextID       int
	images       map[string]*runtimeapi.Image // by image ID
	registry     map[string]bool              // pullable names; nil: anything
	auth         map[string]credential        // registry host → required credential
	imageSize    uint64
	imageFs      string // ImageFsInfo's mount point; "": DefaultImageFsMountpoint
	sandboxes    map[string]*sandbox
	containers   map[string]*container
	idx          index // index.go
	calls        []Call
	counts       map[string]int // calls by method since the last ResetCalls
	noCallLog    bool           // WithCallLog(false)
	interceptors []*interceptor
	answerers    []*answerer
	onStart      StartFunc
	onExec       ExecFunc
	sleepers     map[string]*container // running containers whose StartFunc answer exits later

	watchers         map[int]chan *runtimeapi.ContainerEventResponse
	nextWatcher      int
	eventsSent       int
	lastStamp        int64
	progressSteps    int
	progressInterval time.Duration

	cgroupDriver *runtimeapi.CgroupDriver     // RuntimeConfig's answer; nil: Unimplemented
	handlers     []*runtimeapi.RuntimeHandler // Status's RuntimeHandlers
	features     *runtimeapi.RuntimeFeatures  // Status's Features
	logFiles     bool                         // WithLogFiles: containers' log files are created
	podCIDR      string                       // the last UpdateRuntimeConfig's
}

type credential struct{ username, password string }

type sandbox struct {
	id        string
	config    *runtimeapi.PodSandboxConfig
	handler   string
	state     runtimeapi.PodSandboxState
	createdAt int64
	ip        string
}

type container struct {
	id        string
	sandboxID string
	config    *runtimeapi.ContainerConfig
	imageRef  string
	state     runtimeapi.ContainerState
	createdAt int64
	startedAt int64
	exitedAt  int64
	exit      Exit
	logPath   string // as containerd: the sandbox's log directory joined with the config's log path
	memory    uint64 // memory in use, as ContainerStats reports it (SetMemoryUsage)

	// A running container the StartFunc gave an Exit with After: it ends
	// with exit at exitAt on the runtime's clock, woken by timer when the
	// clock has AfterFunc and, in any case, by the next call that reads it.
	pending *Exit
	exitAt  time.Time
	timer   clock.Timer
}

// Exit is how a container ended.
type Exit struct {
	Code    int32
	Reason  string // "Completed" or "Error" when empty, as containerd reports
	Message string
	// After, in a StartFunc's answer, is how long the container runs
	// before it exits, on the runtime's clock (WithClock); zero or less
	// exits at once. ExitContainer, ControlExitContainer and Seeded ignore
	// it: they act now.
	After time.Duration
}

// StartFunc decides what a container does when it starts: nil keeps it
// running, an *Exit ends it with that status, at once or After a while
// (an init container that finishes, a crashing app). A runtime without
// one uses CommandStart, which reads the container's command; a StartFunc
// that is set decides alone, and may call CommandStart itself.
type StartFunc func(config *runtimeapi.ContainerConfig) *Exit

// ExecFunc answers ExecSync; a non-zero exitCode becomes *runtime.ExitError.
type ExecFunc func(containerID string, cmd []string) (stdout, stderr []byte, exitCode int32, err error)

// Call is one recorded call: the CRI method name and its request message,
// built as it would travel over the wire.
type Call struct {
	Method  string
	Request proto.Message
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithClock sets the clock for timestamps and latency (default: real time).
func WithClock(c clock.Clock) Option { return func(r *Runtime) { r.clock = c } }

// WithImages seeds images that are present locally.
func WithImages(refs ...string) Option {
	return func(r *Runtime) {
		for _, ref := range refs {
			name, err := normalize(ref)
			if err != nil {
				panic(fmt.Sprintf("fake.WithImages(%q): %v", ref, err))
			}
			r.storeImage(name)
		}
	}
}

// WithRegistryImages restricts what PullImage can find to these references;
// by default every well-formed reference can be pulled.
func WithRegistryImages(refs ...string) Option {
	return func(r *Runtime) {
		if r.registry == nil {
			r.registry = map[string]bool{}
		}
		for _, ref := range refs {
			name, err := normalize(ref)
			if err != nil {
				panic(fmt.Sprintf("fake.WithRegistryImages(%q): %v", ref, err))
			}
			r.registry[name] = true
		}
	}
}

// WithRegistryAuth makes pulls from host (as it appears in the normalised
// reference, e.g. "docker.io" or "127.0.0.1:5000") require these
// credentials; other credentials, or none, fail as containerd reports a
// registry's 401.
func WithRegistryAuth(host, username, password string) Option {
	return func(r *Runtime) { r.auth[host] = credential{username, password} }
}

// WithImageSize sets the size reported for pulled and seeded images.
func WithImageSize(bytes uint64) Option { return func(r *Runtime) { r.imageSize = bytes } }

// WithStartFunc sets what containers do when started (default:
// CommandStart, what their command does; a command it does not know keeps
// running).
func WithStartFunc(f StartFunc) Option { return func(r *Runtime) { r.onStart = f } }

// WithExecFunc sets how ExecSync answers (default: exit 0, no output).
func WithExecFunc(f ExecFunc) Option { return func(r *Runtime) { r.onExec = f } }

// WithInterceptor adds an interceptor (see Intercept).
func WithInterceptor(f Interceptor) Option {
	return func(r *Runtime) { r.interceptors = append(r.interceptors, &interceptor{fn: f}) }
}

// New returns an empty runtime with the options applied.
func New(opts ...Option) *Runtime {
	r := &Runtime{
		clock:      clock.RealClock{},
		images:     map[string]*runtimeapi.Image{},
		auth:       map[string]credential{},
		imageSize:  1 << 20,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		sleepers:   map[string]*container{},
	}
	for _, opt := range opts {
		opt(r)
	}
	return r
}

var _ runtime.Runtime = (*Runtime)(nil)

// WithCallLog sets whether the calls are kept for Calls (the default) or
// only counted (CallCount, CallCounts): a run of many pods or a long one
// then holds no memory for its calls, which a kept log does (every
// request, cloned) until ResetCalls.
func WithCallLog(on bool) Option { return func(r *Runtime) { r.noCallLog = !on } }

// Calls returns the calls made so far, in order (none when the runtime
// was built WithCallLog(false)).
func (r *Runtime) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// CallCount returns how many times method was called.
func (r *Runtime) CallCount(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[method]
}

// CallCounts returns how many times each method was called since the
// runtime was built or ResetCalls.
func (r *Runtime) CallCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.counts)
}

// ResetCalls forgets the recorded calls.
func (r *Runtime) ResetCalls() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls, r.counts = nil, nil
}

// enter records a call and runs the interceptors outside the lock.
func (r *Runtime) enter(ctx context.Context, method string, req proto.Message) error {
	r.mu.Lock()
	if !r.noCallLog {
		r.calls = append(r.calls, Call{Method: method, Request: req})
	}
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[method]++
	ics := append([]*interceptor(nil), r.interceptors...)
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return runtime.Classify(err)
	}
	for _, ic := range ics {
		if err := ic.fn(ctx, method, req); err != nil {
			return runtime.Classify(err)
		}
	}
	return nil
}

// now is the clock's time in nanoseconds, made strictly increasing so that
// instances created at one fake-clock instant still sort in creation
// order, as they do on a real runtime. Callers hold mu.
func (r *Runtime) now() int64 {
	n := r.clock.Now().UnixNano()
	if n <= r.lastStamp {
		n = r.lastStamp + 1
	}
	r.lastStamp = n
	return n
}

func (r *Runtime) newID(prefix string) string {
	r.nextID++
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s-%d", prefix, r.nextID)))
	return hex.EncodeToString(sum[:])
}

func fail(code codes.Code, format string, args ...any) error {
	return runtime.Classify(status.Errorf(code, format, args...))
}

// normalize gives the fully qualified reference containerd would store:
// "busybox" → "docker.io/library/busybox:latest".
func normalize(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", err
	}
	return named.String(), nil
}

// manifestDigest stands for the digest of the image's manifest, which a
// repo digest names; it differs from the image ID (the config's digest),
// as on containerd.
func manifestDigest(name string) string {
	sum := sha256.Sum256([]byte("manifest:" + name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func imageID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// storeImage records name as present and returns the image. Callers hold mu
// (or own r exclusively, as options do).
func (r *Runtime) storeImage(name string) *runtimeapi.Image {
	if img := r.findImage(name); img != nil {
		return img
	}
	repo := name
	if named, err := reference.ParseNormalizedNamed(name); err == nil {
		repo = named.Name()
	}
	id := imageID(name)
	img := &runtimeapi.Image{
		Id:          id,
		RepoTags:    []string{name},
		RepoDigests: []string{repo + "@" + manifestDigest(name)},
		Size:        r.imageSize,
	}
	if strings.Contains(name, "@") {
		img.RepoTags = nil
		img.RepoDigests = []string{name}
	}
	r.images[id] = img
	return img
}

func (r *Runtime) findImage(ref string) *runtimeapi.Image {
	if img, ok := r.images[ref]; ok {
		return img
	}
	name, err := normalize(ref)
	if err != nil {
		return nil
	}
	for _, img := range r.images {
		for _, t := range img.RepoTags {
			if t == name {
				return img
			}
		}
		for _, d := range img.RepoDigests {
			if d == name {
				return img
			}
		}
	}
	return nil
}

// PullImage implements runtime.ImageService. Pulling a present image
// succeeds again, as in containerd.
func (r *Runtime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return r.answering().PullImage(ctx, image, auth, sandboxConfig)
}

func (b *bare) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	r := (*Runtime)(b)
	return r.pull(ctx, image, auth, sandboxConfig, nil)
}

// pull records the call, runs the interceptors, then during (which may
// report progress), then resolves the image.
func (r *Runtime) pull(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig, during func(context.Context) error) (string, error) {
	req := &runtimeapi.PullImageRequest{Image: clone(image), Auth: clone(auth), SandboxConfig: clone(sandboxConfig)}
	if err := r.enter(ctx, "PullImage", req); err != nil {
		return "", err
	}
	if during != nil {
		if err := during(ctx); err != nil {
			return "", err
		}
	}
	ref := image.GetImage()
	name, err := normalize(ref)
	if err != nil {
		return "", fail(codes.InvalidArgument, "failed to pull image %q: %v", ref, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.registry != nil && !r.registry[name] {
		return "", fail(codes.NotFound, "failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", name, name, name)
	}
	host := reference.Domain(mustNamed(name))
	if want, ok := r.auth[host]; ok && !authMatches(auth, want) {
		return "", fail(codes.Unknown, "failed to pull and unpack image %q: failed to resolve reference %q: pulling from host %s failed with status code [manifests %s]: 401 Unauthorized", name, name, host, tagOf(name))
	}
	return r.storeImage(name).Id, nil
}

func mustNamed(name string) reference.Named {
	n, _ := reference.ParseNormalizedNamed(name)
	return n
}

func tagOf(name string) string {
	if t, ok := mustNamed(name).(reference.Tagged); ok {
		return t.Tag()
	}
	if d, ok := mustNamed(name).(reference.Digested); ok {
		return d.Digest().String()
	}
	return "latest"
}

func authMatches(a *runtimeapi.AuthConfig, want credential) bool {
	if a == nil {
		return false
	}
	user, pass := a.Username, a.Password
	if a.Auth != "" {
		if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
			if u, p, ok := strings.Cut(string(dec), ":"); ok {
				user, pass = u, p
			}
		}
	}
	return user == want.username && pass == want.password
}

// ImageStatus implements runtime.ImageService.
func (r *Runtime) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return r.answering().ImageStatus(ctx, image, verbose)
}

func (b *bare) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ImageStatus", &runtimeapi.ImageStatusRequest{Image: clone(image), Verbose: verbose}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.ImageStatusResponse{Image: clone(r.findImage(image.GetImage()))}, nil
}

// ListImages implements runtime.ImageService.
func (r *Runtime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return r.answering().ListImages(ctx, filter)
}

func (b *bare) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ListImages", &runtimeapi.ListImagesRequest{Filter: clone(filter)}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Image
	want := filter.GetImage().GetImage()
	var match *runtimeapi.Image
	if want != "" {
		match = r.findImage(want)
	}
	for _, img := range r.images {
		if want == "" || img == match {
			out = append(out, clone(img))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out, nil
}

// RemoveImage implements runtime.ImageService.
func (r *Runtime) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return r.answering().RemoveImage(ctx, image)
}

func (b *bare) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "RemoveImage", &runtimeapi.RemoveImageRequest{Image: clone(image)}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if img := r.findImage(image.GetImage()); img != nil {
		delete(r.images, img.Id)
	}
	return nil
}

// Version implements runtime.RuntimeService.
func (r *Runtime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return r.answering().Version(ctx, apiVersion)
}

func (b *bare) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "Version", &runtimeapi.VersionRequest{Version: apiVersion}); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "podstart-fake", RuntimeVersion: "0.1.0", RuntimeApiVersion: "v1"}, nil
}

// Status implements runtime.RuntimeService: the runtime and its network are
// always ready; the runtime handlers and features are those
// WithRuntimeHandlers and WithRuntimeFeatures set (none by default).
func (r *Runtime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return r.answering().Status(ctx, verbose)
}

func (b *bare) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "Status", &runtimeapi.StatusRequest{Verbose: verbose}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}, RuntimeHandlers: cloneAll(r.handlers), Features: clone(r.features)}, nil
}

// RunPodSandbox implements runtime.RuntimeService. Pod-network sandboxes
// get an address from 10.88.0.0/16, as containerd's default CNI config.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	return r.answering().RunPodSandbox(ctx, config, runtimeHandler)
}

func (b *bare) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: clone(config), RuntimeHandler: runtimeHandler}); err != nil {
		return "", err
	}
	if config.GetMetadata() == nil {
		return "", fail(codes.InvalidArgument, "sandbox config must include metadata")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &sandbox{id: r.newID("sandbox"), config: clone(config), handler: runtimeHandler, state: runtimeapi.PodSandboxState_SANDBOX_READY, createdAt: r.now()}
	if config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE {
		s.ip = fmt.Sprintf("10.88.%d.%d", (r.nextID/250)%250, r.nextID%250+2)
	}
	r.addSandbox(s)
	return s.id, nil
}

// StopPodSandbox implements runtime.RuntimeService: the sandbox becomes not
// ready and its running containers exit.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	return r.answering().StopPodSandbox(ctx, id)
}

func (b *bare) StopPodSandbox(ctx context.Context, id string) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "StopPodSandbox", &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return fail(codes.NotFound, "an error occurred when try to find sandbox %q: not found", id)
	}
	r.stopSandbox(s)
	return nil
}

func (r *Runtime) stopSandbox(s *sandbox) {
	r.settle()
	s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	cs := values(r.idx.containersBySandbox[s.id])
	sortContainers(cs)
	for _, c := range cs {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.exitContainer(c, Exit{Code: 137, Reason: "Error"})
		}
	}
}

// RemovePodSandbox implements runtime.RuntimeService; it removes the
// sandbox's containers too. Removing an absent sandbox succeeds.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	return r.answering().RemovePodSandbox(ctx, id)
}

func (b *bare) RemovePodSandbox(ctx context.Context, id string) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "RemovePodSandbox", &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sandboxes[id]; ok && s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		return fail(codes.FailedPrecondition, "sandbox container %q is not fully stopped", id)
	}
	for _, c := range values(r.idx.containersBySandbox[id]) {
		r.forget(c)
		r.removeContainer(c)
	}
	if s, ok := r.sandboxes[id]; ok {
		r.removeSandbox(s)
	}
	return nil
}

// PodSandboxStatus implements runtime.RuntimeService.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return r.answering().PodSandboxStatus(ctx, id, verbose)
}

func (b *bare) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "PodSandboxStatus", &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return nil, fail(codes.NotFound, "an error occurred when try to find sandbox: not found")
	}
	st := &runtimeapi.PodSandboxStatus{
		Id:             s.id,
		Metadata:       clone(s.config.Metadata),
		State:          s.state,
		CreatedAt:      s.createdAt,
		Labels:         maps.Clone(s.config.Labels),
		Annotations:    maps.Clone(s.config.Annotations),
		RuntimeHandler: s.handler,
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: clone(s.config.GetLinux().GetSecurityContext().GetNamespaceOptions()),
		}},
	}
	if s.ip != "" {
		st.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: s.ip}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: st}, nil
}

// ListPodSandbox implements runtime.RuntimeService, newest first.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return r.answering().ListPodSandbox(ctx, filter)
}

func (b *bare) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ListPodSandbox", &runtimeapi.ListPodSandboxRequest{Filter: clone(filter)}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, s := range r.sandboxCandidates(filter.GetId(), filter.GetLabelSelector()) {
		if f := filter; f != nil {
			if f.Id != "" && f.Id != s.id || f.State != nil && f.State.State != s.state || !labelsMatch(s.config.Labels, f.LabelSelector) {
				continue
			}
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: s.id, Metadata: clone(s.config.Metadata), State: s.state, CreatedAt: s.createdAt,
			Labels: maps.Clone(s.config.Labels), Annotations: maps.Clone(s.config.Annotations), RuntimeHandler: s.handler,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt > out[j].CreatedAt
		}
		return out[i].Id < out[j].Id
	})
	return out, nil
}

// CreateContainer implements runtime.RuntimeService. As in containerd, the
// sandbox must exist and the image must be present.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return r.answering().CreateContainer(ctx, sandboxID, config, sandboxConfig)
}

func (b *bare) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	r := (*Runtime)(b)
	req := &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: clone(config), SandboxConfig: clone(sandboxConfig)}
	if err := r.enter(ctx, "CreateContainer", req); err != nil {
		return "", err
	}
	if config.GetMetadata() == nil {
		return "", fail(codes.InvalidArgument, "container config must include metadata")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[sandboxID]
	if !ok {
		return "", fail(codes.NotFound, "failed to get sandbox %q: not found", sandboxID)
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return "", fail(codes.FailedPrecondition, "sandbox %q is not running", sandboxID)
	}
	img := r.findImage(config.GetImage().GetImage())
	if img == nil {
		return "", fail(codes.NotFound, "failed to get image %q: not found", config.GetImage().GetImage())
	}
	c := &container{
		id: r.newID("container"), sandboxID: sandboxID, config: clone(config), imageRef: img.Id,
		logPath: joinLogPath(s.config.GetLogDirectory(), config.GetLogPath()),
		state:   runtimeapi.ContainerState_CONTAINER_CREATED, createdAt: r.now(),
	}
	r.addContainer(c)
	r.emit(c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return c.id, nil
}

func (r *Runtime) container(id string) (*container, error) {
	r.settle()
	c, ok := r.containers[id]
	if !ok {
		return nil, fail(codes.NotFound, "an error occurred when try to find container %q: not found", id)
	}
	return c, nil
}

// StartContainer implements runtime.RuntimeService. What the container does
// next is decided by the StartFunc.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	return r.answering().StartContainer(ctx, id)
}

func (b *bare) StartContainer(ctx context.Context, id string) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "StartContainer", &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return fail(codes.FailedPrecondition, "container %q is in %s state", id, c.state)
	}
	if r.logFiles {
		if err := touchLog(c.logPath); err != nil {
			return fail(codes.Unknown, "failed to create container loggers: %v", err)
		}
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = r.now()
	r.emit(c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	start := r.onStart
	if start == nil {
		start = CommandStart
	}
	if exit := start(clone(c.config)); exit != nil {
		if exit.After > 0 {
			r.exitLater(c, *exit)
		} else {
			r.exitContainer(c, *exit)
		}
	}
	return nil
}

func (r *Runtime) exitContainer(c *container, e Exit) {
	r.forget(c)
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.exitedAt = r.now()
	e.After = 0
	c.exit = withReason(e)
	r.emit(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

// exitLater makes the running container c exit with e once e.After has
// passed on the clock. With a clock that has AfterFunc (the real clock,
// k8s.io/utils/clock/testing's FakeClock) a timer ends it and sends its
// event; every call that reads containers ends it too once its time has
// come (settle), so a test that steps a fake clock sees it exited on its
// next call. Callers hold mu.
func (r *Runtime) exitLater(c *container, e Exit) {
	c.pending, c.exitAt = &e, r.clock.Now().Add(e.After)
	r.sleepers[c.id] = c
	if dc, ok := r.clock.(clock.WithDelayedExecution); ok {
		// FakeClock runs the function while it holds its lock, which r.now
		// takes under mu: take mu in a goroutine of its own.
		c.timer = dc.AfterFunc(e.After, func() { go r.wake(c) })
	}
}

// wake ends c, whose timer fired, unless it has ended or gone meanwhile.
func (r *Runtime) wake(c *container) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sleepers[c.id] == c {
		r.finish(c)
	}
}

// settle ends the containers whose exit time has come. Callers hold mu.
func (r *Runtime) settle() {
	if len(r.sleepers) == 0 {
		return
	}
	now := r.clock.Now()
	var due []*container
	for _, c := range r.sleepers {
		if !now.Before(c.exitAt) {
			due = append(due, c)
		}
	}
	sort.Slice(due, func(i, j int) bool { // events in the order of the exits
		if !due[i].exitAt.Equal(due[j].exitAt) {
			return due[i].exitAt.Before(due[j].exitAt)
		}
		return due[i].createdAt < due[j].createdAt
	})
	for _, c := range due {
		r.finish(c)
	}
}

// finish ends the sleeper c with its pending exit, finished at its exit
// time. Callers hold mu.
func (r *Runtime) finish(c *container) {
	e, at := *c.pending, c.exitAt.UnixNano()
	r.exitContainer(c, e)
	if at > c.startedAt {
		c.exitedAt = at
	}
}

// forget drops c's pending exit and stops its timer, so that a fake clock
// has no waiter left for it. Callers hold mu.
func (r *Runtime) forget(c *container) {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.pending, c.timer = nil, nil
	delete(r.sleepers, c.id)
}

// withReason gives an exit without a reason containerd's: "Completed" for
// code 0, "Error" otherwise.
func withReason(e Exit) Exit {
	if e.Reason == "" {
		e.Reason = "Completed"
		if e.Code != 0 {
			e.Reason = "Error"
		}
	}
	return e
}

// StopContainer implements runtime.RuntimeService. A running container exits
// with 143 ("Error"), as a shell killed by SIGTERM does under containerd.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	return r.answering().StopContainer(ctx, id, timeout)
}

func (b *bare) StopContainer(ctx context.Context, id string, timeout int64) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "StopContainer", &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return err
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exitContainer(c, Exit{Code: 143, Reason: "Error"})
	} else if c.state == runtimeapi.ContainerState_CONTAINER_CREATED {
		r.exitContainer(c, Exit{Code: 0, Reason: "Completed"})
	}
	return nil
}

// RemoveContainer implements runtime.RuntimeService (forcibly, as CRI asks).
// Removing an absent container succeeds.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	return r.answering().RemoveContainer(ctx, id)
}

func (b *bare) RemoveContainer(ctx context.Context, id string) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "RemoveContainer", &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containers[id]; ok {
		r.forget(c)
		r.removeContainer(c)
		r.emit(c, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	}
	return nil
}

// ListContainers implements runtime.RuntimeService, oldest first.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return r.answering().ListContainers(ctx, filter)
}

func (b *bare) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ListContainers", &runtimeapi.ListContainersRequest{Filter: clone(filter)}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range r.containerCandidates(filter.GetId(), filter.GetPodSandboxId(), filter.GetLabelSelector()) {
		if f := filter; f != nil {
			if f.Id != "" && f.Id != c.id || f.PodSandboxId != "" && f.PodSandboxId != c.sandboxID ||
				f.State != nil && f.State.State != c.state || !labelsMatch(c.config.Labels, f.LabelSelector) {
				continue
			}
		}
		out = append(out, &runtimeapi.Container{
			Id: c.id, PodSandboxId: c.sandboxID, Metadata: clone(c.config.Metadata), Image: clone(c.config.Image),
			ImageRef: c.imageRef, ImageId: c.imageRef, State: c.state, CreatedAt: c.createdAt,
			Labels: maps.Clone(c.config.Labels), Annotations: maps.Clone(c.config.Annotations),
		})
	}
	return out, nil
}

// ContainerStatus implements runtime.RuntimeService.
func (r *Runtime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return r.answering().ContainerStatus(ctx, id, verbose)
}

func (b *bare) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ContainerStatus", &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return nil, err
	}
	image, imageRef := r.statusImage(c)
	st := &runtimeapi.ContainerStatus{
		Id: c.id, Metadata: clone(c.config.Metadata), State: c.state,
		CreatedAt: c.createdAt, StartedAt: c.startedAt, FinishedAt: c.exitedAt,
		Image: image, ImageRef: imageRef, ImageId: c.imageRef,
		Labels: maps.Clone(c.config.Labels), Annotations: maps.Clone(c.config.Annotations),
		Mounts: cloneAll(c.config.Mounts), LogPath: c.logPath,
	}
	if lr := c.config.GetLinux().GetResources(); lr != nil && c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		st.Resources = &runtimeapi.ContainerResources{Linux: clone(lr)}
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		st.ExitCode, st.Reason, st.Message = c.exit.Code, c.exit.Reason, c.exit.Message
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// ExecSync implements runtime.RuntimeService; the container must be running.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	return r.answering().ExecSync(ctx, id, cmd, timeout)
}

func (b *bare) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ExecSync", &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: append([]string(nil), cmd...), Timeout: int64(timeout.Seconds())}); err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	c, err := r.container(id)
	var running bool
	if err == nil {
		running = c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	onExec := r.onExec
	r.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	if !running {
		return nil, nil, fail(codes.FailedPrecondition, "container %q is not running", id)
	}
	if onExec == nil {
		return nil, nil, nil
	}
	stdout, stderr, code, err := onExec(id, cmd)
	if err != nil {
		return nil, nil, runtime.Classify(err)
	}
	if code != 0 {
		return stdout, stderr, &runtime.ExitError{Cmd: cmd, ExitCode: code, Stderr: stderr}
	}
	return stdout, stderr, nil
}

// ExitContainer ends a running container with e, as if its process exited.
func (r *Runtime) ExitContainer(id string, e Exit) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fail(codes.FailedPrecondition, "container %q is in %s state", id, c.state)
	}
	r.exitContainer(c, e)
	return nil
}

// KillSandbox makes a sandbox die outside of any CRI call, as when its
// pause process is killed: it becomes not ready and its containers exit 137.
func (r *Runtime) KillSandbox(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return fail(codes.NotFound, "sandbox %q: not found", id)
	}
	r.stopSandbox(s)
	return nil
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// clone deep-copies a CRI message so callers and the fake never share state.
func clone[T proto.Message](m T) T {
	if m.ProtoReflect().IsValid() {
		return proto.Clone(m).(T)
	}
	return m
}

func cloneAll[T proto.Message](ms []T) []T {
	if ms == nil {
		return nil
	}
	out := make([]T, len(ms))
	for i, m := range ms {
		out[i] = clone(m)
	}
	return out
}

// joinLogPath is containerd's: the container's log path is relative to
// its sandbox's log directory; either may be empty.
func joinLogPath(dir, path string) string {
	if dir == "" || path == "" {
		return path
	}
	return filepath.Join(dir, path)
}

// statusImage gives containerd's ContainerStatus.Image and ImageRef
// (internal/cri/server/container_status.go): while the image is present,
// its first repo tag and its first repo digest; the config's image spec and
// the image ID otherwise. Callers hold mu.
func (r *Runtime) statusImage(c *container) (*runtimeapi.ImageSpec, string) {
	spec, ref := clone(c.config.Image), c.imageRef
	if img, ok := r.images[c.imageRef]; ok {
		if len(img.RepoTags) > 0 {
			spec = &runtimeapi.ImageSpec{Image: img.RepoTags[0]}
		}
		if len(img.RepoDigests) > 0 {
			ref = img.RepoDigests[0]
		}
	}
	return spec, ref
}

// UpdateContainerResources implements runtime.ResourceUpdater: the
// container's resources change (ContainerStatus reports them, as
// containerd does) if it is created or running.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error {
	return r.answering().UpdateContainerResources(ctx, id, resources)
}

func (b *bare) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "UpdateContainerResources", &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: clone(resources.GetLinux())}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return fail(codes.FailedPrecondition, "container %q is not running or created", id)
	}
	if c.config.Linux == nil {
		c.config.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	c.config.Linux.Resources = clone(resources.GetLinux())
	return nil
}

// ContainerStats implements runtime.ContainerStatsReader: the memory use
// set with SetMemoryUsage (0 until then), for a container that exists.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	return r.answering().ContainerStats(ctx, id)
}

func (b *bare) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	r := (*Runtime)(b)
	if err := r.enter(ctx, "ContainerStats", &runtimeapi.ContainerStatsRequest{ContainerId: id}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return nil, err
	}
	return r.statsOf(c), nil
}

// SetMemoryUsage sets the memory a container uses, as ContainerStats
// reports it.
func (r *Runtime) SetMemoryUsage(id string, bytes uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.container(id)
	if err != nil {
		return err
	}
	c.memory = bytes
	return nil
}
