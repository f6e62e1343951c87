package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
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

// ErrSkipEnvVar is returned (or wrapped) by EnvResolver.ValueFrom when an
// optional reference is absent: the variable is not set.
var ErrSkipEnvVar = errors.New("optional environment variable source absent")

// Environment is the container's environment as SyncPod sends it, in
// order, for tools and tests that want to see it without a runtime.
// podIPs are the pod's IPs (status.podIP and status.podIPs references).
func (s *Syncer) Environment(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIPs []string) ([]criconfig.EnvVar, error) {
	env, _, err := s.environment(ctx, pod, c, podIPs)
	return env, err
}

// environment builds the container's environment: envFrom first, then env
// in order, each value's $(VAR) expanded from what came before, as kubelet
// does. Field references to the pod's name, namespace, UID, IP, node and
// service account need no resolver. Keys of one envFrom source are added
// in sorted order (kubelet's order is a map's, random), so the config is
// the same from one sync to the next.
func (s *Syncer) environment(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIPs []string) ([]criconfig.EnvVar, map[string]string, error) {
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
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.Value != "" {
			// kubelet expands a non-empty value and reads valueFrom only
			// without one (the API server allows only one of them).
			set(e.Name, expansion.Expand(e.Value, expansion.MappingFor(env)))
			continue
		}
		v, ok, err := criconfig.FieldRefValue(pod, c, e.ValueFrom, podIPs, s.o.node)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			if e.ValueFrom.FileKeyRef != nil {
				// EnvFiles is on by default since v1.35: kubelet reads the
				// key from a file in the pod's emptyDir volume.
				return nil, nil, fmt.Errorf("environment variable %q of container %q uses fileKeyRef, which podsync does not resolve: %w", e.Name, c.Name, criconfig.ErrUnsupported)
			}
			if resolver == nil {
				return nil, nil, fmt.Errorf("environment variable %q of container %q uses valueFrom, which needs an EnvResolver (podsync.WithEnvResolver)", e.Name, c.Name)
			}
			var err error
			if v, err = resolver.ValueFrom(ctx, pod, c, e); errors.Is(err, ErrSkipEnvVar) {
				continue
			} else if err != nil {
				return nil, nil, err
			}
		}
		set(e.Name, v)
	}
	kv := make([]criconfig.EnvVar, 0, len(order))
	for _, k := range order {
		kv = append(kv, criconfig.EnvVar{Name: k, Value: env[k]})
	}
	return kv, env, nil
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
func (s *Syncer) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, restartCount int, imageRef string, podIPs []string, volumes func() (mounts.VolumeMap, error)) (*runtimeapi.ContainerConfig, error) {
	envs, envMap, err := s.environment(ctx, pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	vols, err := volumes()
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(criconfig.PodLogDir(s.o.node, pod), c.Name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create container log directory for container %s failed: %v", c.Name, err)
	}
	ms, err := mounts.Make(ctx, mounts.Request{Pod: pod, Container: c, Volumes: vols, PodDir: criconfig.PodDir(s.o.node, pod), PodIPs: podIPs, Env: envMap}, s.o.mountOpts...)
	if err != nil {
		return nil, err
	}
	user, err := s.imageUser(ctx, pod, c, imageRef)
	if err != nil {
		return nil, err
	}
	return criconfig.ContainerConfig(criconfig.Container{Pod: pod, Container: c, RestartCount: restartCount, ImageRef: imageRef,
		ImageUser: user, Env: envs, Mounts: criconfig.CRIMounts(ms, s.o.node.SELinuxEnabled)}, s.o.node)
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
