package criconfig

import (
	"encoding/json"
	"path/filepath"
	"strconv"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/expansion"
	"github.com/podstart/podstart/mounts"
)

// EnvVar is one resolved environment variable, in kubelet's order.
type EnvVar struct{ Name, Value string }

// Container is what ContainerConfig needs beyond the node: the pod and
// container, and what was learnt at run time.
type Container struct {
	Pod       *corev1.Pod
	Container *corev1.Container
	// RestartCount is the attempt: kubelet's restart count.
	RestartCount int
	// ImageRef is the image to run (the runtime's ID of the pulled image).
	ImageRef string
	// ImageUser is the image's user from ImageStatus (ImageUserFromStatus).
	ImageUser ImageUser
	// Env is the container's resolved environment, in kubelet's order.
	// podsync.Syncer.Environment resolves it (envFrom, env, $(VAR)
	// references, fieldRef through FieldRefValue, configMapKeyRef and
	// secretKeyRef through a podsync.EnvResolver such as apiobjects.Env,
	// and the Service variables).
	Env []EnvVar
	// Mounts are the container's mounts, already CRI mounts: CRIMounts
	// of what mounts.Make returns. With mounts.WithDisk(&mounts.MemDisk{})
	// Make touches no disk (see the ContainerConfig example).
	Mounts []*runtimeapi.Mount
	// Devices are the devices kubelet's device plugins would add.
	Devices []*runtimeapi.Device
	// CDIDevices are the fully qualified CDI device names
	// (vendor.com/class=name) that device plugins and DRA drivers asked
	// for: CRI ContainerConfig.CDIDevices, in their order.
	CDIDevices []string
	// Annotations are the annotations device plugins asked for (kubelet's
	// RunContainerOptions.Annotations); kubelet's own annotations win over
	// them.
	Annotations map[string]string
}

// DeviceOptions are what a node's device managers (device plugins, DRA
// drivers) add to one container: kubelet's RunContainerOptions from
// containerManager.GetResources. podsync.WithDevices takes a source of
// them.
type DeviceOptions struct {
	// Devices go to ContainerConfig.Devices.
	Devices []*runtimeapi.Device
	// Mounts come before the container's volume mounts, as kubelet's
	// GenerateRunContainerOptions puts them.
	Mounts []*runtimeapi.Mount
	// Env comes before the container's own environment (kubelet appends
	// the container's to it), so a variable the container sets wins.
	Env []EnvVar
	// Annotations are added under kubelet's own container annotations.
	Annotations map[string]string
	// CDIDevices are fully qualified CDI device names.
	CDIDevices []string
}

// ContainerConfig is kubelet's generateContainerConfig with its Linux
// part: runAsNonRoot verified against the image's user, command and args
// with $(VAR) expanded, labels and annotations, log path, the effective
// security context (seccomp, AppArmor, SELinux, user and groups, no new
// privileges, masked and read-only paths, namespaces) and resources (CPU,
// memory, OOM score by QoS class, huge pages, swap).
func ContainerConfig(in Container, node Node) (*runtimeapi.ContainerConfig, error) {
	pod, c := in.Pod, in.Container
	if err := checkContainer(pod, c, node); err != nil {
		return nil, err
	}
	if err := checkVolumeDevices(c, in.Devices); err != nil {
		return nil, err
	}
	if err := VerifyRunAsNonRoot(pod, c, in.ImageUser); err != nil {
		return nil, err
	}
	env := make(map[string]string, len(in.Env))
	kv := make([]*runtimeapi.KeyValue, len(in.Env))
	for i, e := range in.Env {
		env[e.Name] = e.Value
		kv[i] = &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)}
	}
	mapping := expansion.MappingFor(env)
	expand := func(in []string) []string {
		if len(in) == 0 {
			return nil
		}
		out := make([]string, len(in))
		for i, v := range in {
			out[i] = expansion.Expand(v, mapping)
		}
		return out
	}
	sc, err := containerSecurity(pod, c, in.ImageUser, node)
	if err != nil {
		return nil, err
	}
	mounts := in.Mounts
	if u := sc.GetNamespaceOptions().GetUsernsOptions(); u.GetMode() == runtimeapi.NamespaceMode_POD {
		// Kubelet's applyPlatformSpecificContainerConfig: every mount is
		// ID-mapped as the pod's user namespace.
		mounts = make([]*runtimeapi.Mount, len(in.Mounts))
		for i, m := range in.Mounts {
			cp := proto.Clone(m).(*runtimeapi.Mount)
			cp.UidMappings, cp.GidMappings = u.Uids, u.Gids
			mounts[i] = cp
		}
	}
	res, err := containerResources(pod, c, node)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(in.RestartCount)},
		Image:       &runtimeapi.ImageSpec{Image: in.ImageRef, UserSpecifiedImage: c.Image},
		Command:     expand(c.Command),
		Args:        expand(c.Args),
		WorkingDir:  c.WorkingDir,
		Labels:      ContainerLabels(pod, c),
		Annotations: containerAnnotations(pod, c, in.RestartCount, in.Annotations),
		Devices:     in.Devices,
		CDIDevices:  cdiDevices(in.CDIDevices),
		Mounts:      mounts,
		LogPath:     filepath.Join(c.Name, strconv.Itoa(in.RestartCount)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Envs:        kv,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       res,
			SecurityContext: sc,
		},
	}, nil
}

// ContainerLabels are kubelet's container labels.
func ContainerLabels(pod *corev1.Pod, c *corev1.Container) map[string]string {
	return map[string]string{LabelPodName: pod.Name, LabelPodNamespace: pod.Namespace, LabelPodUID: string(pod.UID), LabelContainerName: c.Name}
}

// ContainerAnnotations are kubelet's container annotations: hash, restart
// count, termination message settings, grace periods, the preStop handler
// and the ports, as JSON.
func ContainerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int) map[string]string {
	return containerAnnotations(pod, c, restartCount, nil)
}

// containerAnnotations is kubelet's newContainerAnnotations: the device
// plugins' annotations first, kubelet's own set over them.
func containerAnnotations(pod *corev1.Pod, c *corev1.Container, restartCount int, extra map[string]string) map[string]string {
	a := make(map[string]string, len(extra)+8)
	for k, v := range extra {
		a[k] = v
	}
	a[AnnotationContainerHash] = strconv.FormatUint(HashContainer(c), 16)
	a[AnnotationContainerRestartCount] = strconv.Itoa(restartCount)
	a[AnnotationTerminationMessagePath] = c.TerminationMessagePath
	a[AnnotationTerminationMessagePolicy] = string(c.TerminationMessagePolicy)
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

// cdiDevices is kubelet's makeCDIDevices.
func cdiDevices(names []string) []*runtimeapi.CDIDevice {
	if len(names) == 0 {
		return nil
	}
	out := make([]*runtimeapi.CDIDevice, len(names))
	for i, n := range names {
		out[i] = &runtimeapi.CDIDevice{Name: n}
	}
	return out
}

// CRIMounts converts mounts (from mounts.Make) to CRI mounts. SELinux
// relabelling is asked for only when selinuxEnabled (kubelet: when SELinux
// is enabled on the node). An image volume's mount names its image and
// subPath and no host path: the runtime mounts the image (kubelet's
// Mount.Image and ImageSubPath).
func CRIMounts(ms []mounts.Mount, selinuxEnabled bool) []*runtimeapi.Mount {
	out := make([]*runtimeapi.Mount, len(ms))
	for i, m := range ms {
		out[i] = &runtimeapi.Mount{
			ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.ReadOnly,
			RecursiveReadOnly: m.RecursiveReadOnly, SelinuxRelabel: m.SELinuxRelabel && selinuxEnabled,
			Propagation: runtimeapi.MountPropagation(m.Propagation),
		}
		if img := m.Image; img != nil {
			out[i].Image = &runtimeapi.ImageSpec{Image: img.Ref, UserSpecifiedImage: img.Requested, RuntimeHandler: img.RuntimeHandler, Annotations: img.Annotations}
			out[i].ImageSubPath = m.ImageSubPath
		}
	}
	return out
}
