package podsync_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// preparer records PrepareResources calls and what the runtime had done
// by then.
type preparer struct {
	mu        sync.Mutex
	h         *harness
	calls     []string
	sandboxes []int // RunPodSandbox calls seen at each prepare
	err       error
}

func (p *preparer) PrepareResources(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, pod.Name)
	p.sandboxes = append(p.sandboxes, p.h.fake.CallCount("RunPodSandbox"))
	return p.err
}

// Kubelet's SyncPod prepares a pod's dynamic resources right before it
// creates the sandbox, and only then: not at syncs of a running pod.
func TestPrepareResourcesBeforeSandbox(t *testing.T) {
	p := &preparer{}
	h := newHarness(t, false, []fake.Option{fake.WithStartFunc(exitInits(nil))}, podsync.WithResourcePreparer(p))
	p.h = h
	pod := demoPod()
	h.converge(pod, 10)
	h.sync(pod)
	if !slices.Equal(p.calls, []string{"web"}) || p.sandboxes[0] != 0 || h.fake.CallCount("RunPodSandbox") != 1 {
		t.Fatalf("prepares %v with %v sandboxes before; %d sandboxes", p.calls, p.sandboxes, h.fake.CallCount("RunPodSandbox"))
	}
	// The sandbox dies: the sync that makes a new one prepares again
	// first (drivers answer idempotently; the DRA manager does not call
	// them for claims it prepared).
	st, err := h.syncer.Status(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.StopPodSandbox(context.Background(), st.SandboxStatuses[0].Id); err != nil {
		t.Fatal(err)
	}
	h.converge(pod, 10)
	if !slices.Equal(p.calls, []string{"web", "web"}) || p.sandboxes[1] != 1 || h.fake.CallCount("RunPodSandbox") != 2 {
		t.Fatalf("prepares %v with %v sandboxes before; %d sandboxes", p.calls, p.sandboxes, h.fake.CallCount("RunPodSandbox"))
	}
}

// A failed prepare fails the sync with kubelet's event: no sandbox, no
// container; the next sync tries again.
func TestPrepareResourcesFailure(t *testing.T) {
	boom := errors.New("prepare dynamic resources: DRA driver gpu.example.com is not registered")
	p := &preparer{err: boom}
	h := newHarness(t, false, []fake.Option{fake.WithStartFunc(exitInits(nil))}, podsync.WithResourcePreparer(p))
	p.h = h
	pod := demoPod()
	r := h.sync(pod)
	err := r.Error()
	if !errors.Is(err, podsync.ErrPrepareResources) || !errors.Is(err, boom) {
		t.Fatalf("sync error %v", err)
	}
	if want := "failed to SyncPod: Failed to prepare dynamic resources: " + boom.Error(); err.Error() != want {
		t.Errorf("sync error\n %q\nwant\n %q", err, want)
	}
	if n := h.fake.CallCount("RunPodSandbox") + h.fake.CallCount("CreateContainer"); n != 0 {
		t.Fatalf("%d sandbox/container calls after a failed prepare", n)
	}
	if !h.ev.has("FailedPrepareDynamicResources: Failed to prepare dynamic resources: " + boom.Error()) {
		t.Errorf("events %v", h.ev.list)
	}
	p.mu.Lock()
	p.err = nil
	p.mu.Unlock()
	h.converge(pod, 10)
	if len(p.calls) != 2 {
		t.Errorf("prepares %v", p.calls)
	}
}

// JoinDevices asks its sources in order and joins their options in that
// order (kubelet: the DRA manager's CDI devices, then the device
// manager's); an error stops it.
func TestJoinDevices(t *testing.T) {
	draDevs := devicesFunc(func(*corev1.Pod, *corev1.Container) (criconfig.DeviceOptions, error) {
		return criconfig.DeviceOptions{CDIDevices: []string{"gpu.example.com/gpu=0"}}, nil
	})
	plugins := devicesFunc(func(*corev1.Pod, *corev1.Container) (criconfig.DeviceOptions, error) {
		return criconfig.DeviceOptions{
			Devices:     []*runtimeapi.Device{{HostPath: "/dev/fpga0", ContainerPath: "/dev/fpga0", Permissions: "rw"}},
			Mounts:      []*runtimeapi.Mount{{HostPath: "/opt/fpga", ContainerPath: "/opt/fpga"}},
			Env:         []criconfig.EnvVar{{Name: "FPGA", Value: "0"}},
			Annotations: map[string]string{"a": "plugin"},
			CDIDevices:  []string{"fpga.example.com/fpga=0"},
		}, nil
	})
	pod := demoPod()
	got, err := podsync.JoinDevices(draDevs, nil, plugins).DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.CDIDevices, []string{"gpu.example.com/gpu=0", "fpga.example.com/fpga=0"}) || len(got.Devices) != 1 ||
		len(got.Mounts) != 1 || len(got.Env) != 1 || got.Annotations["a"] != "plugin" {
		t.Fatalf("joined %+v", got)
	}
	bad := errors.New("unable to get claim info")
	asked := false
	_, err = podsync.JoinDevices(devicesFunc(func(*corev1.Pod, *corev1.Container) (criconfig.DeviceOptions, error) {
		return criconfig.DeviceOptions{}, bad
	}), devicesFunc(func(*corev1.Pod, *corev1.Container) (criconfig.DeviceOptions, error) {
		asked = true
		return criconfig.DeviceOptions{}, nil
	})).DeviceOptions(context.Background(), pod, &pod.Spec.Containers[0])
	if !errors.Is(err, bad) || asked {
		t.Fatalf("error %v, second asked %v", err, asked)
	}
}
