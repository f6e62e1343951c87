package devices

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/admission"
	"github.com/podstart/podstart/devicemanager"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

const (
	resourceName = "example.com/resource" // the sample plugin's
	namespace    = "podstart-devices"
	// pluginDir is where the sample plugin looks, in its own mount
	// namespace only.
	pluginDir = "/var/lib/kubelet/device-plugins"
)

type tier struct {
	rt       *runtime.Client
	image    string
	plugin   string
	dir      string // the Manager's directory
	root     string
	changes  chan string
	syncer   *podsync.Syncer
	imageMgr *images.Manager
}

func setup(t *testing.T) *tier {
	t.Helper()
	if os.Getenv("PODSTART_DEVICES_REQUIRED") != "1" {
		t.Skip("the device plugin tier runs from test/devices/run.sh (PODSTART_DEVICES_REQUIRED=1)")
	}
	endpoint, image, plugin := os.Getenv("PODSTART_CRI_ENDPOINT"), os.Getenv("PODSTART_E2E_OPEN_IMAGE"), os.Getenv("PODSTART_DEVICES_PLUGIN")
	if endpoint == "" || image == "" || plugin == "" {
		t.Fatal("PODSTART_CRI_ENDPOINT, PODSTART_E2E_OPEN_IMAGE and PODSTART_DEVICES_PLUGIN must be set (run.sh sets them)")
	}
	base := os.Getenv("PODSTART_DEVICES_DIR")
	if base == "" {
		base = "/tmp/podstart-dev"
	}
	dir := filepath.Join(base, "device-plugins")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Dial(ctx, endpoint, runtime.WithConnectTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	tr := &tier{rt: rt, image: image, plugin: plugin, dir: dir, root: filepath.Join(base, "root"), changes: make(chan string, 1024)}
	tr.imageMgr = images.NewManager(rt)
	t.Cleanup(func() { tr.imageMgr.Close() })
	return tr
}

// manager starts a Manager on the tier's directory; with devices it is
// podsync's source of device options.
func (tr *tier) manager(t *testing.T) *devicemanager.Manager {
	t.Helper()
	m, err := devicemanager.New(devicemanager.WithDir(tr.dir), devicemanager.WithOnChange(func(r string) { tr.changes <- r }))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	tr.syncer = podsync.NewSyncer(tr.rt, tr.imageMgr, podsync.WithRootDir(tr.root), podsync.WithPodLogsDir(filepath.Join(tr.root, "logs")), podsync.WithDevices(m))
	return m
}

// startPlugin runs the sample plugin in a mount namespace of its own, with
// a tmpfs over /var/lib and the tier's directory at pluginDir: the
// host's /var/lib/kubelet is never touched.
func (tr *tier) startPlugin(t *testing.T) *exec.Cmd {
	t.Helper()
	logf, err := os.Create(filepath.Join(filepath.Dir(tr.dir), fmt.Sprintf("plugin-%d.log", time.Now().UnixNano())))
	if err != nil {
		t.Fatal(err)
	}
	script := `mount -t tmpfs tmpfs /var/lib && mkdir -p "$3" && mount --bind "$1" "$3" && exec "$2" -v=4`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", tr.dir, tr.plugin, pluginDir)
	cmd.Env = append(os.Environ(), "PLUGIN_SOCK_DIR="+pluginDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		logf.Close()
		for _, f := range []string{"/tmp/Dev-1", "/tmp/Dev-2"} { // the sample plugin's fake devices
			if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
				os.Remove(f)
			}
		}
	})
	return cmd
}

// waitCapacity waits, change by change, until the Manager reports the
// resource with capacity and allocatable.
func (tr *tier) waitCapacity(t *testing.T, m *devicemanager.Manager, capacity, allocatable int64) {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		c, a, _ := m.Capacity()
		cq, aq := c[resourceName], a[resourceName]
		if _, ok := c[resourceName]; ok && cq.Value() == capacity && aq.Value() == allocatable {
			return
		}
		select {
		case <-tr.changes:
		case <-deadline:
			t.Fatalf("capacity %v allocatable %v, want %d and %d", c, a, capacity, allocatable)
		}
	}
}

func (tr *tier) newPod(t *testing.T, name string, devices int64) *corev1.Pod {
	t.Helper()
	c := corev1.Container{Name: "c", Image: tr.image, ImagePullPolicy: corev1.PullIfNotPresent,
		// Runs only with a device's file mounted.
		Command:   []string{"sh", "-c", "ls /tmp/Dev-* && exec sleep 3600"},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{resourceName: *resource.NewQuantity(devices, resource.DecimalSI)}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(fmt.Sprintf("dev-%s-%d", name, time.Now().UnixNano()))},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c}, SecurityContext: &corev1.PodSecurityContext{}},
	}
	t.Cleanup(func() { tr.removePod(t, pod) })
	return pod
}

func (tr *tier) removePod(t *testing.T, pod *corev1.Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sbs, err := tr.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{podsync.LabelPodUID: string(pod.UID)}})
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, sb := range sbs {
		_ = tr.rt.StopPodSandbox(ctx, sb.Id)
		if err := tr.rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// converge syncs the pod until its container runs (a node agent's loop,
// polling the runtime between syncs that had nothing to do).
func (tr *tier) converge(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := tr.syncer.Status(ctx, pod)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if cs := st.FindContainerStatusByName("c"); cs != nil {
			if cs.State == podsync.ContainerStateRunning {
				cancel()
				return cs.ID
			}
			if cs.State == podsync.ContainerStateExited {
				cancel()
				t.Fatalf("container exited (%d): the device's file was not mounted", cs.ExitCode)
			}
		}
		r := tr.syncer.SyncPod(ctx, pod, st, nil)
		cancel()
		if err := r.Error(); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if len(r.Results) == 0 {
			time.Sleep(50 * time.Millisecond) // the runtime's containers run on their own time
		}
	}
	t.Fatal("pod did not run in 2 min")
	return ""
}

// mounts are the container's mounts of the sample plugin's devices.
func (tr *tier) mounts(t *testing.T, id string) []string {
	t.Helper()
	st, err := tr.rt.ContainerStatus(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mt := range st.Status.Mounts {
		if strings.HasPrefix(mt.ContainerPath, "/tmp/Dev-") {
			out = append(out, mt.ContainerPath+"="+mt.HostPath)
		}
	}
	return out
}

// TestSampleDevicePlugin: the sample plugin registers (2 devices); a pod
// asking for one runs with its mount; a pod asking for two more is
// refused with kubelet's message; the Manager restarts, the plugin
// registers again and the running pod keeps its device, so a new pod gets
// the other one; the plugin dies and its devices turn unhealthy.
func TestSampleDevicePlugin(t *testing.T) {
	tr := setup(t)
	m := tr.manager(t)
	plugin := tr.startPlugin(t)
	tr.waitCapacity(t, m, 2, 2)

	first := tr.newPod(t, "first", 1)
	ctx := context.Background()
	if err := m.Admit(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	id := tr.converge(t, first)
	got := tr.mounts(t, id)
	if len(got) != 1 || !(got[0] == "/tmp/Dev-1=/tmp/Dev-1" || got[0] == "/tmp/Dev-2=/tmp/Dev-2") {
		t.Fatalf("device mounts %v", got)
	}
	firstDevice := strings.Split(got[0], "=")[0]

	two := tr.newPod(t, "two", 2)
	err := m.Admit(ctx, two, []*corev1.Pod{first})
	var r *admission.Rejection
	if !errors.As(err, &r) || r.Reason() != "UnexpectedAdmissionError" ||
		r.Message() != "Allocate failed due to requested number of devices unavailable for example.com/resource. Requested: 2, Available: 1, which is unexpected" {
		t.Fatalf("Admit of two devices: %v", err)
	}

	// The agent restarts: a new Manager reads the checkpoint; the plugin
	// sees kubelet.sock created again and registers again.
	m.Stop()
	m = tr.manager(t)
	tr.waitCapacity(t, m, 2, 2)
	opts, err := m.DeviceOptions(ctx, first, &first.Spec.Containers[0])
	if err != nil || len(opts.Mounts) != 1 || opts.Mounts[0].ContainerPath != firstDevice {
		t.Fatalf("first pod's devices after the restart: %+v, %v", opts, err)
	}
	second := tr.newPod(t, "second", 1)
	if err := m.Admit(ctx, second, []*corev1.Pod{first}); err != nil {
		t.Fatal(err)
	}
	id2 := tr.converge(t, second)
	got2 := tr.mounts(t, id2)
	if len(got2) != 1 || strings.HasPrefix(got2[0], firstDevice+"=") {
		t.Fatalf("second pod's mounts %v (first pod has %s)", got2, firstDevice)
	}

	// The plugin dies: its devices stay in capacity, none allocatable.
	_ = plugin.Process.Signal(syscall.SIGKILL)
	tr.waitCapacity(t, m, 2, 0)
}
