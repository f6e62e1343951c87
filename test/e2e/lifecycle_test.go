package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/e2elock"
)

// stopper runs until SIGTERM, then exits at once (a shell as PID 1 would
// otherwise ignore it and wait for the SIGKILL).
func stopper(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}
}

// Two app containers with 300 ms pre-stop hooks stop in about 300 ms, not
// 600; the sidecar stops after both (CRI finish times).
func TestKillPodOnContainerd(t *testing.T) {
	e, rt := setup(t)
	root := t.TempDir()
	a := newAgent(t, rt, root, images.WithNodeKeyring(credentials.NewNodeKeyring(nodeFile(t, e.registry, e.user, e.pass))))
	hooks := &hookSpans{Runtime: rt}
	a.syncer = podsync.NewSyncer(hooks, a.ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	hook := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "0.3"}}}}
	app1, app2 := stopper("app1", e.image), stopper("app2", e.image)
	app1.Lifecycle, app2.Lifecycle = hook, hook
	pod := newPod(t, rt, "kill", app1, app2)
	side := stopper("sidecar", e.image)
	always := corev1.ContainerRestartPolicyAlways
	side.RestartPolicy = &always
	pod.Spec.InitContainers = []corev1.Container{side}
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	a.converge(pod)
	st := a.status(pod)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := a.syncer.KillPod(ctx, pod, st, nil).Error(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st = a.status(pod)
	finished := map[string]time.Time{}
	for _, cs := range st.ContainerStatuses {
		if cs.State != podsync.ContainerStateExited {
			t.Fatalf("%s is %s after KillPod", cs.Name, cs.State)
		}
		finished[cs.Name] = cs.FinishedAt
	}
	lastApp := finished["app1"]
	if finished["app2"].After(lastApp) {
		lastApp = finished["app2"]
	}
	stopped := lastApp.Sub(start)
	spans := hooks.all()
	t.Logf("KillPod took %v; both apps finished %v after it began (hooks 300 ms each), app1/app2 %v apart; sidecar %v after the last app; hooks ran %v",
		took.Round(time.Millisecond), stopped.Round(time.Millisecond), finished["app1"].Sub(finished["app2"]).Abs().Round(time.Millisecond), finished["sidecar"].Sub(lastApp).Round(time.Millisecond), spans)
	if stopped < 300*time.Millisecond {
		t.Errorf("apps finished %v after the kill began, before their 300 ms hooks could end", stopped)
	}
	// In parallel the second hook starts before the first has ended; in
	// series it could start only once the first app had stopped. (How long
	// they take depends on the machine's load; whether they overlap does
	// not.)
	if len(spans) != 2 {
		t.Fatalf("%d pre-stop hooks ran, want 2", len(spans))
	}
	a1, a2 := spans[0], spans[1]
	if a2.start.Before(a1.start) {
		a1, a2 = a2, a1
	}
	if !a2.start.Before(a1.end) {
		t.Errorf("the pre-stop hooks did not overlap (%v): they ran in series", spans)
	}
	if !finished["sidecar"].After(lastApp) {
		t.Errorf("sidecar finished at %v, before the last app at %v", finished["sidecar"], lastApp)
	}
}

// hookSpans records when each ExecSync of a pre-stop hook ("sleep 0.3")
// began and ended.
type hookSpans struct {
	runtime.Runtime
	mu    sync.Mutex
	spans []span
}

type span struct{ start, end time.Time }

func (s span) String() string {
	return fmt.Sprintf("%s–%s", s.start.Format("15:04:05.000"), s.end.Format("15:04:05.000"))
}

func (h *hookSpans) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	start := time.Now()
	out, errOut, err := h.Runtime.ExecSync(ctx, id, cmd, timeout)
	if len(cmd) == 2 && cmd[0] == "sleep" {
		h.mu.Lock()
		h.spans = append(h.spans, span{start, time.Now()})
		h.mu.Unlock()
	}
	return out, errOut, err
}

func (h *hookSpans) all() []span {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]span(nil), h.spans...)
}

// lossy loses the answer of one call: the runtime did it, the caller hears
// an error (a dead connection, or nothing until its deadline, or the
// runtime killed while the call runs).
type lossy struct {
	runtime.Runtime
	method string
	mode   string // "lost", "hung", "kill"
	mu     sync.Mutex
	done   bool
}

func (l *lossy) take(method string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.method != method || l.done {
		return false
	}
	l.done = true
	return true
}

func (l *lossy) after(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	if l.mode == "hung" {
		<-ctx.Done()
		return ctx.Err()
	}
	return status.Error(codes.Unavailable, "connection reset by peer")
}

func (l *lossy) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbc *runtimeapi.PodSandboxConfig) (string, error) {
	if !l.take("CreateContainer") {
		return l.Runtime.CreateContainer(ctx, sb, cfg, sbc)
	}
	_, err := l.Runtime.CreateContainer(ctx, sb, cfg, sbc)
	return "", l.after(ctx, err)
}

func (l *lossy) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if !l.take("RunPodSandbox") {
		return l.Runtime.RunPodSandbox(ctx, cfg, handler)
	}
	if l.mode == "kill" {
		type answer struct {
			id  string
			err error
		}
		ch := make(chan answer, 1)
		go func() {
			id, err := l.Runtime.RunPodSandbox(ctx, cfg, handler)
			ch <- answer{id, err}
		}()
		time.Sleep(20 * time.Millisecond) // let the call reach containerd
		envSh("kill-containerd")
		a := <-ch
		envSh("start-containerd")
		if a.err == nil {
			return "", status.Error(codes.Unavailable, "connection reset by peer")
		}
		return "", a.err
	}
	_, err := l.Runtime.RunPodSandbox(ctx, cfg, handler)
	return "", l.after(ctx, err)
}

func envSh(cmd string) {
	out, err := exec.Command("bash", "env.sh", cmd).CombinedOutput()
	if err != nil {
		panic(fmt.Sprintf("env.sh %s: %v\n%s", cmd, err, out))
	}
}

// After a lost or hung answer, or containerd killed mid-call, the next
// sync and one collection pass leave one sandbox and one instance per
// container, with true restart counts.
func TestLostAnswersOnContainerd(t *testing.T) {
	e, rt := setup(t)
	cases := []struct{ name, method, mode string }{
		{"create-lost", "CreateContainer", "lost"},
		{"create-hung", "CreateContainer", "hung"},
		{"sandbox-lost", "RunPodSandbox", "lost"},
		{"sandbox-containerd-killed", "RunPodSandbox", "kill"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.mode == "kill" {
				// No other test process may use containerd while it dies.
				release, err := e2elock.Exclusive(e2eDir())
				if err != nil {
					t.Fatal(err)
				}
				defer release()
			}
			root := t.TempDir()
			l := &lossy{Runtime: rt, method: c.method, mode: c.mode}
			ims := images.NewManager(rt, images.WithNodeKeyring(credentials.NewNodeKeyring(nodeFile(t, e.registry, e.user, e.pass))))
			defer ims.Close()
			syncer := podsync.NewSyncer(l, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
			pod := newPod(t, rt, "lost-"+c.name, stopper("app", e.image))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := syncer.Status(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			r := syncer.SyncPod(ctx, pod, st, nil)
			cancel()
			if r.Error() == nil {
				t.Fatal("first sync did not fail")
			}
			var pods []*podsync.RuntimePod
			deadline := time.Now().Add(90 * time.Second)
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				st, err := syncer.Status(ctx, pod)
				if err == nil && !running(pod, st) {
					err = syncer.SyncPod(ctx, pod, st, nil).Error()
				}
				if err == nil {
					err = syncer.GarbageCollect(ctx, podsync.DefaultGCPolicy, nil)
				}
				all, lerr := podsync.ListPods(ctx, rt)
				cancel()
				if err != nil || lerr != nil {
					t.Logf("retrying: %v %v", err, lerr) // containerd may still be starting
					time.Sleep(200 * time.Millisecond)
					continue
				}
				pods = nil
				for _, p := range all {
					if p.UID == pod.UID {
						pods = append(pods, p)
					}
				}
				if len(pods) == 1 && running(pod, st) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if len(pods) != 1 || len(pods[0].Sandboxes) != 1 || len(pods[0].Containers) != 1 {
				t.Fatalf("left: %+v", pods)
			}
			cs := pods[0].Containers[0]
			if cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING || cs.PodSandboxId != pods[0].Sandboxes[0].Id {
				t.Fatalf("container %s in %s; sandbox %s", cs.State, cs.PodSandboxId, pods[0].Sandboxes[0].Id)
			}
			resp, err := rt.ContainerStatus(context.Background(), cs.Id, false)
			if err != nil {
				t.Fatal(err)
			}
			if n := resp.Status.Annotations[podsync.AnnotationContainerRestartCount]; n != "0" {
				t.Fatalf("restart count %s, want 0", n)
			}
		})
	}
}

// 50 pods started and deleted through the pod worker leave nothing:
// no sandbox, container, mount, pod directory or log directory.
func TestWorkerFiftyPodsOnContainerd(t *testing.T) {
	e, rt := setup(t)
	root := t.TempDir()
	ims := images.NewManager(rt, images.WithNodeKeyring(credentials.NewNodeKeyring(nodeFile(t, e.registry, e.user, e.pass))))
	defer ims.Close()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	var mu sync.Mutex
	states := map[types.UID]podworker.PodState{}
	changed := make(chan struct{}, 1)
	w := podworker.New(syncer, podworker.WithRelistPeriod(200*time.Millisecond), podworker.WithOnSync(func(uid types.UID, st podworker.PodState) {
		mu.Lock()
		states[uid] = st
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
	}))
	defer w.Close()
	waitAll := func(what string, uids []types.UID, cond func(podworker.PodState) bool) {
		t.Helper()
		deadline := time.NewTimer(4 * time.Minute)
		defer deadline.Stop()
		for {
			mu.Lock()
			n := 0
			for _, uid := range uids {
				if st, ok := states[uid]; ok && cond(st) {
					n++
				}
			}
			mu.Unlock()
			if n == len(uids) {
				return
			}
			select {
			case <-changed:
			case <-deadline.C:
				t.Fatalf("timed out: %d of %d pods %s", n, len(uids), what)
			}
		}
	}
	grace := int64(2)
	var pods []*corev1.Pod
	var uids []types.UID
	start := time.Now()
	for i := 0; i < 50; i++ {
		app := stopper("app", e.image)
		app.TerminationMessagePath = "/dev/termination-log"
		app.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		pod := newPod(t, rt, fmt.Sprintf("fifty-%02d", i), app)
		pod.Spec.TerminationGracePeriodSeconds = &grace
		pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		pods = append(pods, pod)
		uids = append(uids, pod.UID)
		if err := w.Upsert(pod); err != nil {
			t.Fatal(err)
		}
	}
	waitAll("running", uids, func(st podworker.PodState) bool { return st.Status != nil && running(st.Pod, st.Status) })
	t.Logf("50 pods running in %v", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	all, err := podsync.ListPods(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	mine := map[types.UID]bool{}
	for _, uid := range uids {
		mine[uid] = true
	}
	var sandboxIDs []string
	for _, p := range all {
		if !mine[p.UID] {
			continue // another test's, perhaps running in parallel
		}
		for _, sb := range p.Sandboxes {
			sandboxIDs = append(sandboxIDs, sb.Id)
		}
	}
	start = time.Now()
	for _, p := range pods {
		now := metav1.Now()
		p = p.DeepCopy()
		p.DeletionTimestamp = &now
		if err := w.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	waitAll("removed", uids, func(st podworker.PodState) bool { return st.Removed })
	t.Logf("50 pods deleted in %v", time.Since(start).Round(time.Millisecond))

	all, err = podsync.ListPods(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if mine[p.UID] {
			t.Errorf("left on containerd: %s with %d sandboxes, %d containers", p.Name, len(p.Sandboxes), len(p.Containers))
		}
	}
	for _, dir := range []string{filepath.Join(root, "pods"), filepath.Join(root, "logs")} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Errorf("%d directories left in %s", len(entries), dir)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, line := range strings.Split(string(mounts), "\n") {
		hit := strings.Contains(line, root)
		for _, id := range sandboxIDs {
			hit = hit || strings.Contains(line, id)
		}
		if hit {
			if left < 3 {
				t.Logf("mount left: %s", line)
			}
			left++
		}
	}
	if left != 0 {
		t.Errorf("%d mounts of the deleted pods remain", left)
	}
}

// counting counts the runtime calls made through it, by method.
type counting struct {
	runtime.Runtime
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) add(m string) {
	c.mu.Lock()
	c.n[m]++
	c.mu.Unlock()
}

func (c *counting) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	c.add("ListPodSandbox")
	return c.Runtime.ListPodSandbox(ctx, f)
}
func (c *counting) PodSandboxStatus(ctx context.Context, id string, v bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	c.add("PodSandboxStatus")
	return c.Runtime.PodSandboxStatus(ctx, id, v)
}
func (c *counting) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	c.add("ListContainers")
	return c.Runtime.ListContainers(ctx, f)
}
func (c *counting) ContainerStatus(ctx context.Context, id string, v bool) (*runtimeapi.ContainerStatusResponse, error) {
	c.add("ContainerStatus")
	return c.Runtime.ContainerStatus(ctx, id, v)
}
func (c *counting) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, h string) (string, error) {
	c.add("RunPodSandbox")
	return c.Runtime.RunPodSandbox(ctx, cfg, h)
}
func (c *counting) CreateContainer(ctx context.Context, sb string, cfg *runtimeapi.ContainerConfig, sbc *runtimeapi.PodSandboxConfig) (string, error) {
	c.add("CreateContainer")
	return c.Runtime.CreateContainer(ctx, sb, cfg, sbc)
}
func (c *counting) StartContainer(ctx context.Context, id string) error {
	c.add("StartContainer")
	return c.Runtime.StartContainer(ctx, id)
}
func (c *counting) ImageStatus(ctx context.Context, img *runtimeapi.ImageSpec, v bool) (*runtimeapi.ImageStatusResponse, error) {
	c.add("ImageStatus")
	return c.Runtime.ImageStatus(ctx, img, v)
}
func (c *counting) PullImage(ctx context.Context, img *runtimeapi.ImageSpec, a *runtimeapi.AuthConfig, sbc *runtimeapi.PodSandboxConfig) (string, error) {
	c.add("PullImage")
	return c.Runtime.PullImage(ctx, img, a, sbc)
}

// A fresh pod with 2 init and 3 app containers on containerd costs at most
// 1.2 times the bare sequence's CRI calls (see podsync's
// TestCRICallsPerFreshPod for its definition).
func TestCRICallsPerFreshPodOnContainerd(t *testing.T) {
	e, rt := setup(t)
	c := &counting{Runtime: rt, n: map[string]int{}}
	root := t.TempDir()
	ims := images.NewManager(c, images.WithNodeKeyring(credentials.NewNodeKeyring(nodeFile(t, e.registry, e.user, e.pass))))
	defer ims.Close()
	syncer := podsync.NewSyncer(c, ims, podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	initC := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: e.image, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"true"}}
	}
	pod := newPod(t, rt, "calls", stopper("a1", e.image), stopper("a2", e.image), stopper("a3", e.image))
	pod.Spec.InitContainers = []corev1.Container{initC("i1"), initC("i2")}
	syncs := 0
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := syncer.Status(ctx, pod)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if running(pod, st) {
			cancel()
			break
		}
		r := syncer.SyncPod(ctx, pod, st, nil)
		cancel()
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
		syncs++
		if len(r.Results) == 0 {
			time.Sleep(50 * time.Millisecond) // an init container runs on containerd's time
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	total, changes := 0, 0
	for m, n := range c.n {
		total += n
		switch m {
		case "RunPodSandbox", "PullImage", "ImageStatus", "CreateContainer", "StartContainer":
			changes += n
		}
	}
	bare := changes + 1 + 3*c.n["ListPodSandbox"] + 5
	t.Logf("%d syncs, %d status reads: %d CRI calls, bare sequence %d (%.2fx): %v", syncs, c.n["ListPodSandbox"], total, bare, float64(total)/float64(bare), c.n)
	if float64(total) > 1.2*float64(bare) {
		t.Fatalf("%d CRI calls, more than 1.2 x the bare %d", total, bare)
	}
}

type eventLog struct {
	mu   sync.Mutex
	list []string
}

func (r *eventLog) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, reason+": "+fmt.Sprintf(format, args...))
}

func (r *eventLog) find(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.list {
		if strings.HasPrefix(e, prefix) {
			return e
		}
	}
	return ""
}

// On containerd, through the pod worker: a readiness probe that flips
// makes Ready flip; a failing liveness probe restarts the container with
// kubelet's reason.
func TestProbesOnContainerd(t *testing.T) {
	e, rt := setup(t)
	root := t.TempDir()
	ev := &eventLog{}
	ims := images.NewManager(rt, images.WithNodeKeyring(credentials.NewNodeKeyring(nodeFile(t, e.registry, e.user, e.pass))))
	defer ims.Close()
	pm := probes.New(rt, probes.WithRecorder(ev))
	defer pm.Close()
	syncer := podsync.NewSyncer(rt, ims, podsync.WithProbes(pm), podsync.WithRecorder(ev), podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	states := make(chan podworker.PodState, 1000)
	w := podworker.New(syncer, podworker.WithProbes(pm), podworker.WithRelistPeriod(200*time.Millisecond),
		podworker.WithOnSync(func(_ types.UID, st podworker.PodState) {
			select {
			case states <- st:
			default:
			}
		}))
	defer w.Close()
	app := corev1.Container{Name: "app", Image: e.image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", "touch /tmp/ready /tmp/alive; trap 'exit 0' TERM; sleep 3600 & wait"}}
	app.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 5}
	app.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/alive"}}},
		PeriodSeconds: 1, FailureThreshold: 2, SuccessThreshold: 1, TimeoutSeconds: 5}
	pod := newPod(t, rt, "probes", app)
	grace := int64(2)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	if err := w.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	until := func(what string, cond func(corev1.PodStatus) bool) corev1.PodStatus {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case st := <-states:
				if cond(st.APIStatus) {
					return st.APIStatus
				}
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	ready := func(s corev1.PodStatus) corev1.ConditionStatus {
		for _, c := range s.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status
			}
		}
		return ""
	}
	s := until("Ready", func(s corev1.PodStatus) bool { return ready(s) == corev1.ConditionTrue })
	id := strings.TrimPrefix(s.ContainerStatuses[0].ContainerID, "containerd://")
	inContainer := func(cmd ...string) {
		t.Helper()
		if _, _, err := rt.ExecSync(context.Background(), id, cmd, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	inContainer("rm", "/tmp/ready")
	until("not Ready", func(s corev1.PodStatus) bool { return ready(s) == corev1.ConditionFalse })
	inContainer("touch", "/tmp/ready")
	until("Ready again", func(s corev1.PodStatus) bool { return ready(s) == corev1.ConditionTrue })
	inContainer("rm", "/tmp/alive")
	s = until("a liveness restart", func(s corev1.PodStatus) bool {
		return s.ContainerStatuses[0].RestartCount == 1 && s.ContainerStatuses[0].State.Running != nil
	})
	if msg := ev.find("Killing: Container app failed liveness probe, will be restarted"); msg == "" {
		t.Errorf("no Killing event with kubelet's liveness message; events: %v", ev.list)
	}
	if ev.find("Unhealthy: Liveness probe failed") == "" || ev.find("Unhealthy: Readiness probe failed") == "" {
		t.Errorf("no Unhealthy events: %v", ev.list)
	}
	if err := w.Delete(pod, nil); err != nil {
		t.Fatal(err)
	}
	until("removed", func(corev1.PodStatus) bool {
		_, held := w.Status(pod.UID)
		return !held
	})
}

// A registry that refuses connections: kubelet's ErrImagePull as the
// reason, and errors.Is says the registry is unavailable.
func TestRefusingRegistryOnContainerd(t *testing.T) {
	_, rt := setup(t)
	ims := images.NewManager(rt)
	defer ims.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: namespace, UID: "e2e-refused"}}
	c := &corev1.Container{Name: "app", Image: "127.0.0.1:5999/busybox:1.35", ImagePullPolicy: corev1.PullAlways}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, msg, err := ims.EnsureImageExists(ctx, pod, c, nil, nil)
	if !errors.Is(err, images.ErrImagePull) || !errors.Is(err, runtime.ErrRegistryUnavailable) {
		t.Fatalf("err %v (%s), want ErrImagePull and runtime.ErrRegistryUnavailable", err, msg)
	}
	t.Logf("message: %s", msg)
}
