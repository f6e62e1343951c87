package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/internal/envfile"
	"github.com/podstart/podstart/internal/expansion"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/runtime"
)

// PodLogDir is kubelet's log directory of a pod: <root>/<ns>_<name>_<uid>.
func PodLogDir(root string, pod *corev1.Pod) string {
	return criconfig.PodLogDir(criconfig.Node{PodLogsDir: root}, pod)
}

// PodDir is kubelet's directory of a pod: <root>/pods/<uid>.
func PodDir(root string, pod *corev1.Pod) string {
	return criconfig.PodDir(criconfig.Node{RootDir: root}, pod)
}

// SandboxConfig is the sandbox config kubelet would send for the pod on
// the Syncer's node (criconfig.SandboxConfig).
func (s *Syncer) SandboxConfig(pod *corev1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	return criconfig.SandboxConfig(pod, attempt, s.o.node)
}

// EnvResolver resolves what a pod spec cannot say by itself: valueFrom
// (configMapKeyRef, secretKeyRef) and envFrom. Callers with an API client
// supply one (apiobjects.Env resolves them from Secrets and ConfigMaps).
//
// ValueFrom returns an error matching ErrSkipEnvVar when an optional
// reference is absent: the variable is then left out, and a value of the
// same name from envFrom stays, as kubelet's makeEnvironmentVariables
// does. EnvFrom returns the source's keys without its prefix; the Syncer
// adds it.
type EnvResolver interface {
	ValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env corev1.EnvVar) (string, error)
	EnvFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src corev1.EnvFromSource) (map[string]string, error)
}

// ContainerEnvResolver is an optional interface of an EnvResolver. The
// Syncer calls ForContainer once each time it builds a container's
// environment and resolves that container's references through the
// resolver returned, so a resolver can fetch each object once per
// container, as kubelet caches them within one makeEnvironmentVariables.
type ContainerEnvResolver interface {
	ForContainer(pod *corev1.Pod, c *corev1.Container) EnvResolver
}

// ServiceEnvResolver is an optional interface of an EnvResolver: the
// variables kubelet's getServiceEnvVarMap adds for Services
// (KUBERNETES_SERVICE_HOST, FOO_PORT_80_TCP_ADDR, ...; see
// criconfig.ServiceEnv). apiobjects.Env is one when given a
// ServiceLister. The Syncer asks once per sync, when it first builds a
// container's environment, and gives every container started in that
// sync the same answer: kubelet asks its informer's cache for each
// container, but a resolver may list from the API server, and one list
// per sync keeps a pod's containers consistent with each other. An error
// fails the container, as in kubelet. Without a ServiceEnvResolver no
// service variable is added, as kubelet without an API client adds none.
type ServiceEnvResolver interface {
	ServiceEnv(ctx context.Context, pod *corev1.Pod) (map[string]string, error)
}

// ErrSkipEnvVar is returned (or wrapped) by EnvResolver.ValueFrom when an
// optional reference is absent: the variable is not set.
var ErrSkipEnvVar = errors.New("optional environment variable source absent")

// ErrNotEmptyDir: a fileKeyRef names a volume that is not an emptyDir
// volume. The API server refuses such a pod; podsync, which takes pods
// from anywhere, refuses it too rather than read another volume's files
// with its own privileges.
var ErrNotEmptyDir = errors.New("referenced volume must be of type emptyDir")

// EnvFileError is a fileKeyRef whose env file cannot be opened, read or
// parsed. Its message is kubelet's, which leaves out the reason (logged
// by podsync at error level, as kubelet logs it); Err holds it.
type EnvFileError struct {
	Path string // the file on the host
	Err  error
}

func (e *EnvFileError) Error() string { return "couldn't parse env file" }

func (e *EnvFileError) Unwrap() error { return e.Err }

// podInputs is what the containers started in one sync share, each part
// resolved on first need and at most once. SyncPod starts containers one
// after the other, so it is used by one goroutine at a time.
type podInputs struct {
	s   *Syncer
	ctx context.Context
	pod *corev1.Pod

	volumesDone, servicesDone bool
	vols                      mounts.VolumeMap
	imagesPulled              bool                       // pullImageVolumes ran
	imageVols                 map[string]imageVolumePull // by volume name
	withImages                mounts.VolumeMap           // vols and the pulled image volumes
	services                  map[string]string
	volErr, servicesErr       error

	logDir, podDir string          // the pod's log and pod directories, on first need
	madeLogDirs    map[string]bool // container log directories this sync created
}

// podLogDir is criconfig.PodLogDir, computed once per sync.
func (in *podInputs) podLogDir() string {
	if in.logDir == "" {
		in.logDir = criconfig.PodLogDir(in.s.o.node, in.pod)
	}
	return in.logDir
}

// podDirectory is criconfig.PodDir, computed once per sync.
func (in *podInputs) podDirectory() string {
	if in.podDir == "" {
		in.podDir = criconfig.PodDir(in.s.o.node, in.pod)
	}
	return in.podDir
}

// firstRestartCount is the restart count of a container the runtime has
// no instance of: kubelet's calcRestartCountByLogDir over the container's
// log directory. The directory is made here rather than with the config
// (kubelet makes it there): a directory that did not exist holds no log,
// so the count is 0 without reading it, which is the common case of every
// new pod; one that exists is read as kubelet reads it.
func (in *podInputs) firstRestartCount(container string) int {
	dir := in.podLogDir() + "/" + container
	if err := os.Mkdir(dir, 0o755); err == nil {
		if in.madeLogDirs == nil {
			in.madeLogDirs = map[string]bool{}
		}
		in.madeLogDirs[container] = true
		return 0
	}
	return restartCountFromLogs(dir)
}

func (s *Syncer) podInputs(ctx context.Context, pod *corev1.Pod) *podInputs {
	return &podInputs{s: s, ctx: ctx, pod: pod}
}

func (in *podInputs) volumes() (mounts.VolumeMap, error) {
	if !in.volumesDone {
		if d, ok := in.s.o.volumes.(DefaultVolumes); ok {
			in.vols, in.volErr = d.checkedVolumes(in.pod) // SyncPod checked the pod
		} else {
			in.vols, in.volErr = in.s.o.volumes.Volumes(in.ctx, in.pod)
		}
		in.volumesDone = true
	}
	if in.volErr != nil || len(in.imageVols) == 0 {
		return in.vols, in.volErr
	}
	if in.withImages == nil {
		in.withImages = in.addImageVolumes(in.vols)
	}
	return in.withImages, nil
}

func (in *podInputs) serviceEnv() (map[string]string, error) {
	if !in.servicesDone {
		if r, ok := in.s.o.env.(ServiceEnvResolver); ok {
			in.services, in.servicesErr = r.ServiceEnv(in.ctx, in.pod)
		}
		in.servicesDone = true
	}
	return in.services, in.servicesErr
}

// Environment is the container's environment as SyncPod sends it, in
// order, for tools and tests that want to see it without a runtime.
// podIPs are the pod's IPs (status.podIP and status.podIPs references).
// Service variables are asked for on each call; the pod's volumes are
// resolved (WithVolumes) only if a fileKeyRef needs them.
func (s *Syncer) Environment(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIPs []string) ([]criconfig.EnvVar, error) {
	env, _, err := s.environment(ctx, pod, c, podIPs, s.podInputs(ctx, pod))
	return env, err
}

// environment is kubelet's makeEnvironmentVariables: envFrom first, then
// env in order, each value's $(VAR) expanded from what came before and
// then from the service variables, as kubelet does; last the service
// variables that neither set, in sorted order (kubelet appends them after
// the others, in a map's order). Field references to the pod's name,
// namespace, UID, IP, node and service account and fileKeyRef need no
// resolver. Keys of one envFrom source are added in sorted order
// (kubelet's order is a map's, random), so the config is the same from one
// sync to the next. The map returned holds every variable, for
// subPathExpr.
func (s *Syncer) environment(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIPs []string, in *podInputs) ([]criconfig.EnvVar, map[string]string, error) {
	services, err := in.serviceEnv()
	if err != nil {
		return nil, nil, err
	}
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	resolver := s.o.env
	if scoped, ok := resolver.(ContainerEnvResolver); ok {
		resolver = scoped.ForContainer(pod, c)
	}
	for _, src := range c.EnvFrom {
		if resolver == nil {
			return nil, nil, fmt.Errorf("container %q uses envFrom, which needs an EnvResolver (podsync.WithEnvResolver)", c.Name)
		}
		vals, err := resolver.EnvFrom(ctx, pod, c, src)
		if err != nil {
			return nil, nil, err
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(src.Prefix+k, vals[k])
		}
	}
	mapping := expansion.MappingFor(env, services)
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.Value != "" {
			// kubelet expands a non-empty value and reads valueFrom only
			// without one (the API server allows only one of them).
			set(e.Name, expansion.Expand(e.Value, mapping))
			continue
		}
		v, ok, err := criconfig.FieldRefValue(pod, c, e.ValueFrom, podIPs, s.o.node)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			var err error
			// kubelet's order: a Secret or ConfigMap reference first.
			if ref := e.ValueFrom.FileKeyRef; ref != nil && e.ValueFrom.ConfigMapKeyRef == nil && e.ValueFrom.SecretKeyRef == nil {
				v, err = s.fileKeyValue(ctx, pod, c, e.Name, ref, in)
			} else if resolver == nil {
				return nil, nil, fmt.Errorf("environment variable %q of container %q uses valueFrom, which needs an EnvResolver (podsync.WithEnvResolver)", e.Name, c.Name)
			} else {
				v, err = resolver.ValueFrom(ctx, pod, c, e)
			}
			if errors.Is(err, ErrSkipEnvVar) {
				continue
			} else if err != nil {
				return nil, nil, err
			}
		}
		set(e.Name, v)
	}
	if len(services) > 0 {
		names := make([]string, 0, len(services))
		for k := range services {
			if _, ok := env[k]; !ok {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			set(k, services[k])
		}
	}
	kv := make([]criconfig.EnvVar, 0, len(order))
	for _, k := range order {
		kv = append(kv, criconfig.EnvVar{Name: k, Value: env[k]})
	}
	return kv, env, nil
}

// fileKeyValue is kubelet's fileKeyRef (EnvFiles, beta and on since
// v1.35): the key's value in the env file at the reference's path inside
// the named volume, as mounted on the host, the path resolved within the
// volume (symlinks included) as kubelet's securejoin does, and the file
// opened scoped to the volume. A key the file
// does not set, or sets to "", is left out when optional and an error
// otherwise, as in kubelet; an optional reference does not excuse a file
// that is missing or malformed.
func (s *Syncer) fileKeyValue(ctx context.Context, pod *corev1.Pod, c *corev1.Container, name string, ref *corev1.FileKeySelector, in *podInputs) (string, error) {
	vols, err := in.volumes()
	if err != nil {
		return "", err
	}
	vol, ok := vols[ref.VolumeName]
	if !ok || vol.HostPath == "" {
		return "", fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
	}
	if !isEmptyDir(pod, ref.VolumeName) {
		return "", fmt.Errorf("environment variable %q of container %q: fileKeyRef volume %q: %w", name, c.Name, ref.VolumeName, ErrNotEmptyDir)
	}
	path, err := securejoin.SecureJoin(vol.HostPath, ref.Path)
	if err != nil {
		return "", err
	}
	v, err := envfile.LookupInRoot(vol.HostPath, ref.Path, path, ref.Key)
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Failed to parse env file", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name)
		return "", &EnvFileError{Path: path, Err: err}
	}
	if v == "" {
		if ref.Optional != nil && *ref.Optional {
			return "", ErrSkipEnvVar
		}
		return "", fmt.Errorf("environment variable key %q not found in file %q", ref.Key, path)
	}
	return v, nil
}

func isEmptyDir(pod *corev1.Pod, volume string) bool {
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.Name == volume {
			return v.EmptyDir != nil
		}
	}
	return false
}

// restartCountFromLogs is kubelet's calcRestartCountByLogDir, its
// fallback when no status exists: the largest N among the container's
// files whose names start with N.log (kubelet's ^(\d+)\.log(\..*)?, which
// takes rotated logs too), plus one.
func restartCountFromLogs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	count := 0
	for _, e := range entries {
		name := e.Name()
		digits := len(name) - len(strings.TrimLeft(name, "0123456789"))
		if e.IsDir() || digits == 0 || !strings.HasPrefix(name[digits:], ".log") {
			continue
		}
		if n, err := strconv.Atoi(name[:digits]); err == nil && n+1 > count {
			count = n + 1
		}
	}
	return count
}

// containerConfig is kubelet's generateContainerConfig: the environment,
// the mounts and the image's user, then criconfig.ContainerConfig.
func (s *Syncer) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, restartCount int, imageRef string, podIPs []string, in *podInputs) (*runtimeapi.ContainerConfig, error) {
	var res criconfig.DeviceOptions
	if s.o.devices != nil {
		r, err := s.o.devices.DeviceOptions(ctx, pod, c)
		if err != nil {
			return nil, err
		}
		res = r
	}
	envs, envMap, err := s.environment(ctx, pod, c, podIPs, in)
	if err != nil {
		return nil, err
	}
	if len(res.Env) > 0 {
		// Kubelet's opts.Envs: the devices' variables first, the
		// container's appended; subPathExpr sees them all.
		envs = append(append(make([]criconfig.EnvVar, 0, len(res.Env)+len(envs)), res.Env...), envs...)
		m := make(map[string]string, len(envMap)+len(res.Env))
		for _, e := range res.Env {
			m[e.Name] = e.Value
		}
		for k, v := range envMap {
			m[k] = v
		}
		envMap = m
	}
	vols, err := in.volumes()
	if err != nil {
		return nil, err
	}
	if !in.madeLogDirs[c.Name] {
		if err := os.MkdirAll(in.podLogDir()+"/"+c.Name, 0o755); err != nil {
			return nil, fmt.Errorf("create container log directory for container %s failed: %v", c.Name, err)
		}
	}
	ms, err := mounts.Make(ctx, mounts.Request{Pod: pod, Container: c, Volumes: vols, PodDir: in.podDirectory(), PodIPs: podIPs, Env: envMap}, s.o.mountOpts...)
	if err != nil {
		return nil, err
	}
	user, err := s.imageUser(ctx, pod, c, imageRef)
	if err != nil {
		return nil, err
	}
	criMounts := criconfig.CRIMounts(ms, s.o.node.SELinuxEnabled)
	if len(res.Mounts) > 0 {
		criMounts = append(append(make([]*runtimeapi.Mount, 0, len(res.Mounts)+len(criMounts)), res.Mounts...), criMounts...)
	}
	return criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: c, RestartCount: restartCount, ImageRef: imageRef,
		ImageUser: user, Env: envs, Mounts: criMounts, Devices: res.Devices, CDIDevices: res.CDIDevices, Annotations: res.Annotations}, s.o.node)
}

// imageUser is kubelet's getImageUser: the image's user from ImageStatus.
// Without an ImageService the user is unknown: no user is sent, so the
// runtime applies the image's own USER (sending uid 0 would run a non-root
// image as root), and runAsNonRoot, which cannot be verified, is refused.
func (s *Syncer) imageUser(ctx context.Context, pod *corev1.Pod, c *corev1.Container, imageRef string) (criconfig.ImageUser, error) {
	if s.o.imageService == nil {
		if eff := criconfig.EffectiveSecurityContext(pod, c); eff.RunAsNonRoot != nil && *eff.RunAsNonRoot && eff.RunAsUser == nil {
			return criconfig.ImageUser{}, fmt.Errorf("container has runAsNonRoot and its image's user cannot be verified without an image service (podsync.WithImageService) (container: %s): %w", c.Name, criconfig.ErrRunAsNonRoot)
		}
		return criconfig.ImageUser{}, nil
	}
	resp, err := s.o.imageService.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef}, false)
	if err != nil {
		return criconfig.ImageUser{}, fmt.Errorf("image status of %q: %w", imageRef, runtime.Classify(err))
	}
	return criconfig.ImageUserFromStatus(resp.GetImage()), nil
}
