package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/internal/wiretest"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, reason+": "+fmt.Sprintf(format, args...))
}

func (e *events) has(prefix string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

var always = corev1.ContainerRestartPolicyAlways

// demoPod: two regular init containers around a sidecar, two apps.
func demoPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			InitContainers: []corev1.Container{
				{Name: "init-a", Image: "busybox:1.35"},
				{Name: "proxy", Image: "envoy:1", RestartPolicy: &always},
				{Name: "init-b", Image: "busybox:1.35"},
			},
			Containers: []corev1.Container{
				{Name: "app", Image: "nginx:1", TerminationMessagePath: "/dev/termination-log"},
				{Name: "web", Image: "nginx:1"},
			},
		},
	}
}

// exitInits makes regular init containers (named init-*) finish with the
// code in codes (default 0).
func exitInits(codes map[string]int32) fake.StartFunc {
	return func(c *runtimeapi.ContainerConfig) *fake.Exit {
		name := c.Metadata.Name
		if !strings.HasPrefix(name, "init-") {
			return nil
		}
		return &fake.Exit{Code: codes[name]}
	}
}

type harness struct {
	t      *testing.T
	fake   *fake.Runtime
	rt     runtime.Runtime
	clk    *testingclock.FakeClock
	ev     *events
	ims    *images.Manager
	syncer *podsync.Syncer
	root   string
	opts   []podsync.Option
}

// newHarness builds the fake runtime on the harness's clock, so exit times
// and back-off agree.
func newHarness(t *testing.T, wire bool, fopts []fake.Option, opts ...podsync.Option) *harness {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	f := fake.New(append([]fake.Option{fake.WithClock(clk)}, fopts...)...)
	h := &harness{t: t, fake: f, rt: f, clk: clk, ev: &events{}, root: t.TempDir()}
	if wire {
		h.rt, _ = wiretest.Serve(t, f)
	}
	h.ims = images.NewManager(h.rt, images.WithRecorder(h.ev), images.WithClock(h.clk))
	t.Cleanup(func() { h.ims.Close() })
	h.opts = append([]podsync.Option{podsync.WithRecorder(h.ev), podsync.WithClock(h.clk),
		podsync.WithRootDir(h.root), podsync.WithPodLogsDir(filepath.Join(h.root, "logs"))}, opts...)
	h.syncer = podsync.NewSyncer(h.rt, h.ims, h.opts...)
	return h
}

// restart replaces the Syncer, as a restarted agent process would, keeping
// only the back-off that kubelet also keeps in memory... or not.
func (h *harness) restart() {
	h.syncer = podsync.NewSyncer(h.rt, h.ims, h.opts...)
}

func (h *harness) sync(pod *corev1.Pod) podsync.Result {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := h.syncer.Status(ctx, pod)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.syncer.SyncPod(ctx, pod, st, nil)
}

// converge syncs until every app container runs, at most max times.
func (h *harness) converge(pod *corev1.Pod, max int) int {
	h.t.Helper()
	for n := 1; n <= max; n++ {
		r := h.sync(pod)
		if err := r.Error(); err != nil {
			h.t.Logf("sync %d: %v", n, err)
		}
		if h.running(pod) {
			return n
		}
	}
	h.t.Fatalf("pod did not converge in %d syncs", max)
	return 0
}

func (h *harness) running(pod *corev1.Pod) bool {
	st, err := h.syncer.Status(context.Background(), pod)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, c := range pod.Spec.Containers {
		cs := st.FindContainerStatusByName(c.Name)
		if cs == nil || cs.State != podsync.ContainerStateRunning {
			return false
		}
	}
	return true
}

// created lists container names in the order CreateContainer was called.
func (h *harness) created() []string {
	var out []string
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
			out = append(out, req.Config.Metadata.Name)
		}
	}
	return out
}

var transports = []struct {
	name string
	wire bool
}{{"in-process", false}, {"unix-socket", true}}

func TestFreshPodToRunning(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			h := newHarness(t, tr.wire, []fake.Option{fake.WithStartFunc(exitInits(nil))})
			pod := demoPod()
			n := h.converge(pod, 10)
			if n != 4 {
				t.Errorf("converged in %d syncs, want 4 (sandbox+init-a, proxy, init-b, apps)", n)
			}
			if got, want := h.created(), []string{"init-a", "proxy", "init-b", "app", "web"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("creation order %v, want %v", got, want)
			}
			// A fifth sync has nothing to do.
			h.fake.ResetCalls()
			if r := h.sync(pod); len(r.Results) != 0 || h.fake.CallCount("CreateContainer") != 0 {
				t.Fatalf("steady state did work: %+v", r.Results)
			}
			for _, e := range []string{`Pulling: Pulling image "nginx:1"`, "Created: Created container app", "Started: Started container web"} {
				if !h.ev.has(e) {
					t.Errorf("missing event %q", e)
				}
			}
		})
	}
}

func TestInitFailurePerRestartPolicy(t *testing.T) {
	for _, tr := range transports {
		for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways} {
			t.Run(tr.name+"/"+string(policy), func(t *testing.T) {
				h := newHarness(t, tr.wire, []fake.Option{fake.WithStartFunc(exitInits(map[string]int32{"init-a": 1}))})
				pod := demoPod()
				pod.Spec.RestartPolicy = policy
				h.sync(pod) // sandbox + init-a, which fails
				r := h.sync(pod)
				st, _ := h.syncer.Status(context.Background(), pod)
				if policy == corev1.RestartPolicyNever {
					if st.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
						t.Fatalf("pod not killed under Never: %+v", r.Results)
					}
					if got := h.created(); !reflect.DeepEqual(got, []string{"init-a"}) {
						t.Fatalf("containers created %v", got)
					}
					return
				}
				// Retried at once (first crash), then back-off.
				if got := h.created(); !reflect.DeepEqual(got, []string{"init-a", "init-a"}) {
					t.Fatalf("containers created %v", got)
				}
				r = h.sync(pod)
				if len(r.Results) != 1 || !errors.Is(r.Results[0].Err, podsync.ErrCrashLoopBackOff) ||
					!strings.HasPrefix(r.Results[0].Message, "back-off 10s restarting failed container=init-a pod=web_shop(uid-web)") {
					t.Fatalf("third sync %+v", r.Results[0])
				}
				if !h.ev.has("BackOff: Back-off restarting failed container init-a in pod web_shop(uid-web)") {
					t.Fatal("no BackOff event")
				}
				// Back-off counts from the exit, a moment after the clock's now.
				h.clk.Step(10*time.Second + time.Millisecond)
				h.sync(pod)
				if got := len(h.created()); got != 3 {
					t.Fatalf("not retried after the back-off: %d creations", got)
				}
			})
		}
	}
}

func TestHashChangeRestarts(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithStartFunc(exitInits(nil))})
	pod := demoPod()
	h.converge(pod, 10)
	pod.Spec.Containers[1].Image = "nginx:2"
	h.fake.ResetCalls()
	r := h.sync(pod)
	if err := r.Error(); err != nil {
		t.Fatal(err)
	}
	if h.fake.CallCount("StopContainer") != 1 || !reflect.DeepEqual(h.created(), []string{"web"}) {
		t.Fatalf("stops %d, created %v", h.fake.CallCount("StopContainer"), h.created())
	}
	st, _ := h.syncer.Status(context.Background(), pod)
	web := st.FindContainerStatusByName("web")
	// The runtime names the image by its first repo tag, normalised, as
	// containerd does (it does not echo the user's spelling).
	if web.RestartCount != 1 || web.Image != "docker.io/library/nginx:2" || web.Hash != podsync.HashContainer(&pod.Spec.Containers[1]) {
		t.Fatalf("new instance %+v", web)
	}
	if !h.ev.has("Killing: Container web definition changed, will be restarted") {
		t.Fatal("no Killing event")
	}
}

func TestPostStartHookFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			h := newHarness(t, tr.wire, []fake.Option{fake.WithExecFunc(func(id string, cmd []string) ([]byte, []byte, int32, error) {
				return nil, []byte("no such file"), 1, nil
			})})
			f := h.fake
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "shop", UID: "uid-hook"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1",
					Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/setup"}}}}}}},
			}
			r := h.sync(pod)
			var failed *podsync.SyncResult
			for _, sr := range r.Results {
				if sr.Err != nil {
					failed = sr
				}
			}
			if failed == nil || !errors.Is(failed.Err, podsync.ErrPostStartHook) ||
				!strings.Contains(failed.Message, `Exec lifecycle hook ([/bin/setup]) for Container "app" in Pod "hook_shop(uid-hook)" failed`) {
				t.Fatalf("result %+v", r.Results)
			}
			if f.CallCount("StopContainer") != 1 || !h.ev.has("FailedPostStartHook: Exec lifecycle hook") || !h.ev.has("Killing: FailedPostStartHook") {
				t.Fatalf("container not killed: %d stops, events %v", f.CallCount("StopContainer"), h.ev.list)
			}
		})
	}
}

// TestFaultsConverge: a CreateContainer that fails once, a StartContainer
// that hangs past its deadline, a sandbox that dies between syncs and an
// agent restart; repeated syncs converge, no container starts twice.
func TestFaultsConverge(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithStartFunc(exitInits(nil))})
	f := h.fake
	pod := demoPod()

	f.FailNext("CreateContainer", 1, status.Error(codes.Unavailable, "runtime restarting"))
	r := h.sync(pod)
	if !errors.Is(r.Error(), podsync.ErrCreateContainer) || !errors.Is(r.Error(), runtime.ErrUnavailable) {
		t.Fatalf("first sync: %v", r.Error())
	}

	entered, release := f.Hang("StartContainer")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	st, _ := h.syncer.Status(ctx, pod)
	r = h.syncer.SyncPod(ctx, pod, st, nil)
	cancel()
	<-entered
	release()
	if !errors.Is(r.Error(), podsync.ErrRunContainer) || !errors.Is(r.Error(), runtime.ErrDeadlineExceeded) {
		t.Fatalf("hung start: %v", r.Error())
	}

	h.restart() // a new agent process: all state is in the runtime
	h.converge(pod, 10)

	st, _ = h.syncer.Status(context.Background(), pod)
	if err := f.KillSandbox(st.SandboxStatuses[0].Id); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.converge(pod, 10)
	st, _ = h.syncer.Status(context.Background(), pod)
	if st.SandboxStatuses[0].Metadata.Attempt != 1 || st.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandbox %+v", st.SandboxStatuses[0])
	}
	// No container was started twice, and each app runs once.
	started := map[string]int{}
	for _, c := range f.Calls() {
		if req, ok := c.Request.(*runtimeapi.StartContainerRequest); ok {
			started[req.ContainerId]++
		}
	}
	for id, n := range started {
		if n > 1 {
			t.Fatalf("container %s started %d times", id, n)
		}
	}
	running := map[string]int{}
	for _, cs := range st.ContainerStatuses {
		if cs.State == podsync.ContainerStateRunning {
			running[cs.Name]++
		}
	}
	if running["app"] != 1 || running["web"] != 1 || running["proxy"] != 1 {
		t.Fatalf("running instances %v", running)
	}
}

func TestConfigsAndStatusLabels(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithStartFunc(exitInits(nil))})
	pod := demoPod()
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	app := &pod.Spec.Containers[0]
	app.Command = []string{"/bin/sh", "-c"}
	app.Args = []string{"echo $(GREETING) $(MISSING) $$(ESCAPED)"}
	app.Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	app.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	app.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 80}}
	app.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	h.converge(pod, 10)

	var sandbox *runtimeapi.PodSandboxConfig
	var appCfg *runtimeapi.ContainerConfig
	for _, c := range h.fake.Calls() {
		switch req := c.Request.(type) {
		case *runtimeapi.RunPodSandboxRequest:
			sandbox = req.Config
		case *runtimeapi.CreateContainerRequest:
			if req.Config.Metadata.Name == "app" {
				appCfg = req.Config
			}
		}
	}
	if sandbox.Hostname != "web" || sandbox.LogDirectory != filepath.Join(h.root, "logs", "shop_web_uid-web") ||
		sandbox.Labels["app"] != "web" || sandbox.Labels[podsync.LabelPodUID] != "uid-web" || len(sandbox.PortMappings) != 1 {
		t.Fatalf("sandbox config %v", sandbox)
	}
	if got := appCfg.Args[0]; got != "echo hello $(MISSING) $(ESCAPED)" {
		t.Errorf("args %q", got)
	}
	env := map[string]string{}
	for _, kv := range appCfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	if env["POD"] != "web" || env["GREETING"] != "hello" {
		t.Errorf("env %v", env)
	}
	if appCfg.LogPath != "app/0.log" || appCfg.Labels[podsync.LabelContainerName] != "app" ||
		appCfg.Annotations[podsync.AnnotationContainerHash] != fmt.Sprintf("%x", podsync.HashContainer(app)) ||
		appCfg.Annotations[podsync.AnnotationPodTerminationGracePeriod] != "30" {
		t.Errorf("config %v", appCfg)
	}
	if r := appCfg.Linux.Resources; r.CpuShares != 512 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != 64<<20 {
		t.Errorf("resources %v", r)
	}
	var paths []string
	for _, m := range appCfg.Mounts {
		paths = append(paths, m.ContainerPath)
	}
	if !reflect.DeepEqual(paths, []string{"/scratch", "/etc/hosts", "/dev/termination-log"}) {
		t.Errorf("mounts %v", paths)
	}
	hosts, err := os.ReadFile(filepath.Join(h.root, "pods", "uid-web", "etc-hosts"))
	if err != nil || !strings.Contains(string(hosts), "\tweb\n") {
		t.Errorf("hosts file %q %v", hosts, err)
	}
	if _, err := os.Stat(filepath.Join(h.root, "pods", "uid-web", "volumes", "kubernetes.io~empty-dir", "scratch")); err != nil {
		t.Errorf("emptyDir: %v", err)
	}
}

func TestHostNetworkSandboxHasNoHostname(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hn", Namespace: "shop", UID: "uid-hn"},
		Spec: corev1.PodSpec{HostNetwork: true, SecurityContext: &corev1.PodSecurityContext{}, Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}}
	h.converge(pod, 3)
	req := h.fake.Calls()[2].Request
	for _, c := range h.fake.Calls() {
		if r, ok := c.Request.(*runtimeapi.RunPodSandboxRequest); ok {
			req = r
		}
	}
	cfg := req.(*runtimeapi.RunPodSandboxRequest).Config
	if cfg.Hostname != "" || cfg.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE {
		t.Fatalf("host-network sandbox %v", cfg)
	}
}

func TestUnsupportedVolumeIsClear(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "v", Namespace: "shop", UID: "uid-v"},
		Spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}},
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}}
	r := h.sync(pod)
	err := r.Error()
	if !errors.Is(err, podsync.ErrCreateContainerConfig) || !errors.Is(err, podsync.ErrVolumeNotSupported) || !strings.Contains(err.Error(), `volume \"cfg\"`) {
		t.Fatalf("err %v", err)
	}
}

func TestImagePullFailureInResult(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithRegistryImages("busybox")})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop", UID: "uid-p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nosuch:1", ImagePullPolicy: corev1.PullAlways}}}}
	r := h.sync(pod)
	if !errors.Is(r.Error(), images.ErrImagePull) || !errors.Is(r.Error(), runtime.ErrNotFound) {
		t.Fatalf("err %v", r.Error())
	}
	r = h.sync(pod)
	if !errors.Is(r.Error(), images.ErrImagePullBackOff) {
		t.Fatalf("second sync %v", r.Error())
	}
	if want := `failed to "StartContainer" for "app" with ImagePullBackOff: "Back-off pulling image \"nosuch:1\"`; !strings.HasPrefix(r.Error().Error(), want) {
		t.Fatalf("text %q", r.Error())
	}
}

// A setting podstart cannot honour is refused with an error that names
// it: the container is never created without it.
func TestUnsupportedSettingIsRefused(t *testing.T) {
	nonRoot := true
	tests := []struct {
		name  string
		mut   func(*corev1.Pod)
		field string
		class error
	}{
		// The claim's volume comes from the caller's provider (podsync's
		// default has no PersistentVolumeClaim); the raw block device is
		// what criconfig refuses.
		{"raw block volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "disk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "disk"}}}}
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvdb"}}
		}, "volumeDevices", criconfig.ErrUnsupported},
		{"runAsNonRoot with a root image", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot}
		}, "image will run as root", criconfig.ErrRunAsNonRoot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, nil, podsync.WithVolumes(claimVolumes{}))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-refused"},
				Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{}, Containers: []corev1.Container{{Name: "app", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent}}}}
			tt.mut(pod)
			res := h.sync(pod)
			err := res.Error()
			if !errors.Is(err, podsync.ErrCreateContainerConfig) || !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("SyncPod error %v, want CreateContainerConfigError naming %q", err, tt.field)
			}
			for _, c := range h.fake.Calls() {
				if _, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
					t.Fatal("CreateContainer was called for a refused container")
				}
			}
		})
	}
}

// claimVolumes is a caller's VolumeProvider that has every volume, as a
// directory of the node.
type claimVolumes struct{}

func (claimVolumes) Volumes(_ context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	m := mounts.VolumeMap{}
	for _, v := range pod.Spec.Volumes {
		m[v.Name] = mounts.Volume{HostPath: "/var/lib/claims/" + v.Name}
	}
	return m, nil
}

// onlyRuntime hides the fake's ImageService, as a caller's runtime wrapper
// might.
type onlyRuntime struct{ runtime.RuntimeService }

// Without an image service the image's user is unknown: no user is sent
// (so the runtime applies the image's USER instead of root), and
// runAsNonRoot is refused rather than assumed.
func TestNoImageServiceSendsNoUser(t *testing.T) {
	f := fake.New(fake.WithRegistryImages("nginx:1"))
	ims := images.NewManager(f)
	defer ims.Close()
	root := t.TempDir()
	s := podsync.NewSyncer(onlyRuntime{f}, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	nonRoot := true
	for _, tt := range []struct {
		name    string
		sc      *corev1.PodSecurityContext
		refused bool
	}{
		{"plain", &corev1.PodSecurityContext{}, false},
		{"runAsNonRoot", &corev1.PodSecurityContext{RunAsNonRoot: &nonRoot}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f.ResetCalls()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("uid-" + strings.ToLower(tt.name))},
				Spec: corev1.PodSpec{SecurityContext: tt.sc, Containers: []corev1.Container{{Name: "app", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent}}}}
			ctx := context.Background()
			st, err := s.Status(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			err = s.SyncPod(ctx, pod, st, nil).Error()
			if tt.refused {
				if !errors.Is(err, criconfig.ErrRunAsNonRoot) {
					t.Fatalf("err = %v, want ErrRunAsNonRoot", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range f.Calls() {
				if r, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
					if u := r.Config.Linux.SecurityContext.RunAsUser; u != nil {
						t.Fatalf("run_as_user %v sent for an image whose user is unknown", u)
					}
					return
				}
			}
			t.Fatal("no CreateContainer")
		})
	}
}

// A host-network pod's status.podIP(s) env values are the node's IPs, as
// kubelet passes SyncPod its API status's IPs (the node's for such a pod,
// one per family). (Unknown node IPs: criconfig's
// TestHostNetworkPodIPFieldRef.) Found by the conformance spec "Downward API should provide host IP
// and pod IP as an env var if pod uses host network [LinuxOnly]".
func TestHostNetworkPodIPEnv(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hn", Namespace: "shop", UID: "uid-hn"},
		Spec: corev1.PodSpec{HostNetwork: true, SecurityContext: &corev1.PodSecurityContext{}, Containers: []corev1.Container{{Name: "app", Image: "nginx:1",
			Env: []corev1.EnvVar{
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "POD_IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
				{Name: "HOST_IPS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
			}}}}}
	t.Run("node IPs known", func(t *testing.T) {
		h := newHarness(t, false, nil)
		node := criconfig.Node{HostIPs: []string{"192.0.2.10", "192.0.2.11", "fd00::10"}, RootDir: h.root, PodLogsDir: filepath.Join(h.root, "logs")}
		h.opts = append(h.opts, podsync.WithNode(node))
		h.restart()
		h.converge(pod, 3)
		env := map[string]string{}
		for _, c := range h.fake.Calls() {
			if req, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
				for _, kv := range req.Config.Envs {
					env[kv.Key] = string(kv.Value)
				}
			}
		}
		if env["POD_IP"] != "192.0.2.10" || env["POD_IPS"] != "192.0.2.10,fd00::10" || env["HOST_IPS"] != "192.0.2.10,fd00::10" {
			t.Fatalf("env %v", env)
		}
	})
}

// A ClusterFirst pod on a node given without cluster DNS nor resolv.conf
// (WithNode's zero ResolvConf: kubelet's default /etc/resolv.conf) gets the
// host's resolv.conf, and kubelet's MissingClusterDNS warnings (sandbox
// creation, container start), not "nameserver 127.0.0.1". Found by the
// conformance run: a ClusterFirst pod on a node without cluster DNS.
func TestClusterFirstWithoutClusterDNSUsesHostResolvConf(t *testing.T) {
	h := newHarness(t, false, nil)
	h.opts = append(h.opts, podsync.WithNode(criconfig.Node{Name: "node1", HostIPs: []string{"192.0.2.10"}, RootDir: h.root, PodLogsDir: filepath.Join(h.root, "logs")}))
	h.restart()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "shop", UID: "uid-dns"},
		Spec: corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst, SecurityContext: &corev1.PodSecurityContext{}, Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}}}
	h.converge(pod, 3)
	var cfg *runtimeapi.PodSandboxConfig
	for _, c := range h.fake.Calls() {
		if r, ok := c.Request.(*runtimeapi.RunPodSandboxRequest); ok {
			cfg = r.Config
		}
	}
	host, err := os.ReadFile(criconfig.DefaultResolvConf)
	if err != nil {
		t.Fatalf("this test reads the host's resolv.conf: %v", err)
	}
	want := criconfig.ParseResolvConf(host).Nameservers
	if len(want) > 3 {
		want = want[:3]
	}
	if cfg == nil || !slices.Equal(cfg.DnsConfig.Servers, want) {
		t.Fatalf("sandbox DNS %v, want the host's nameservers %v", cfg.GetDnsConfig(), want)
	}
	n := 0
	h.ev.mu.Lock()
	for _, e := range h.ev.list {
		if strings.HasPrefix(e, `MissingClusterDNS: pod: "dns_shop(uid-dns)". kubelet does not have ClusterDNS IP configured`) {
			n++
		}
	}
	h.ev.mu.Unlock()
	if n != 2 {
		t.Errorf("%d MissingClusterDNS events on the pod, want 2 (sandbox, container start): %v", n, h.ev.list)
	}
}
