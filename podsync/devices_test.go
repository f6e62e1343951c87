package podsync_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
)

// devicesFunc adapts a function to podsync.Devices.
type devicesFunc func(pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error)

func (f devicesFunc) DeviceOptions(_ context.Context, pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error) {
	return f(pod, c)
}

// A container's device options reach its ContainerConfig as kubelet's
// GenerateRunContainerOptions puts them: devices and CDI names as given,
// the devices' mounts before the volume mounts, their variables before the
// container's own (which win by coming later), their annotations under
// kubelet's own.
func TestDeviceOptionsInContainerConfig(t *testing.T) {
	opts := criconfig.DeviceOptions{
		Devices:     []*runtimeapi.Device{{HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rw"}},
		Mounts:      []*runtimeapi.Mount{{HostPath: "/var/lib/dev-a", ContainerPath: "/dev-a", Readonly: true}},
		Env:         []criconfig.EnvVar{{Name: "DEV", Value: "a"}, {Name: "SHARED", Value: "device"}},
		Annotations: map[string]string{"vendor.example.com/dev": "a", "io.kubernetes.container.restartCount": "99"},
		CDIDevices:  []string{"vendor.example.com/gpu=gpu0"},
	}
	asked := map[string]int{}
	h := newHarness(t, false, nil, podsync.WithDevices(devicesFunc(func(pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error) {
		asked[c.Name]++
		if c.Name != "gpu" {
			return criconfig.DeviceOptions{}, nil
		}
		return opts, nil
	})))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "ns", UID: "uid-dev"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Volumes:       []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{
				{Name: "gpu", Image: "busybox:1.35", Env: []corev1.EnvVar{{Name: "SHARED", Value: "container"}},
					VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}},
				{Name: "plain", Image: "busybox:1.35"},
			},
		},
	}
	h.converge(pod, 3)
	cfgs := h.createConfigs()
	cfg := cfgs["gpu"]
	if cfg == nil {
		t.Fatal("gpu not created")
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].HostPath != "/dev/fuse" || cfg.Devices[0].Permissions != "rw" {
		t.Errorf("devices %v, want /dev/fuse rw", cfg.Devices)
	}
	if len(cfg.CDIDevices) != 1 || cfg.CDIDevices[0].Name != "vendor.example.com/gpu=gpu0" {
		t.Errorf("CDI devices %v", cfg.CDIDevices)
	}
	if len(cfg.Mounts) < 2 || cfg.Mounts[0].ContainerPath != "/dev-a" || !cfg.Mounts[0].Readonly {
		t.Fatalf("mounts %v: the device's mount must come first", cfg.Mounts)
	}
	scratch := -1
	for i, m := range cfg.Mounts {
		if m.ContainerPath == "/scratch" {
			scratch = i
		}
	}
	if scratch < 1 {
		t.Errorf("volume mount /scratch at %d, want after the device's mount: %v", scratch, cfg.Mounts)
	}
	var names []string
	last := map[string]string{}
	for _, kv := range cfg.Envs {
		names = append(names, kv.Key)
		last[kv.Key] = string(kv.Value)
	}
	if len(names) < 3 || names[0] != "DEV" || names[1] != "SHARED" {
		t.Errorf("env order %v: the devices' variables come first", names)
	}
	if last["SHARED"] != "container" {
		t.Errorf("SHARED=%q last, want the container's own value to come last", last["SHARED"])
	}
	if cfg.Annotations["vendor.example.com/dev"] != "a" {
		t.Errorf("device annotation missing: %v", cfg.Annotations)
	}
	if got := cfg.Annotations["io.kubernetes.container.restartCount"]; got != "0" {
		t.Errorf("restartCount annotation %q: kubelet's own annotations win over the devices'", got)
	}
	if p := cfgs["plain"]; p == nil || len(p.Devices) != 0 || len(p.CDIDevices) != 0 {
		t.Errorf("plain container got devices: %v", p)
	}
	if asked["gpu"] != 1 || asked["plain"] != 1 {
		t.Errorf("asked %v, want each container once", asked)
	}
}

// A failure to give a container its devices fails that container's start
// with the error, and the container is not created.
func TestDeviceOptionsFailure(t *testing.T) {
	errNoDevice := errors.New("no device for you")
	h := newHarness(t, false, nil, podsync.WithDevices(devicesFunc(func(pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error) {
		return criconfig.DeviceOptions{}, errNoDevice
	})))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "ns", UID: "uid-dev"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "gpu", Image: "busybox:1.35"}}},
	}
	r := h.sync(pod)
	if err := r.Error(); !errors.Is(err, errNoDevice) {
		t.Fatalf("sync error %v, want the devices' error", err)
	}
	if len(h.createConfigs()) != 0 {
		t.Error("a container was created without its devices")
	}
}
