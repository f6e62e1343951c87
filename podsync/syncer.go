package podsync

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/runtime"
)

// ImageEnsurer makes sure a container's image is present;
// *images.Manager is one.
type ImageEnsurer interface {
	EnsureImageExists(ctx context.Context, pod *corev1.Pod, container *corev1.Container, pullSecrets []corev1.Secret, sandboxConfig *runtimeapi.PodSandboxConfig) (imageRef, message string, err error)
}

// Step is one thing SyncPod did, reported as it happens (WithTrace).
type Step struct {
	// Name is "kill-pod", "kill", "remove", "sandbox", "pull", "create",
	// "start" or "post-start".
	Name      string
	Container string // empty for pod-level steps
	Duration  time.Duration
	Err       error
}

// Option configures a Syncer.
type Option func(*options)

type options struct {
	recorder     images.EventRecorder
	clock        clock.Clock
	backoff      *BackOff
	backoffInit  time.Duration
	backoffMax   time.Duration
	probes       ProbeResults
	volumes      VolumeProvider
	env          EnvResolver
	node         criconfig.Node
	imageService runtime.ImageService
	handler      func(*corev1.Pod) string
	mountOpts    []mounts.Option
	httpClient   *http.Client
	trace        func(Step)
	mounter      mounts.Mounter
	devices      Devices
	preparer     ResourcePreparer // WithResourcePreparer (prepare.go)
}

// Defaults, as kubelet's.
const (
	DefaultRootDir    = "/var/lib/kubelet"
	DefaultPodLogsDir = "/var/log/pods"
)

// EventRecorder is images.EventRecorder, the method set of client-go's
// record.EventRecorder, named here for packages above podsync.
type EventRecorder = images.EventRecorder

// WithRecorder sets where events go (default: nowhere).
func WithRecorder(r EventRecorder) Option { return func(o *options) { o.recorder = r } }

// WithClock sets the clock for back-off and durations.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithBackOff sets the restart back-off's (CrashLoopBackOff's) initial and
// maximum delay (default: DefaultBackOffInitial, DefaultBackOffMax), as
// images.WithBackOff does for pulls. The back-off runs on the Syncer's
// clock.
func WithBackOff(initial, max time.Duration) Option {
	return func(o *options) { o.backoffInit, o.backoffMax = initial, max }
}

// WithSharedBackOff makes the Syncer use b as its restart back-off, so
// several Syncers (or a Syncer rebuilt after a restart) share one. It
// overrides WithBackOff's delays; nil means a new back-off.
func WithSharedBackOff(b *BackOff) Option { return func(o *options) { o.backoff = b } }

// WithProbes gives liveness and startup results (default: none yet).
func WithProbes(p ProbeResults) Option { return func(o *options) { o.probes = p } }

// WithVolumes sets the volume provider (default: DefaultVolumes under the
// root dir).
func WithVolumes(v VolumeProvider) Option { return func(o *options) { o.volumes = v } }

// WithMounter sets the Mounter that reads the mount table before a pod
// directory is removed and unmounts the pod's memory-backed volumes
// (UnmountMemoryVolumes), and that the default volume provider mounts
// emptyDir medium Memory volumes with (default: the host's,
// mounts.HostMounter). Tests without the privilege to mount pass
// mounts/fake's.
func WithMounter(m mounts.Mounter) Option { return func(o *options) { o.mounter = m } }

// Devices supplies what a node's device plugins and DRA drivers add to a
// container (kubelet's containerManager.GetResources):
// devices, CDI device names, mounts, environment and annotations. An
// error fails the container's start (CreateContainerConfigError), as
// kubelet's GenerateRunContainerOptions does.
type Devices interface {
	DeviceOptions(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error)
}

// WithDevices sets where containers' devices come from
// (default: none). Without it, nothing is added, and a pod that asks for
// devices must be refused before it reaches the Syncer (admission:
// extended resources the node does not have; criconfig: resource claims).
func WithDevices(d Devices) Option {
	return func(o *options) { o.devices = d }
}

// WithEnvResolver resolves valueFrom and envFrom.
func WithEnvResolver(r EnvResolver) Option { return func(o *options) { o.env = r } }

// WithNode describes the node as kubelet's configuration would (root and
// log dirs, cluster DNS and domain, resolv.conf, cgroups, seccomp root,
// SELinux, AppArmor, memory, huge pages): the sandbox and container
// configs are built for it (criconfig). Fields left zero that kubelet reads
// from the host (memory, huge pages, cgroup version, the node's IP and
// allocatable, the content of the resolv.conf) are read from this host
// (criconfig.FromHost). Default: kubelet's defaults on this host
// (resolv.conf /etc/resolv.conf, Node.NoResolvConf for none), no cluster
// DNS: ClusterFirst pods then get the node's resolv.conf and a
// MissingClusterDNS warning, as kubelet's.
// Options apply in order: WithNode replaces what WithRootDir and the like
// set before it.
func WithNode(n criconfig.Node) Option {
	return func(o *options) { o.node = n }
}

// WithRootDir sets kubelet's root dir (pod directories live under
// <dir>/pods); the same as Node.RootDir.
func WithRootDir(dir string) Option { return func(o *options) { o.node.RootDir = dir } }

// WithPodLogsDir sets the root of pod log directories (default
// /var/log/pods); the same as Node.PodLogsDir.
func WithPodLogsDir(dir string) Option { return func(o *options) { o.node.PodLogsDir = dir } }

// WithClusterDomain sets the cluster domain for hostnames, DNS searches
// and /etc/hosts; the same as Node.ClusterDomain. The default is
// kubelet's, none (no cluster searches; a subdomain's domain ends in
// ".svc.").
func WithClusterDomain(d string) Option { return func(o *options) { o.node.ClusterDomain = d } }

// WithSELinux says SELinux is enabled on the node, so mounts ask to be
// relabelled; the same as Node.SELinuxEnabled.
func WithSELinux(enabled bool) Option { return func(o *options) { o.node.SELinuxEnabled = enabled } }

// WithImageService sets where the image's user is read (ImageStatus) to
// verify runAsNonRoot and to run as it (default: the runtime given to
// NewSyncer, when it is also an ImageService).
func WithImageService(is runtime.ImageService) Option {
	return func(o *options) { o.imageService = is }
}

// WithRuntimeHandler sets how a pod's runtime handler is found.
func WithRuntimeHandler(f func(*corev1.Pod) string) Option { return func(o *options) { o.handler = f } }

// WithMountOptions passes options to mounts.Make.
func WithMountOptions(opts ...mounts.Option) Option {
	return func(o *options) { o.mountOpts = append(o.mountOpts, opts...) }
}

// WithHTTPClient sets the client for HTTP lifecycle hooks (default: as
// kubelet's, TLS unverified, no redirect to another host, 30 s timeout).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithTrace receives each step as it finishes.
func WithTrace(f func(Step)) Option { return func(o *options) { o.trace = f } }

// Syncer carries out ComputePodActions over CRI: kubelet's SyncPod and
// startContainer as a library. It keeps no pod state of its own (the
// runtime holds it; the restart back-off is shared through BackOff; the
// status cache only saves asking the runtime twice), so a new Syncer over
// the same runtime carries on where another stopped.
// Pods must be defaulted as the API server does (defaults.Pod for a pod
// that did not come from one): empty fields are not read as their defaults.
type Syncer struct {
	rt     runtime.RuntimeService
	images ImageEnsurer
	o      options
	cache  *StatusCache

	actuated *actuatedStore
	stopped  stoppedSandboxes
}

// NewSyncer returns a Syncer over rt that pulls images with ims. A nil ims
// is an images.Manager with kubelet's defaults over the image service
// (rt, or WithImageService's), on the Syncer's clock and recorder, so one
// WithClock reaches pulls, back-offs and durations alike.
func NewSyncer(rt runtime.RuntimeService, ims ImageEnsurer, opts ...Option) *Syncer {
	o := options{clock: clock.RealClock{}, handler: func(*corev1.Pod) string { return "" }, httpClient: lifecycleHTTPClient(),
		backoffInit: DefaultBackOffInitial, backoffMax: DefaultBackOffMax}
	for _, opt := range opts {
		opt(&o)
	}
	o.nilDefaults()
	if o.node.RootDir == "" {
		o.node.RootDir = DefaultRootDir
	}
	if o.node.PodLogsDir == "" {
		o.node.PodLogsDir = DefaultPodLogsDir
	}
	o.node = criconfig.FromHost(o.node)
	if o.imageService == nil {
		o.imageService, _ = rt.(runtime.ImageService)
	}
	if o.mounter == nil {
		o.mounter = hostMounter
	}
	if o.recorder == nil {
		o.recorder = nopRecorder{}
	}
	if o.backoff == nil {
		o.backoff = NewBackOff(o.clock, o.backoffInit, o.backoffMax)
	}
	if ims == nil {
		if o.imageService == nil {
			ims = missingImageService{}
		} else {
			ims = images.NewManager(o.imageService, images.WithClock(o.clock), images.WithRecorder(o.recorder))
		}
	}
	if o.volumes == nil {
		o.volumes = DefaultVolumes{RootDir: o.node.RootDir, Mounter: o.mounter, NodeAllocatable: o.node.Allocatable}
	}
	o.mountOpts = append([]mounts.Option{mounts.WithClusterDomain(o.node.ClusterDomain)}, o.mountOpts...)
	// Mounts are made only for the pod SyncPod has just checked.
	o.mountOpts = append(o.mountOpts, mounts.WithCheckedPod())
	if o.node.UserNamespaces && o.node.UserNamespaceMapper == nil {
		// Kubelet's defaults cannot fail its checks.
		if u, err := NewUserNamespaces(o.node.RootDir, 0, 0, 0, 0); err == nil {
			o.node.UserNamespaceMapper = u
		}
	}
	actuated := newActuatedStore(o.node.RootDir)
	cache := NewStatusCache(rt)
	cache.actuated, cache.clock = actuated, o.clock
	return &Syncer{rt: rt, images: ims, o: o, cache: cache, actuated: actuated}
}

// Runtime returns the runtime the Syncer was made over.
func (s *Syncer) Runtime() runtime.RuntimeService { return s.rt }

// Clock returns the Syncer's clock (WithClock; default the real one).
func (s *Syncer) Clock() clock.Clock { return s.o.clock }

// missingImageService is the image ensurer of a Syncer with neither an
// ImageEnsurer nor an image service: every pull fails, naming why.
type missingImageService struct{}

func (missingImageService) EnsureImageExists(context.Context, *corev1.Pod, *corev1.Container, []corev1.Secret, *runtimeapi.PodSandboxConfig) (string, string, error) {
	return "", "", fmt.Errorf("%w: the runtime serves no images: give NewSyncer an ImageEnsurer or WithImageService", images.ErrImagePull)
}

// BackOff returns the Syncer's restart back-off.
func (s *Syncer) BackOff() *BackOff { return s.o.backoff }

// Status rebuilds the pod's PodStatus from the runtime alone, from the
// labels and annotations SyncPod writes: sandboxes and container instances
// newest first, the pod IPs of the newest sandbox when it is ready. It
// lists the pod's sandboxes and containers and asks for the details of
// only the instances that are new or changed since the Syncer last looked
// (StatusCache).
func (s *Syncer) Status(ctx context.Context, pod *corev1.Pod) (*PodStatus, error) {
	return s.cache.PodStatus(ctx, pod)
}

// StatusCache returns the Syncer's status cache, so a node-wide relist
// (StatusCache.Relist) and Status share what they learnt.
func (s *Syncer) StatusCache() *StatusCache { return s.cache }

func ipsOf(ips []*runtimeapi.PodIP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.Ip)
	}
	return out
}

func toContainerStatus(c *runtimeapi.Container, s *runtimeapi.ContainerStatus) *ContainerStatus {
	cs := &ContainerStatus{
		ID: s.Id, Name: s.GetMetadata().GetName(), SandboxID: c.PodSandboxId,
		CreatedAt: unixNano(s.CreatedAt), StartedAt: unixNano(s.StartedAt), FinishedAt: unixNano(s.FinishedAt),
		ExitCode: int(s.ExitCode), Reason: s.Reason, Message: s.Message,
		Image: s.GetImage().GetImage(), ImageRef: s.ImageRef,
		LogPath: s.LogPath, Annotations: s.Annotations, Resources: containerResourcesOf(s.Resources),
		User: s.User,
	}
	if name := s.Labels[LabelContainerName]; name != "" {
		cs.Name = name
	}
	cs.Hash, _ = strconv.ParseUint(s.Annotations[AnnotationContainerHash], 16, 64)
	cs.RestartCount, _ = strconv.Atoi(s.Annotations[AnnotationContainerRestartCount])
	if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		if msg := terminationMessage(s, cs.ExitCode, cs.Reason); msg != "" {
			if cs.Message != "" {
				cs.Message += ": "
			}
			cs.Message += msg
		}
	}
	switch s.State {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		cs.State = ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		cs.State = ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		cs.State = ContainerStateExited
	default:
		cs.State = ContainerStateUnknown
	}
	return cs
}

// neverStarted: created, and no start ever reached the runtime.
func neverStarted(cs *ContainerStatus) bool {
	return cs.State == ContainerStateCreated && cs.StartedAt.IsZero()
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// missingClusterDNS is kubelet's MissingClusterDNS warning, on the node
// (when its name is known) and on the pod, for a ClusterFirst pod on a
// node without cluster DNS: the pod gets the node's resolv.conf instead.
func (s *Syncer) missingClusterDNS(pod *corev1.Pod, podRef *corev1.ObjectReference) {
	if name := s.o.node.Name; name != "" {
		s.o.recorder.Eventf(&corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}, corev1.EventTypeWarning, "MissingClusterDNS", "%s", criconfig.MissingClusterDNSMessage)
	}
	s.o.recorder.Eventf(podRef, corev1.EventTypeWarning, "MissingClusterDNS", "pod: %q. %s", podName(pod), criconfig.MissingClusterDNSMessage)
}

func podName(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

func (s *Syncer) traced(name, container string, f func() error) error {
	start := s.o.clock.Now()
	err := f()
	if s.o.trace != nil {
		s.o.trace(Step{Name: name, Container: container, Duration: s.o.clock.Since(start), Err: err})
	}
	return err
}

// SyncPod brings the pod one step closer to its spec, in kubelet v1.37's
// order: compute the actions; kill the pod or the containers that must go;
// create the sandbox; resize running containers in place; build the
// sandbox config if a container is to start; start ephemeral, then init,
// then app containers. A
// regular init container that fails to start ends the sync; an app
// container that fails does not stop the others. Called repeatedly, it
// converges the pod.
func (s *Syncer) SyncPod(ctx context.Context, pod *corev1.Pod, status *PodStatus, pullSecrets []corev1.Secret) (result Result) {
	if err := validatePod(pod); err != nil {
		result.SyncError = err
		return result
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("pod", pod.Namespace+"/"+pod.Name)
	status = readOnly(status)
	if pod.DeletionTimestamp != nil {
		// Kubelet's pod worker sends a deleted pod to syncTerminatingPod:
		// killed with its effective grace period, never started again.
		grace := EffectiveGracePeriod(pod, nil)
		log.V(3).Info("Pod is being deleted: killing it", "gracePeriod", grace)
		return s.KillPod(ctx, pod, status, &grace)
	}
	seeded, err := s.actuated.seed(pod, status)
	if err != nil {
		log.Error(err, "Failed to record the resources running containers were created with")
	}
	if status.ActuatedResources == nil || seeded {
		status.ActuatedResources = s.actuated.get(pod.UID)
	}
	actions := ComputePodActions(pod, status, s.o.probes)
	if v := log.V(3); v.Enabled() { // the string costs more than the decision
		v.Info("Computed pod actions", "actions", actions.String())
	}
	// The pod's volumes and service variables are resolved once per
	// sync, on first need.
	inputs := s.podInputs(ctx, pod)
	// Kubelet remounts a running pod's Secret, ConfigMap, downward API
	// and projected volumes at every sync (WaitForAttachAndMount); here
	// at the end of the sync, unless a container start set them up.
	defer func() {
		if !actions.KillPod && !inputs.volumesDone && hasRunningContainer(status) {
			s.remount(ctx, pod, &result)
		}
	}()
	podRef := images.ContainerRef(pod, nil)
	if actions.CreateSandbox && actions.SandboxID != "" {
		s.o.recorder.Eventf(podRef, corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
	}

	// Kill.
	if actions.KillPod && (len(status.SandboxStatuses) > 0 || len(status.ContainerStatuses) > 0) {
		kill := s.KillPod(ctx, pod, status, nil)
		result.Results = append(result.Results, kill.Results...)
		if kill.Error() != nil {
			return result
		}
		if actions.CreateSandbox {
			s.purgeInitContainers(ctx, pod, status)
		}
	} else {
		for _, id := range sortedKeys(actions.ContainersToKill) {
			k := actions.ContainersToKill[id]
			sr := result.add(ActionKillContainer, k.Name)
			start := s.o.clock.Now()
			if err := s.killContainer(ctx, pod, k.Container, id, k.Message, k.Reason); err != nil {
				sr.Err, sr.Message = stepError(ErrKillContainer, err), err.Error()
				sr.Duration = s.o.clock.Since(start)
				return result
			}
			sr.Duration = s.o.clock.Since(start)
		}
	}
	s.pruneInitContainers(ctx, pod, status)
	if actions.CreateSandbox {
		// Kubelet prepares DRA claims right before it creates the sandbox
		// (and before the sandbox config, which may warn): prepare.go.
		if err := s.prepareResources(ctx, pod); err != nil {
			result.SyncError = err
			return result
		}
	}

	podIPs := status.IPs
	sandboxID := actions.SandboxID
	// Kubelet v1.37 builds the sandbox config only when it creates the
	// sandbox or starts a container: a pod with nothing to start does not
	// fail its sync on a config error.
	toStart := len(actions.EphemeralContainersToStart) + len(actions.InitContainersToStart) + len(actions.ContainersToStart)
	var sandboxConfig *runtimeapi.PodSandboxConfig
	var cfgErr error
	if actions.CreateSandbox || toStart > 0 {
		sandboxConfig, cfgErr = s.SandboxConfig(pod, actions.Attempt)
		if cfgErr == nil && criconfig.MissingClusterDNS(pod, s.o.node) {
			// Kubelet's GetPodDNS warns each time it builds the sandbox
			// config: to create the sandbox, and to start containers.
			n := 0
			if actions.CreateSandbox {
				n++
			}
			if toStart > 0 {
				n++
			}
			for range n {
				s.missingClusterDNS(pod, podRef)
			}
		}
	}
	if actions.CreateSandbox {
		sr := result.add(ActionCreatePodSandbox, podName(pod))
		start := s.o.clock.Now()
		id, ips, msg, err := s.createSandbox(ctx, pod, sandboxConfig, cfgErr)
		sr.Duration = s.o.clock.Since(start)
		if err != nil {
			sr.Err, sr.Message = err, msg
			s.o.recorder.Eventf(podRef, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", msg)
			return result
		}
		sandboxID = id
		if !pod.Spec.HostNetwork {
			podIPs = ips
		}
	}
	if pod.Spec.HostNetwork && len(podIPs) == 0 {
		// Kubelet passes SyncPod its API status's IPs, which for a
		// host-network pod are the node's (generateAPIPodStatus): env
		// fieldRefs and hooks see them. Unknown node IPs leave none, and a
		// fieldRef to them is refused (criconfig.ErrUnknownNodeFact).
		podIPs = criconfig.NodeHostIPs(s.o.node.HostIPs)
	}
	podIP := ""
	if len(podIPs) > 0 {
		podIP = podIPs[0]
	}

	// Kubelet v1.37 resizes running containers before it starts any
	// (step 6 of its SyncPod), whatever becomes of the starts.
	if len(actions.ContainersToUpdate) > 0 {
		sr := result.add(ActionResizePodInPlace, podName(pod))
		t0 := s.o.clock.Now()
		s.o.recorder.Eventf(podRef, corev1.EventTypeNormal, "ResizeStarted", "%s", resizeEvent(pod, "Pod resize started", ""))
		s.resize(ctx, pod, actions, sr)
		sr.Duration = s.o.clock.Since(t0)
		if sr.Err != nil {
			s.o.recorder.Eventf(podRef, corev1.EventTypeWarning, "ResizeError", "%s", resizeEvent(pod, "Pod resize error", sr.Message))
		} else {
			s.o.recorder.Eventf(podRef, corev1.EventTypeNormal, "ResizeCompleted", "%s", resizeEvent(pod, "Pod resize completed", ""))
		}
	}
	if toStart > 0 && cfgErr != nil {
		// Kubelet records no ConfigPodSandbox step: the sync fails.
		result.SyncError = fmt.Errorf("GeneratePodSandboxConfig for pod %q failed: %w", podName(pod), stepError(ErrConfigPodSandbox, cfgErr))
		return result
	}

	start := func(kind string, c *corev1.Container) error {
		sr := result.add(ActionStartContainer, c.Name)
		t0 := s.o.clock.Now()
		defer func() { sr.Duration = s.o.clock.Since(t0) }()
		if inBackOff, msg, until := s.doBackOff(pod, c, status); inBackOff {
			sr.Err, sr.Message = &BackOffError{Reason: ErrCrashLoopBackOff, Until: until}, msg
			return sr.Err
		}
		msg, err := s.startContainer(ctx, sandboxID, sandboxConfig, c, pod, status, pullSecrets, podIP, podIPs, inputs)
		if err != nil {
			sr.Err, sr.Message = err, msg
			log.V(2).Info("Failed to start "+kind, "container", c.Name, "err", err, "message", msg)
		}
		return err
	}
	for _, i := range actions.EphemeralContainersToStart {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		start("ephemeral container", &c)
	}
	for _, i := range actions.InitContainersToStart {
		c := &pod.Spec.InitContainers[i]
		if err := start("init container", c); err != nil && !IsRestartableInitContainer(c) {
			return result
		}
	}
	for _, i := range actions.ContainersToStart {
		start("container", &pod.Spec.Containers[i])
	}
	return result
}

func sortedKeys(m map[string]ContainerToKill) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// doBackOff is kubelet's crash-loop check on the newest exited instance;
// the back-off ends at its finish time plus the delay.
func (s *Syncer) doBackOff(pod *corev1.Pod, c *corev1.Container, status *PodStatus) (bool, string, time.Time) {
	var exited *ContainerStatus
	for _, cs := range status.ContainerStatuses {
		if cs.Name == c.Name && cs.State == ContainerStateExited {
			exited = cs
			break
		}
	}
	if exited == nil {
		return false, "", time.Time{}
	}
	if in, delay := s.o.backoff.Check(Key(pod, c), exited.FinishedAt); in {
		s.o.recorder.Eventf(images.ContainerRef(pod, c), corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, podName(pod))
		return true, fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, podName(pod)), exited.FinishedAt.Add(delay)
	}
	return false, "", time.Time{}
}

func (s *Syncer) createSandbox(ctx context.Context, pod *corev1.Pod, cfg *runtimeapi.PodSandboxConfig, cfgErr error) (id string, ips []string, msg string, err error) {
	err = s.traced("sandbox", "", func() error {
		if cfgErr != nil {
			msg = cfgErr.Error()
			return stepError(ErrCreatePodSandbox, cfgErr)
		}
		if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
			msg = fmt.Sprintf("Failed to create log directory for pod %q: %v", podName(pod), err)
			return stepError(ErrCreatePodSandbox, err)
		}
		var err error
		if id, err = s.rt.RunPodSandbox(ctx, cfg, s.o.handler(pod)); err != nil {
			err = runtime.Classify(err)
			msg = err.Error()
			return stepError(ErrCreatePodSandbox, err)
		}
		resp, err := s.rt.PodSandboxStatus(ctx, id, false)
		if err != nil {
			err = runtime.Classify(err)
			msg = err.Error()
			return stepError(ErrCreatePodSandbox, err)
		}
		if resp.GetStatus() == nil {
			msg = "pod sandbox status is nil"
			return stepError(ErrCreatePodSandbox, errors.New(msg))
		}
		if n := resp.Status.GetNetwork(); n != nil && n.Ip != "" {
			ips = append([]string{n.Ip}, ipsOf(n.AdditionalIps)...)
		}
		return nil
	})
	return id, ips, msg, err
}

// startContainer is kubelet's: pull, create, start, post-start hook.
func (s *Syncer) startContainer(ctx context.Context, sandboxID string, sandboxConfig *runtimeapi.PodSandboxConfig, c *corev1.Container, pod *corev1.Pod, status *PodStatus, pullSecrets []corev1.Secret, podIP string, podIPs []string, inputs *podInputs) (string, error) {
	ref := images.ContainerRef(pod, c)
	inputs.pullImageVolumes(ctx, pullSecrets, sandboxConfig)
	if msg, err := inputs.imageVolumeError(c); err != nil {
		return msg, err
	}
	var imageRef, msg string
	err := s.traced("pull", c.Name, func() (err error) {
		imageRef, msg, err = s.images.EnsureImageExists(ctx, pod, c, pullSecrets, sandboxConfig)
		return err
	})
	if err != nil {
		s.o.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return msg, err
	}

	restartCount := 0
	if cs := status.FindContainerStatusByName(c.Name); cs != nil && neverStarted(cs) {
		// An instance created but never started: the answer to its
		// CreateContainer was lost, or its start never came. It did not
		// run, so its attempt is reused rather than counted as a restart,
		// and it goes first: the runtime holds its name.
		if err := runtime.Classify(s.rt.RemoveContainer(ctx, cs.ID)); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			msg = fmt.Sprintf("remove container %s that never started: %v", cs.ID, err)
			s.o.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", msg)
			return msg, stepError(ErrCreateContainer, err)
		}
		restartCount = cs.RestartCount
	} else if cs != nil {
		restartCount = cs.RestartCount + 1
	} else {
		restartCount = inputs.firstRestartCount(c.Name)
	}
	var id string
	err = s.traced("create", c.Name, func() error {
		cfg, err := s.containerConfig(ctx, pod, c, restartCount, imageRef, podIPs, inputs)
		if err != nil {
			msg = err.Error()
			return stepError(ErrCreateContainerConfig, err)
		}
		// As kubelet, the resources count as applied once the config
		// carrying them is made.
		if err := s.actuated.set(pod.UID, c.Name, ResourceValuesOf(pod.Spec.Resources, &c.Resources)); err != nil {
			msg = err.Error()
			return stepError(ErrCreateContainerConfig, err)
		}
		if id, err = s.rt.CreateContainer(ctx, sandboxID, cfg, sandboxConfig); err != nil {
			err = runtime.Classify(err)
			msg = err.Error()
			return stepError(ErrCreateContainer, err)
		}
		return nil
	})
	if err != nil {
		s.o.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", msg)
		return msg, err
	}
	s.o.recorder.Eventf(ref, corev1.EventTypeNormal, "Created", "Created container %s", c.Name)

	err = s.traced("start", c.Name, func() error {
		if err := s.rt.StartContainer(ctx, id); err != nil {
			err = runtime.Classify(err)
			msg = err.Error()
			return stepError(ErrRunContainer, err)
		}
		return nil
	})
	if err != nil {
		s.o.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", msg)
		return msg, err
	}
	s.o.recorder.Eventf(ref, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)

	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		err = s.traced("post-start", c.Name, func() error {
			msg, err = s.runHook(ctx, pod, c, id, c.Lifecycle.PostStart, podIP)
			return err
		})
		if err != nil {
			s.o.recorder.Eventf(ref, corev1.EventTypeWarning, "FailedPostStartHook", "%s", msg)
			if kerr := s.killContainer(ctx, pod, c, id, "FailedPostStartHook", KillReasonFailedPostStartHook); kerr != nil {
				logr.FromContextOrDiscard(ctx).Error(kerr, "Failed to kill container after its post-start hook failed", "container", c.Name)
			}
			return msg, stepError(ErrPostStartHook, err)
		}
	}
	return "", nil
}

// purgeInitContainers is kubelet's: every init container instance is
// removed (with its log file) before a new sandbox is initialised. As in
// kubelet the status is left as it was, so the next attempt counts on from
// the last restart count and the crash-loop back-off still sees the last
// exit; a failed removal is only logged (the collector retries it).
func (s *Syncer) purgeInitContainers(ctx context.Context, pod *corev1.Pod, status *PodStatus) {
	inits := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		inits[c.Name] = true
	}
	for _, cs := range status.ContainerStatuses {
		if !inits[cs.Name] {
			continue
		}
		if cs.LogPath != "" {
			_ = s.removeUnder(s.o.node.PodLogsDir, cs.LogPath)
		}
		if err := runtime.Classify(s.rt.RemoveContainer(ctx, cs.ID)); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			logr.FromContextOrDiscard(ctx).Error(err, "Failed to remove pod init container", "container", cs.Name, "id", cs.ID)
		}
	}
}

// pruneInitContainers keeps, per init container, only the newest exited or
// unknown instance.
func (s *Syncer) pruneInitContainers(ctx context.Context, pod *corev1.Pod, status *PodStatus) {
	inits := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		inits[c.Name] = true
	}
	seen := map[string]bool{}
	for _, cs := range status.ContainerStatuses {
		if !inits[cs.Name] || cs.State != ContainerStateExited && cs.State != ContainerStateUnknown {
			continue
		}
		if !seen[cs.Name] {
			seen[cs.Name] = true
			continue
		}
		_ = s.rt.RemoveContainer(ctx, cs.ID)
	}
}

type nopRecorder struct{}

func (nopRecorder) Eventf(_ apiruntime.Object, _, _, _ string, _ ...interface{}) {}
