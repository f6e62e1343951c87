package podsync_test

import (
	"context"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

func preStop(cmd string) *corev1.Lifecycle {
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}}
}

// sidecarAppPod: sidecars s1 and s2, apps a1 and a2 with pre-stop hooks.
func sidecarAppPod() *corev1.Pod {
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kill", Namespace: "shop", UID: "uid-kill"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{
				{Name: "s1", Image: "envoy:1", RestartPolicy: &always},
				{Name: "s2", Image: "envoy:1", RestartPolicy: &always},
			},
			Containers: []corev1.Container{
				{Name: "a1", Image: "nginx:1", Lifecycle: preStop("hook-a1")},
				{Name: "a2", Image: "nginx:1", Lifecycle: preStop("hook-a2")},
			},
		},
	}
}

func (h *harness) names() map[string]string {
	out := map[string]string{}
	list, _ := h.fake.ListContainers(context.Background(), nil)
	for _, c := range list {
		out[c.Id] = c.Metadata.Name
	}
	return out
}

func TestKillPodParallelHooksSidecarsLast(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			// Both hooks must be running at once before either may end: a
			// serial kill deadlocks here (and the test times out).
			var mu sync.Mutex
			entered := map[string]bool{}
			both := make(chan struct{})
			exec := func(id string, cmd []string) ([]byte, []byte, int32, error) {
				if !strings.HasPrefix(cmd[0], "hook-") {
					return nil, nil, 0, nil
				}
				mu.Lock()
				entered[cmd[0]] = true
				if len(entered) == 2 {
					close(both)
				}
				mu.Unlock()
				<-both
				return nil, nil, 0, nil
			}
			h := newHarness(t, tr.wire, []fake.Option{fake.WithExecFunc(exec)})
			pod := sidecarAppPod()
			h.converge(pod, 10)
			ids := h.names()
			h.fake.ResetCalls()

			st, err := h.syncer.Status(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			r := h.syncer.KillPod(context.Background(), pod, st, nil)
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
			var order []string
			grace := map[string]int64{}
			sandboxStopped := -1
			for i, c := range h.fake.Calls() {
				switch req := c.Request.(type) {
				case *runtimeapi.StopContainerRequest:
					order = append(order, ids[req.ContainerId])
					grace[ids[req.ContainerId]] = req.Timeout
				case *runtimeapi.StopPodSandboxRequest:
					sandboxStopped = i
				}
			}
			if len(order) != 4 {
				t.Fatalf("stopped %v, want 4 containers", order)
			}
			apps := map[string]bool{order[0]: true, order[1]: true}
			if !apps["a1"] || !apps["a2"] || order[2] != "s2" || order[3] != "s1" {
				t.Fatalf("stop order %v, want a1 and a2, then s2, then s1", order)
			}
			if sandboxStopped != len(h.fake.Calls())-1 {
				t.Fatalf("sandbox not stopped last: calls %v", h.fake.Calls())
			}
			for name, g := range grace {
				if g < 28 || g > 30 {
					t.Errorf("%s stopped with grace %d, want about 30", name, g)
				}
			}
			st, _ = h.syncer.Status(context.Background(), pod)
			for _, cs := range st.ContainerStatuses {
				if cs.State != podsync.ContainerStateExited {
					t.Errorf("%s is %s after KillPod", cs.Name, cs.State)
				}
			}
			if st.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Errorf("sandbox still ready")
			}
		})
	}
}

// A pre-stop hook that outlasts the grace period is abandoned and the
// container stopped with kubelet's minimum; the sidecars follow.
func TestKillPodHookPastGrace(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hooked := make(chan struct{}, 1)
	exec := func(id string, cmd []string) ([]byte, []byte, int32, error) {
		if cmd[0] == "hook-a1" {
			hooked <- struct{}{}
			<-release
		}
		return nil, nil, 0, nil
	}
	h := newHarness(t, false, []fake.Option{fake.WithExecFunc(exec)})
	pod := sidecarAppPod()
	pod.Spec.Containers = pod.Spec.Containers[:1]
	h.converge(pod, 10)
	st, _ := h.syncer.Status(context.Background(), pod)
	h.fake.ResetCalls()
	done := make(chan podsync.Result)
	grace := int64(5)
	go func() { done <- h.syncer.KillPod(context.Background(), pod, st, &grace) }()
	<-hooked
	// Three timers: a1's hook, and each sidecar's wait for its turn. A
	// step taken before all three exist leaves the late ones waiting for
	// ever (this hung 1 run in a few hundred under load).
	for h.clk.Waiters() < 3 {
		goruntime.Gosched()
	}
	h.clk.Step(5 * time.Second)
	r := <-done
	if err := r.Error(); err != nil {
		t.Fatal(err)
	}
	ids := h.names()
	timeouts := map[string]int64{}
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.StopContainerRequest); ok {
			timeouts[ids[req.ContainerId]] = req.Timeout
		}
	}
	if len(timeouts) != 3 || timeouts["a1"] != 2 {
		t.Fatalf("StopContainer timeouts %v, want a1 with kubelet's minimum 2, and both sidecars", timeouts)
	}
}

func TestEffectiveGracePeriod(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	cases := []struct {
		spec, deletion, override *int64
		want                     int64
	}{
		{nil, nil, nil, 1},
		{i(30), nil, nil, 30},
		{i(30), i(10), nil, 10},
		{i(30), i(10), i(5), 5},
		{i(30), i(5), i(10), 5},
		{i(30), nil, i(0), 1},
		{i(0), nil, nil, 1},
		{i(30), i(0), nil, 1},
	}
	for _, c := range cases {
		pod := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: c.spec}}
		pod.DeletionGracePeriodSeconds = c.deletion
		if got := podsync.EffectiveGracePeriod(pod, c.override); got != c.want {
			t.Errorf("spec %v deletion %v override %v: %d, want %d", c.spec, c.deletion, c.override, got, c.want)
		}
	}
}

// A deleted pod is killed by SyncPod and nothing is started again.
func TestSyncPodKillsDeletedPod(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithStartFunc(exitInits(nil))})
	pod := demoPod()
	h.converge(pod, 10)
	now := metav1.Now()
	grace := int64(7)
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &grace
	h.fake.ResetCalls()
	r := h.sync(pod)
	if err := r.Error(); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.StopContainerRequest); ok && req.Timeout != 7 {
			t.Errorf("stopped with grace %d, want the deletion's 7", req.Timeout)
		}
	}
	if h.fake.CallCount("StopContainer") != 3 || h.fake.CallCount("StopPodSandbox") != 1 {
		t.Fatalf("calls: %d StopContainer, %d StopPodSandbox; want 3 and 1", h.fake.CallCount("StopContainer"), h.fake.CallCount("StopPodSandbox"))
	}
	h.fake.ResetCalls()
	h.sync(pod)
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		if n := h.fake.CallCount(m); n != 0 {
			t.Errorf("deleted pod: %d %s calls", n, m)
		}
	}
}

// A pod whose spec is gone is killed from what its containers' annotations
// say: the grace period and the pre-stop hook.
func TestKillPodWithoutSpec(t *testing.T) {
	var hooks []string
	var mu sync.Mutex
	exec := func(id string, cmd []string) ([]byte, []byte, int32, error) {
		mu.Lock()
		hooks = append(hooks, cmd[0])
		mu.Unlock()
		return nil, nil, 0, nil
	}
	h := newHarness(t, false, []fake.Option{fake.WithExecFunc(exec)})
	pod := sidecarAppPod()
	pod.Spec.InitContainers = nil
	g := int64(45)
	pod.Spec.TerminationGracePeriodSeconds = &g
	h.converge(pod, 10)
	st, _ := h.syncer.Status(context.Background(), pod)
	h.fake.ResetCalls()
	if err := h.syncer.KillPod(context.Background(), nil, st, nil).Error(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([]string(nil), hooks...)
	mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("hooks run: %v, want both pre-stop hooks", got)
	}
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.StopContainerRequest); ok && req.Timeout != 45 {
			t.Errorf("grace %d, want 45 from the annotation", req.Timeout)
		}
	}
}

// A finished pod (restartPolicy Never, every container exited) is killed
// once: its sandbox is stopped by the sync that finds it finished, and
// later syncs stop nothing and report nothing, so a loop sees it settled.
// A Syncer that did not stop it (after an agent restart) stops it once
// more.
func TestFinishedPodIsKilledOnce(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			h := newHarness(t, tr.wire, []fake.Option{fake.WithStartFunc(func(*runtimeapi.ContainerConfig) *fake.Exit { return &fake.Exit{Code: 0} })})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "shop", UID: "uid-job"},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "work", Image: "busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent}}}}
			stops := func() int {
				n := 0
				for _, c := range h.fake.Calls() {
					if c.Method == "StopPodSandbox" {
						n++
					}
				}
				return n
			}
			if r := h.sync(pod); r.Error() != nil {
				t.Fatal(r.Error())
			}
			if r := h.sync(pod); r.Error() != nil || stops() != 1 {
				t.Fatalf("sync after the container exited: %v, %d StopPodSandbox calls, want 1", r.Error(), stops())
			}
			for i := 0; i < 3; i++ {
				if r := h.sync(pod); r.Error() != nil || len(r.Results) != 0 {
					t.Fatalf("sync %d of the finished pod = %+v, want nothing done", i, r)
				}
			}
			if stops() != 1 {
				t.Fatalf("%d StopPodSandbox calls, want 1", stops())
			}
			h.restart()
			h.sync(pod)
			h.sync(pod)
			if stops() != 2 {
				t.Fatalf("after a restart: %d StopPodSandbox calls, want 2", stops())
			}
		})
	}
}
