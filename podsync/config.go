package podsync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/expansion"
	"github.com/podstart/podstart/mounts"
)

// PodLogDir is kubelet's log directory of a pod: <root>/<ns>_<name>_<uid>.
func PodLogDir(root string, pod *corev1.Pod) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// PodDir is kubelet's directory of a pod: <root>/pods/<uid>.
func PodDir(root string, pod *corev1.Pod) string {
	return filepath.Join(root, "pods", string(pod.UID))
}

func namespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// SandboxConfig is kubelet's generatePodSandboxConfig: metadata with the
// attempt, kubelet's labels, the pod's annotations, hostname (none for a
// host-network pod), log directory, DNS, port mappings and namespaces.
func (s *Syncer) SandboxConfig(pod *corev1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Labels:       podLabels(pod),
		Annotations:  maps.Clone(pod.Annotations),
		LogDirectory: PodLogDir(s.o.podLogsDir, pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: namespaceOptions(pod)},
			Sysctls:         map[string]string{},
		},
	}
	if !pod.Spec.HostNetwork {
		cfg.Hostname, _ = mounts.HostnameAndDomain(pod, s.o.clusterDomain)
	}
	if s.o.dns != nil {
		dns, err := s.o.dns(pod)
		if err != nil {
			return nil, err
		}
		cfg.DnsConfig = dns
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, sysctl := range sc.Sysctls {
			// kubelet converts slash-separated names to dots.
			cfg.Linux.Sysctls[strings.ReplaceAll(sysctl.Name, "/", ".")] = sysctl.Value
		}
		if sc.RunAsUser != nil {
			cfg.Linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
		}
	}
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			pm := &runtimeapi.PortMapping{ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP}
			switch p.Protocol {
			case corev1.ProtocolUDP:
				pm.Protocol = runtimeapi.Protocol_UDP
			case corev1.ProtocolSCTP:
				pm.Protocol = runtimeapi.Protocol_SCTP
			}
			cfg.PortMappings = append(cfg.PortMappings, pm)
		}
	}
	return cfg, nil
}

func podLabels(pod *corev1.Pod) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelPodName], l[LabelPodNamespace], l[LabelPodUID] = pod.Name, pod.Namespace, string(pod.UID)
	return l
}

// EnvResolver resolves what a pod spec cannot say by itself: valueFrom
// (configMap, secret, resource and field references beyond the basic
// ones) and envFrom. Callers with an API client supply one.
type EnvResolver interface {
	ValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, env corev1.EnvVar) (string, error)
	EnvFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src corev1.EnvFromSource) (map[string]string, error)
}

// environment builds the container's environment: envFrom first, then env
// in order, each value's $(VAR) expanded from what came before, as kubelet
// does. Field references to the pod's name, namespace, UID, IP, node and
// service account need no resolver.
func (s *Syncer) environment(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIP string, podIPs []string) ([]*runtimeapi.KeyValue, map[string]string, error) {
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, src := range c.EnvFrom {
		if s.o.env == nil {
			return nil, nil, fmt.Errorf("container %q uses envFrom, which needs an EnvResolver (podsync.WithEnvResolver)", c.Name)
		}
		vals, err := s.o.env.EnvFrom(ctx, pod, c, src)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range vals {
			set(src.Prefix+k, v)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expansion.Expand(e.Value, expansion.MappingFor(env)))
			continue
		}
		v, ok := basicFieldRef(pod, e, podIP, podIPs)
		if !ok {
			if s.o.env == nil {
				return nil, nil, fmt.Errorf("environment variable %q of container %q uses valueFrom, which needs an EnvResolver (podsync.WithEnvResolver)", e.Name, c.Name)
			}
			var err error
			if v, err = s.o.env.ValueFrom(ctx, pod, c, e); err != nil {
				return nil, nil, err
			}
		}
		set(e.Name, v)
	}
	kv := make([]*runtimeapi.KeyValue, 0, len(order))
	for _, k := range order {
		kv = append(kv, &runtimeapi.KeyValue{Key: k, Value: []byte(env[k])})
	}
	return kv, env, nil
}

func basicFieldRef(pod *corev1.Pod, e corev1.EnvVar, podIP string, podIPs []string) (string, bool) {
	f := e.ValueFrom.FieldRef
	if f == nil {
		return "", false
	}
	switch f.FieldPath {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "status.podIP":
		return podIP, true
	case "status.podIPs":
		return strings.Join(podIPs, ","), true
	}
	return "", false
}

// resources is kubelet's calculateLinuxResources for the common fields:
// CPU shares from the request (the limit when there is no request), CFS
// quota from the CPU limit, and the memory limit.
func resources(c *corev1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	req, hasReq := c.Resources.Requests[corev1.ResourceCPU]
	lim, hasLim := c.Resources.Limits[corev1.ResourceCPU]
	if !hasReq && hasLim {
		req, hasReq = lim, true
	}
	shares := int64(2)
	if hasReq {
		shares = max(req.MilliValue()*1024/1000, 2)
	}
	r.CpuShares = shares
	if hasLim {
		const period = 100000
		r.CpuPeriod = period
		r.CpuQuota = max(lim.MilliValue()*period/1000, 1000)
	}
	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = mem.Value()
	}
	return r
}

// restartCountFromLogs is kubelet's fallback when no status exists: the
// largest N among the container's N.log files, plus one.
func restartCountFromLogs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	count := 0
	for _, e := range entries {
		name := e.Name()
		i := strings.Index(name, ".log")
		if i <= 0 {
			continue
		}
		if n, err := strconv.Atoi(name[:i]); err == nil && n+1 > count {
			count = n + 1
		}
	}
	return count
}

// containerConfig is kubelet's generateContainerConfig.
func (s *Syncer) containerConfig(ctx context.Context, pod *corev1.Pod, c *corev1.Container, restartCount int, imageRef, podIP string, podIPs []string, volumes func() (mounts.VolumeMap, error)) (*runtimeapi.ContainerConfig, error) {
	envs, envMap, err := s.environment(ctx, pod, c, podIP, podIPs)
	if err != nil {
		return nil, err
	}
	vols, err := volumes()
	if err != nil {
		return nil, err
	}
	ms, err := mounts.Make(ctx, mounts.Request{Pod: pod, Container: c, Volumes: vols, PodDir: PodDir(s.o.rootDir, pod), PodIPs: podIPs, Env: envMap}, s.o.mountOpts...)
	if err != nil {
		return nil, err
	}
	mapping := expansion.MappingFor(envMap)
	expand := func(in []string) []string {
		if in == nil {
			return nil
		}
		out := make([]string, len(in))
		for i, v := range in {
			out[i] = expansion.Expand(v, mapping)
		}
		return out
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     expand(c.Command),
		Args:        expand(c.Args),
		WorkingDir:  c.WorkingDir,
		Labels:      map[string]string{LabelPodName: pod.Name, LabelPodNamespace: pod.Namespace, LabelPodUID: string(pod.UID), LabelContainerName: c.Name},
		Annotations: containerAnnotations(pod, c, restartCount),
		Mounts:      mounts.ToCRI(ms, s.o.selinux),
		LogPath:     filepath.Join(c.Name, strconv.Itoa(restartCount)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Envs:        envs,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       resources(c),
			SecurityContext: containerSecurity(pod, c),
		},
	}
	return cfg, nil
}

func containerSecurity(pod *corev1.Pod, c *corev1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.Privileged != nil {
			sc.Privileged = *csc.Privileged
		}
		if csc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *csc.RunAsUser}
		}
		if csc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *csc.RunAsGroup}
		}
		if csc.ReadOnlyRootFilesystem != nil {
			sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
		}
		if caps := csc.Capabilities; caps != nil {
			sc.Capabilities = &runtimeapi.Capability{}
			for _, c := range caps.Add {
				sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(c))
			}
			for _, c := range caps.Drop {
				sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(c))
			}
		}
	}
	return sc
}

func containerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:            strconv.FormatUint(HashContainer(c), 16),
		AnnotationContainerRestartCount:    strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[AnnotationContainerPreStopHandler] = string(b)
		}
	}
	if len(c.Ports) > 0 {
		if b, err := json.Marshal(c.Ports); err == nil {
			a[AnnotationContainerPorts] = string(b)
		}
	}
	return a
}
