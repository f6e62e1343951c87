package probes

// Ports of kubelet v1.36.3's pkg/kubelet/prober tests (worker_test.go,
// prober_test.go, prober_manager_test.go, common_test.go) against the
// Manager, a fake clock and runtime/fake's scripted ExecSync. Each test
// names the kubelet test it follows. doProbe is called directly, as
// kubelet's tests do, so every step is deterministic.

import (
	"fmt"
	goruntime "runtime"
	"sort"
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
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

const testContainerName = "cOnTaInEr_NaMe"

var kinds = [...]Kind{Liveness, Readiness, Startup}

// recorder keeps events as "type reason message", as client-go's
// FakeRecorder formats them.
type recorder struct {
	mu   sync.Mutex
	list []string
}

func (r *recorder) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, typ+" "+reason+" "+fmt.Sprintf(format, args...))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.list
	r.list = nil
	return l
}

// env is kubelet's newTestManager: a Manager whose exec probes run on a
// fake runtime holding one running container, answering as scripted.
type env struct {
	t   *testing.T
	clk *testingclock.FakeClock
	rt  *fake.Runtime
	m   *Manager
	ev  *recorder
	id  string // the running container's ID

	mu     sync.Mutex
	code   int32
	err    error
	stdout []byte
	cmds   [][]string
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, clk: testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), ev: &recorder{}}
	e.rt = fake.New(fake.WithClock(e.clk), fake.WithExecFunc(func(_ string, cmd []string) ([]byte, []byte, int32, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.cmds = append(e.cmds, cmd)
		return e.stdout, nil, e.code, e.err
	}))
	sb := e.rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "testPod", Uid: "pOd_UiD", Namespace: "ns"}},
		runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
	id, err := e.rt.SeedContainer(sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: testContainerName},
		Image: &runtimeapi.ImageSpec{Image: "busybox"}}, fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	if err != nil {
		t.Fatal(err)
	}
	e.id = id
	e.m = New(e.rt, WithClock(e.clk), WithRecorder(e.ev))
	t.Cleanup(e.m.Close)
	return e
}

// exec scripts the probe command's answer: kubelet's fakeExecProber.
func (e *env) exec(code int32, err error) {
	e.mu.Lock()
	e.code, e.err = code, err
	e.mu.Unlock()
}

func (e *env) execCalls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.cmds)
}

// testPod is kubelet's getTestPod.
func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "testPod", Namespace: "ns", UID: "pOd_UiD"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: testContainerName}}, RestartPolicy: corev1.RestartPolicyNever}}
}

// withDefaults is kubelet's setTestProbe: an exec handler and 1 for every
// zero timeout, period and threshold.
func withDefaults(p corev1.Probe) *corev1.Probe {
	if p.ProbeHandler == (corev1.ProbeHandler{}) {
		p.Exec = &corev1.ExecAction{Command: []string{"probe"}}
	}
	for _, f := range []*int32{&p.TimeoutSeconds, &p.PeriodSeconds, &p.SuccessThreshold, &p.FailureThreshold} {
		if *f == 0 {
			*f = 1
		}
	}
	return &p
}

func setProbe(c *corev1.Container, kind Kind, p *corev1.Probe) {
	switch kind {
	case Liveness:
		c.LivenessProbe = p
	case Readiness:
		c.ReadinessProbe = p
	case Startup:
		c.StartupProbe = p
	}
}

// worker is kubelet's newWorker on pod's container c: registered with the
// Manager, not running, so the test calls doProbe.
func (e *env) worker(kind Kind, pod *corev1.Pod, c corev1.Container) *worker {
	var spec *corev1.Probe
	switch kind {
	case Liveness:
		spec = c.LivenessProbe
	case Readiness:
		spec = c.ReadinessProbe
	case Startup:
		spec = c.StartupProbe
	}
	k := key{pod.UID, c.Name, kind}
	w := newWorker(e.m, k, c, spec)
	e.m.mu.Lock()
	e.m.workers[k] = w
	w.pod = pod
	e.m.mu.Unlock()
	return w
}

// testWorker is kubelet's newTestWorker.
func (e *env) testWorker(kind Kind, p corev1.Probe) *worker {
	pod := testPod()
	setProbe(&pod.Spec.Containers[0], kind, withDefaults(p))
	return e.worker(kind, pod, pod.Spec.Containers[0])
}

// setStatus is kubelet's statusManager.SetPodStatus for the worker.
func (e *env) setStatus(w *worker, s corev1.PodStatus) {
	e.m.mu.Lock()
	w.update(w.pod, s)
	e.m.mu.Unlock()
}

func (e *env) result(w *worker) (podsync.ProbeResult, bool) { return e.m.get(w.key.kind, e.id) }

func (e *env) expectResult(w *worker, want podsync.ProbeResult, msg string) {
	e.t.Helper()
	r, ok := e.result(w)
	if !ok {
		e.t.Errorf("[%s - %s] no result, want %v", w.key.kind, msg, want)
	} else if r != want {
		e.t.Errorf("[%s - %s] result %v, want %v", w.key.kind, msg, r, want)
	}
}

func (e *env) expectContinue(w *worker, msg string) {
	e.t.Helper()
	if !w.doProbe() {
		e.t.Errorf("[%s - %s] stopped, want to continue", w.key.kind, msg)
	}
}

// running is kubelet's getTestRunningStatusWithStarted, started now.
func (e *env) running(started bool) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{{
		Name: testContainerName, ContainerID: "containerd://" + e.id, Started: &started,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(e.clk.Now())}}}}}
}

func (e *env) terminated(code int32) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: testContainerName, ContainerID: "containerd://" + e.id,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}}
}

// TestDoProbe is kubelet's TestDoProbe.
func TestDoProbe(t *testing.T) {
	for _, kind := range kinds {
		type tc struct {
			name      string
			probe     corev1.Probe
			status    func(e *env) *corev1.PodStatus
			deleting  bool
			cont      map[Kind]bool
			expectSet bool
			want      podsync.ProbeResult
		}
		all := map[Kind]bool{Liveness: true, Readiness: true, Startup: true}
		started := kind != Startup
		tests := []tc{
			{name: "no status", cont: all},
			{name: "pod failed", status: func(e *env) *corev1.PodStatus {
				s := e.running(started)
				s.Phase = corev1.PodFailed
				return &s
			}},
			{name: "pod deletion", deleting: true, status: func(e *env) *corev1.PodStatus { s := e.running(started); return &s },
				cont: map[Kind]bool{Readiness: true}, expectSet: true, want: podsync.ProbeSuccess},
			{name: "no container status", cont: all, status: func(e *env) *corev1.PodStatus {
				s := e.running(started)
				s.ContainerStatuses[0].Name = "otherContainer"
				return &s
			}},
			{name: "container waiting", cont: all, expectSet: true, want: podsync.ProbeFailure, status: func(e *env) *corev1.PodStatus {
				s := e.running(started)
				s.ContainerStatuses[0].State.Running = nil
				return &s
			}},
			{name: "container terminated", expectSet: true, want: podsync.ProbeFailure, status: func(e *env) *corev1.PodStatus {
				s := e.running(started)
				s.ContainerStatuses[0].State.Running = nil
				s.ContainerStatuses[0].State.Terminated = &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(e.clk.Now())}
				return &s
			}},
			{name: "probe successful", cont: all, expectSet: true, want: podsync.ProbeSuccess, status: func(e *env) *corev1.PodStatus { s := e.running(started); return &s }},
			{name: "initial delay passed", probe: corev1.Probe{InitialDelaySeconds: -100}, cont: all, expectSet: true, want: podsync.ProbeSuccess,
				status: func(e *env) *corev1.PodStatus { s := e.running(started); return &s }},
		}
		for _, test := range tests {
			t.Run(string(kind)+"/"+test.name, func(t *testing.T) {
				e := newEnv(t)
				w := e.testWorker(kind, test.probe)
				if test.deleting {
					now := metav1.NewTime(e.clk.Now())
					w.pod.DeletionTimestamp = &now
				}
				if test.status != nil {
					e.setStatus(w, *test.status(e))
				}
				if c := w.doProbe(); c != test.cont[kind] {
					t.Errorf("continue %v, want %v", c, test.cont[kind])
				}
				r, ok := e.result(w)
				if ok != test.expectSet {
					t.Errorf("result set %v, want %v", ok, test.expectSet)
				}
				if ok && r != test.want {
					t.Errorf("result %v, want %v", r, test.want)
				}
			})
		}
	}
}

// TestDoProbeWithContainerRestartRules is kubelet's (ContainerRestartRules
// is on by default in v1.36).
func TestDoProbeWithContainerRestartRules(t *testing.T) {
	always, never, onFailure := corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure
	rule := func(action corev1.ContainerRestartRuleAction, code int32) []corev1.ContainerRestartRule {
		return []corev1.ContainerRestartRule{{Action: action, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
			Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{code}}}}
	}
	tests := []struct {
		name   string
		policy *corev1.ContainerRestartPolicy
		rules  []corev1.ContainerRestartRule
		exit   int32
		cont   bool
	}{
		{"container failed with container restartPolicy=OnFailure", &onFailure, nil, 1, true},
		{"container succeeded with containerRestartPolicy=OnFailure", &onFailure, nil, 0, false},
		{"container failed with containerRestartPolicy=Always", &always, nil, 1, true},
		{"container succeeded with containerRestartPolicy=Always", &always, nil, 0, true},
		{"container failed with containerRestartPolicy=Never", &never, nil, 1, false},
		{"container succeeded with containerRestartPolicy=Never", &never, nil, 0, false},
		{"container terminated with matching restartPolicyRules", &never, rule(corev1.ContainerRestartRuleActionRestart, 1), 1, true},
		{"container terminated with non-matching restartPolicyRules", &never, rule(corev1.ContainerRestartRuleActionRestart, 99), 1, false},
	}
	for _, kind := range kinds {
		for _, tc := range tests {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t)
				pod := testPod()
				c := &pod.Spec.Containers[0]
				c.RestartPolicy, c.RestartPolicyRules = tc.policy, tc.rules
				setProbe(c, kind, withDefaults(corev1.Probe{}))
				w := e.worker(kind, pod, *c)
				e.setStatus(w, e.terminated(tc.exit))
				if got := w.doProbe(); got != tc.cont {
					t.Errorf("continue %v, want %v", got, tc.cont)
				}
			})
		}
	}
}

// TestDoProbeWithContainerRestartAllContainers is kubelet's
// (RestartAllContainersOnContainerExits is on by default in v1.36).
func TestDoProbeWithContainerRestartAllContainers(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	restartAll := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}
	trigger := corev1.Container{Name: "trigger", RestartPolicy: &never, RestartPolicyRules: restartAll}
	tests := []struct {
		name   string
		pod    func(kind Kind) *corev1.Pod
		status func(e *env) corev1.PodStatus
	}{
		{"container terminated with matching restartAllContainers", func(kind Kind) *corev1.Pod {
			pod := testPod()
			pod.Spec.Containers[0].RestartPolicy, pod.Spec.Containers[0].RestartPolicyRules = &never, restartAll
			setProbe(&pod.Spec.Containers[0], kind, withDefaults(corev1.Probe{}))
			return pod
		}, func(e *env) corev1.PodStatus { return e.terminated(1) }},
		{"container terminated by restartAllContainers", func(kind Kind) *corev1.Pod {
			pod := testPod()
			setProbe(&pod.Spec.Containers[0], kind, withDefaults(corev1.Probe{}))
			pod.Spec.Containers = append(pod.Spec.Containers, trigger)
			return pod
		}, func(e *env) corev1.PodStatus {
			s := e.terminated(1)
			s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{Name: "trigger",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}})
			return s
		}},
		{"container cleaned up by restartAllContainers", func(kind Kind) *corev1.Pod {
			pod := testPod()
			setProbe(&pod.Spec.Containers[0], kind, withDefaults(corev1.Probe{}))
			pod.Spec.Containers = append(pod.Spec.Containers, trigger)
			return pod
		}, func(e *env) corev1.PodStatus {
			return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: testContainerName,
				ContainerID: "containerd://" + e.id, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}}}
		}},
		{"pod says all containers are restarting", func(kind Kind) *corev1.Pod {
			pod := testPod()
			setProbe(&pod.Spec.Containers[0], kind, withDefaults(corev1.Probe{}))
			return pod
		}, func(e *env) corev1.PodStatus {
			s := e.terminated(0)
			s.Conditions = []corev1.PodCondition{{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue}}
			return s
		}},
	}
	for _, kind := range kinds {
		for _, tc := range tests {
			t.Run(string(kind)+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t)
				pod := tc.pod(kind)
				w := e.worker(kind, pod, pod.Spec.Containers[0])
				e.setStatus(w, tc.status(e))
				if !w.doProbe() {
					t.Error("stopped, want to continue")
				}
			})
		}
	}
}

// TestInitialDelay is kubelet's.
func TestInitialDelay(t *testing.T) {
	for _, kind := range kinds {
		e := newEnv(t)
		w := e.testWorker(kind, corev1.Probe{InitialDelaySeconds: 10})
		e.setStatus(w, e.running(kind != Startup))
		e.expectContinue(w, "during initial delay")
		e.expectResult(w, w.initial, "during initial delay") // Success, Failure, Unknown
		if e.execCalls() != 0 {
			t.Errorf("[%s] probed during the initial delay", kind)
		}
		later := e.running(kind != Startup)
		later.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(e.clk.Now().Add(-100 * time.Second))
		e.setStatus(w, later)
		e.expectContinue(w, "after initial delay")
		e.expectResult(w, podsync.ProbeSuccess, "after initial delay")
	}
	if want := map[Kind]podsync.ProbeResult{Liveness: podsync.ProbeSuccess, Readiness: podsync.ProbeFailure, Startup: podsync.ProbeUnknown}; true {
		e := newEnv(t)
		for _, kind := range kinds {
			if w := e.testWorker(kind, corev1.Probe{}); w.initial != want[kind] {
				t.Errorf("%s initial %v, want %v", kind, w.initial, want[kind])
			}
		}
	}
}

// TestInitialDelayOnFakeClock: the delay is measured on the Manager's clock.
func TestInitialDelayOnFakeClock(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Readiness, corev1.Probe{InitialDelaySeconds: 10})
	e.setStatus(w, e.running(true))
	e.clk.Step(9 * time.Second)
	e.expectContinue(w, "9s")
	e.expectResult(w, podsync.ProbeFailure, "9s")
	e.clk.Step(time.Second)
	e.expectContinue(w, "10s")
	e.expectResult(w, podsync.ProbeSuccess, "10s")
}

// TestFailureThreshold is kubelet's.
func TestFailureThreshold(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Readiness, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 3})
	e.setStatus(w, e.running(true))
	for i := 0; i < 2; i++ {
		e.exec(0, nil)
		for j := 0; j < 3; j++ {
			msg := fmt.Sprintf("%d success (%d)", j+1, i)
			e.expectContinue(w, msg)
			e.expectResult(w, podsync.ProbeSuccess, msg)
		}
		e.exec(1, nil)
		for j := 0; j < 2; j++ {
			msg := fmt.Sprintf("%d failing (%d)", j+1, i)
			e.expectContinue(w, msg)
			e.expectResult(w, podsync.ProbeSuccess, msg)
		}
		for j := 0; j < 3; j++ {
			msg := fmt.Sprintf("%d failure (%d)", j+3, i)
			e.expectContinue(w, msg)
			e.expectResult(w, podsync.ProbeFailure, msg)
		}
	}
}

// TestSuccessThreshold is kubelet's.
func TestSuccessThreshold(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Readiness, corev1.Probe{SuccessThreshold: 3, FailureThreshold: 1})
	e.setStatus(w, e.running(true))
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			msg := fmt.Sprintf("%d success (%d)", j+1, i)
			e.expectContinue(w, msg)
			e.expectResult(w, podsync.ProbeFailure, msg)
		}
		for j := 0; j < 3; j++ {
			msg := fmt.Sprintf("%d success (%d)", j+3, i)
			e.expectContinue(w, msg)
			e.expectResult(w, podsync.ProbeSuccess, msg)
		}
		e.exec(1, nil)
		msg := fmt.Sprintf("1 failure (%d)", i)
		e.expectContinue(w, msg)
		e.expectResult(w, podsync.ProbeFailure, msg)
		e.exec(0, nil)
	}
}

// TestStartupProbeSuccessThreshold is kubelet's.
func TestStartupProbeSuccessThreshold(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Startup, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 3})
	e.setStatus(w, e.running(false))
	if w.onHold {
		t.Error("on hold before the threshold")
	}
	e.expectContinue(w, "1 success")
	e.expectResult(w, podsync.ProbeSuccess, "1 success")
	if !w.onHold || w.resultRun != 0 {
		t.Errorf("after the success threshold: onHold %v resultRun %d, want true 0", w.onHold, w.resultRun)
	}
	e.expectContinue(w, "held")
	if n := e.execCalls(); n != 1 {
		t.Errorf("%d probes, want 1: held after startup success", n)
	}
}

// TestStartupProbeFailureThreshold is kubelet's.
func TestStartupProbeFailureThreshold(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Startup, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 3})
	e.setStatus(w, e.running(false))
	e.exec(1, nil)
	for i := 0; i < 3; i++ {
		if w.onHold {
			t.Errorf("on hold after %d failures", i)
		}
		msg := fmt.Sprintf("%d failure", i+1)
		e.expectContinue(w, msg)
		if i < 2 {
			e.expectResult(w, podsync.ProbeUnknown, msg)
			if w.resultRun != i+1 {
				t.Errorf("resultRun %d, want %d", w.resultRun, i+1)
			}
		} else {
			e.expectResult(w, podsync.ProbeFailure, msg)
			if w.resultRun != 0 {
				t.Errorf("resultRun %d, want 0", w.resultRun)
			}
		}
	}
	if !w.onHold {
		t.Error("not on hold after the failure threshold")
	}
}

// TestOnHoldOnLivenessOrStartupCheckFailure is kubelet's.
func TestOnHoldOnLivenessOrStartupCheckFailure(t *testing.T) {
	for _, kind := range []Kind{Liveness, Startup} {
		e := newEnv(t)
		w := e.testWorker(kind, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 1})
		s := e.running(kind != Startup)
		e.setStatus(w, s)
		e.exec(1, nil)
		e.expectContinue(w, "first probe")
		e.expectResult(w, podsync.ProbeFailure, "first probe")
		if !w.onHold {
			t.Errorf("[%s] not on hold after a failure", kind)
		}
		e.exec(0, nil)
		e.expectContinue(w, "while on hold")
		e.expectResult(w, podsync.ProbeFailure, "while on hold")
		if !w.onHold {
			t.Errorf("[%s] hold lifted without a new container", kind)
		}
		// A new container lifts the hold.
		e.id2(t, &s)
		e.setStatus(w, s)
		e.expectContinue(w, "hold lifted")
		e.expectResult(w, podsync.ProbeSuccess, "hold lifted")
		if kind == Liveness && w.onHold {
			t.Error("liveness still on hold")
		} else if kind == Startup && !w.onHold {
			t.Error("startup not on hold after its success")
		}
	}
}

// id2 replaces the container with a new running one and points s at it.
func (e *env) id2(t *testing.T, s *corev1.PodStatus) {
	sb := e.rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "testPod", Uid: "pOd_UiD", Namespace: "ns", Attempt: 1}},
		runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
	id, err := e.rt.SeedContainer(sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: testContainerName, Attempt: 1},
		Image: &runtimeapi.ImageSpec{Image: "busybox"}}, fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	if err != nil {
		t.Fatal(err)
	}
	e.id = id
	s.ContainerStatuses[0].ContainerID = "containerd://" + id
}

// TestResultRunOnLivenessCheckFailure is kubelet's.
func TestResultRunOnLivenessCheckFailure(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Liveness, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 3})
	e.setStatus(w, e.running(true))
	steps := []struct {
		code int32
		want podsync.ProbeResult
		run  int
	}{{0, podsync.ProbeSuccess, 1}, {1, podsync.ProbeSuccess, 1}, {1, podsync.ProbeSuccess, 2}, {1, podsync.ProbeFailure, 0}}
	for i, s := range steps {
		e.exec(s.code, nil)
		e.expectContinue(w, fmt.Sprint(i))
		e.expectResult(w, s.want, fmt.Sprint(i))
		if w.resultRun != s.run {
			t.Errorf("step %d: resultRun %d, want %d", i, w.resultRun, s.run)
		}
	}
}

// TestResultRunOnStartupCheckFailure is kubelet's.
func TestResultRunOnStartupCheckFailure(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Startup, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 3})
	e.setStatus(w, e.running(false))
	e.exec(1, nil)
	for i, s := range []struct {
		want podsync.ProbeResult
		run  int
	}{{podsync.ProbeUnknown, 1}, {podsync.ProbeUnknown, 2}, {podsync.ProbeFailure, 0}} {
		e.expectContinue(w, fmt.Sprint(i))
		e.expectResult(w, s.want, fmt.Sprint(i))
		if w.resultRun != s.run {
			t.Errorf("step %d: resultRun %d, want %d", i, w.resultRun, s.run)
		}
	}
}

// TestDoProbe_TerminatedRestartableInitContainerWithRestartPolicyNever is
// kubelet's: a sidecar keeps being probed in a pod that never restarts.
func TestDoProbe_TerminatedRestartableInitContainerWithRestartPolicyNever(t *testing.T) {
	e := newEnv(t)
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod()
	init := corev1.Container{Name: testContainerName, RestartPolicy: &always, StartupProbe: withDefaults(corev1.Probe{})}
	pod.Spec.InitContainers = []corev1.Container{init}
	pod.Spec.Containers = []corev1.Container{{Name: "main-container"}}
	w := e.worker(Startup, pod, init)
	s := e.running(true)
	s.ContainerStatuses[0].Name = "main-container"
	s.ContainerStatuses[0].ContainerID = "containerd://other"
	s.InitContainerStatuses = []corev1.ContainerStatus{{Name: testContainerName, ContainerID: "containerd://" + e.id,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(e.clk.Now())}}}}
	e.setStatus(w, s)
	if !w.doProbe() {
		t.Error("stopped probing a terminated sidecar in a pod with restartPolicy Never")
	}
	e.expectResult(w, podsync.ProbeFailure, "terminated sidecar")
}

// TestDoProbe_TerminatedContainerWithRestartPolicyNever is kubelet's.
func TestDoProbe_TerminatedContainerWithRestartPolicyNever(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Startup, corev1.Probe{})
	s := e.running(false)
	s.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(e.clk.Now())}}
	e.setStatus(w, s)
	if w.doProbe() {
		t.Error("kept probing a terminated container in a pod with restartPolicy Never")
	}
	e.expectResult(w, podsync.ProbeFailure, "terminated container")
}

// TestLivenessProbeDisabledByStarted is kubelet's.
func TestLivenessProbeDisabledByStarted(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Liveness, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 1})
	s := e.running(false)
	e.setStatus(w, s)
	e.exec(1, nil)
	e.expectContinue(w, "not started, probe failure")
	e.expectResult(w, podsync.ProbeSuccess, "not started, probe failure")
	started := true
	s.ContainerStatuses[0].Started = &started
	e.setStatus(w, s)
	e.expectContinue(w, "started, probe failure")
	e.expectResult(w, podsync.ProbeFailure, "started, probe failure")
}

// TestStartupProbeDisabledByStarted is kubelet's.
func TestStartupProbeDisabledByStarted(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Startup, corev1.Probe{SuccessThreshold: 1, FailureThreshold: 2})
	s := e.running(false)
	e.setStatus(w, s)
	e.exec(1, nil)
	e.expectContinue(w, "not started, probe failure")
	e.expectResult(w, podsync.ProbeUnknown, "not started, probe failure")
	e.exec(0, nil)
	e.expectContinue(w, "probe success")
	e.expectResult(w, podsync.ProbeSuccess, "probe success")
	started := true
	s.ContainerStatuses[0].Started = &started
	e.setStatus(w, s)
	e.exec(1, nil)
	w.onHold = false // kubelet's test goes on probing the same worker
	e.expectContinue(w, "started, probe failure")
	e.expectResult(w, podsync.ProbeSuccess, "started, probe failure")
}

// TestChangeContainerStatusOnKubeletRestart is kubelet's, with the feature
// gate at its v1.36 default (off): a container found running since before
// the Manager was made gets no initial result, except a started sidecar's
// startup probe, which reads Success.
func TestChangeContainerStatusOnKubeletRestart(t *testing.T) {
	tests := []struct {
		name      string
		restart   bool
		kind      Kind
		sidecar   bool
		expectSet bool
		want      podsync.ProbeResult
	}{
		{"is restart, readiness", true, Readiness, false, false, 0},
		{"is restart, liveness", true, Liveness, false, false, 0},
		{"is restart, startup", true, Startup, false, false, 0},
		{"not restart, readiness", false, Readiness, false, true, podsync.ProbeFailure},
		{"not restart, liveness", false, Liveness, false, true, podsync.ProbeSuccess},
		{"not restart, startup", false, Startup, false, true, podsync.ProbeUnknown},
		{"is restart, startup, sidecar", true, Startup, true, true, podsync.ProbeSuccess},
		{"is restart, liveness, sidecar", true, Liveness, true, false, 0},
		{"is restart, readiness, sidecar", true, Readiness, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			startedAt := e.m.start.Add(5 * time.Minute)
			if tc.restart {
				startedAt = e.m.start.Add(-5 * time.Minute)
			}
			s := e.running(true)
			s.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(startedAt)
			pod := testPod()
			c := &pod.Spec.Containers[0]
			if tc.sidecar {
				always := corev1.ContainerRestartPolicyAlways
				pod.Spec.InitContainers = []corev1.Container{{Name: testContainerName, RestartPolicy: &always}}
				pod.Spec.Containers = []corev1.Container{{Name: "main-container"}}
				c = &pod.Spec.InitContainers[0]
				s.InitContainerStatuses, s.ContainerStatuses = s.ContainerStatuses, nil
			}
			setProbe(c, tc.kind, withDefaults(corev1.Probe{InitialDelaySeconds: 1000}))
			w := e.worker(tc.kind, pod, *c)
			e.setStatus(w, s)
			w.doProbe()
			r, ok := e.result(w)
			if ok != tc.expectSet {
				t.Fatalf("result set %v, want %v", ok, tc.expectSet)
			}
			if ok && r != tc.want {
				t.Errorf("result %v, want %v", r, tc.want)
			}
		})
	}
}

// TestProbe is kubelet's prober TestProbe for exec handlers, plus the
// retries of runProbeWithRetries: an error is retried up to three times,
// reported as "errored and resulted in unknown state" and changes no
// result; a failure or a success is not retried.
func TestProbe(t *testing.T) {
	notFound := status.Error(codes.Unknown, `failed to exec in container: failed to start exec "x": OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown`)
	tests := []struct {
		name     string
		handler  corev1.ProbeHandler
		env      []corev1.EnvVar
		code     int32
		err      error
		want     podsync.ProbeResult // after one doProbe with thresholds 1
		calls    int
		events   []string
		wantCmds [][]string
	}{
		{name: "no handler", handler: corev1.ProbeHandler{TCPSocket: nil}, calls: 0,
			events: []string{"Warning Unhealthy Readiness probe errored and resulted in unknown state: missing probe handler for testPod_ns(pOd_UiD):" + testContainerName}},
		{name: "probe fails", code: 1, want: podsync.ProbeFailure, calls: 1, events: []string{"Warning Unhealthy Readiness probe failed: out"}},
		{name: "probe succeeds", want: podsync.ProbeSuccess, calls: 1},
		{name: "unknown with an error (command not found): three tries, no result", err: notFound, calls: 3,
			events: []string{"Warning Unhealthy Readiness probe errored and resulted in unknown state: " + notFound.Error()}},
		{name: "container gone: an error", err: status.Error(codes.NotFound, "container not found"), calls: 3,
			events: []string{"Warning Unhealthy Readiness probe errored and resulted in unknown state: rpc error: code = NotFound desc = container not found"}},
		{name: "timeout is a failure (ExecProbeTimeout)", err: status.Error(codes.DeadlineExceeded, "context deadline exceeded"),
			handler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "10"}}}, want: podsync.ProbeFailure, calls: 1,
			events: []string{`Warning Unhealthy Readiness probe failed: command timed out: "sleep 10" timed out after 1s`}},
		{name: "arguments are passed through", handler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/bash", "-c", "some script"}}},
			want: podsync.ProbeSuccess, calls: 1, wantCmds: [][]string{{"/bin/bash", "-c", "some script"}}},
		{name: "static env is expanded", handler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/bash", "-c", "some $(A) $(B)"}}},
			env: []corev1.EnvVar{{Name: "A", Value: "script"}}, want: podsync.ProbeSuccess, calls: 1, wantCmds: [][]string{{"/bin/bash", "-c", "some script $(B)"}}},
		{name: "valueFrom env expands to empty", handler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"echo", "[$(S)]"}}},
			env:  []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}},
			want: podsync.ProbeSuccess, calls: 1, wantCmds: [][]string{{"echo", "[]"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.stdout = []byte("out")
			e.exec(tc.code, tc.err)
			p := corev1.Probe{ProbeHandler: tc.handler}
			pod := testPod()
			pod.Spec.Containers[0].Env = tc.env
			p2 := withDefaults(p)
			if tc.name == "no handler" {
				p2.ProbeHandler = corev1.ProbeHandler{}
			}
			setProbe(&pod.Spec.Containers[0], Readiness, p2)
			w := e.worker(Readiness, pod, pod.Spec.Containers[0])
			e.setStatus(w, e.running(true))
			e.expectContinue(w, tc.name)
			want := tc.want
			if want == podsync.ProbeUnknown {
				want = podsync.ProbeFailure // the initial readiness, unchanged
			}
			e.expectResult(w, want, tc.name)
			if n := e.execCalls(); n != tc.calls {
				t.Errorf("%d ExecSync calls, want %d", n, tc.calls)
			}
			if got := e.ev.take(); strings.Join(got, "\n") != strings.Join(tc.events, "\n") {
				t.Errorf("events\n%q\nwant\n%q", got, tc.events)
			}
			if tc.wantCmds != nil && fmt.Sprint(e.cmds) != fmt.Sprint(tc.wantCmds) {
				t.Errorf("commands %q, want %q", e.cmds, tc.wantCmds)
			}
		})
	}
}

// TestProbeErrorKeepsLastResult: kubelet's worker throws an errored probe
// away: neither the result nor the run of equal results moves.
func TestProbeErrorKeepsLastResult(t *testing.T) {
	e := newEnv(t)
	w := e.testWorker(Liveness, corev1.Probe{FailureThreshold: 2})
	e.setStatus(w, e.running(true))
	e.exec(1, nil)
	e.expectContinue(w, "failure 1")
	e.exec(0, status.Error(codes.Unknown, "exec failed"))
	e.expectContinue(w, "error")
	e.expectResult(w, podsync.ProbeSuccess, "error")
	if w.resultRun != 1 {
		t.Errorf("resultRun %d after an error, want 1", w.resultRun)
	}
	e.exec(1, nil)
	e.expectContinue(w, "failure 2")
	e.expectResult(w, podsync.ProbeFailure, "failure 2")
}

// TestNewExecInContainer is kubelet's: the output (stdout, then stderr) is
// cut at 10 KiB.
func TestNewExecInContainer(t *testing.T) {
	tenKiB := strings.Repeat("logs-123", 128*10)
	for _, tc := range []struct {
		name, stdout, want string
	}{
		{"short", "foo", "foo"},
		{"ten KiB and more", tenKiB + "tail", tenKiB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.stdout = []byte(tc.stdout)
			e.exec(1, nil)
			w := e.testWorker(Readiness, corev1.Probe{})
			e.setStatus(w, e.running(true))
			e.expectContinue(w, tc.name)
			ev := e.ev.take()
			if len(ev) != 1 || ev[0] != "Warning Unhealthy Readiness probe failed: "+tc.want {
				t.Errorf("event %.80q (len %d), want the output cut at %d bytes", ev, len(strings.Join(ev, "")), len(tc.want))
			}
		})
	}
	if got := limited([]byte("ab"), []byte(strings.Repeat("c", maxOutput))); len(got) != maxOutput || got[:3] != "abc" {
		t.Errorf("stdout+stderr cut: len %d, starts %q", len(got), got[:3])
	}
}

// TestCleanUp is kubelet's: a running worker, stopped (several times),
// leaves no result and no worker.
func TestCleanUp(t *testing.T) {
	for _, kind := range kinds {
		e := newEnv(t)
		changed := make(chan struct{}, 10)
		e.m.AddListener(func(_ types.UID) { changed <- struct{}{} })
		pod := testPod()
		setProbe(&pod.Spec.Containers[0], kind, withDefaults(corev1.Probe{}))
		e.m.Update(pod, e.running(kind != Startup))
		for {
			<-changed
			if r, _ := e.m.get(kind, e.id); r == podsync.ProbeSuccess {
				break
			}
		}
		for i := 0; i < 10; i++ {
			e.m.RemovePod(pod.UID) // callable many times
		}
		if _, ok := e.m.get(kind, e.id); ok {
			t.Errorf("[%s] result kept after RemovePod", kind)
		}
		e.m.mu.Lock()
		n := len(e.m.workers)
		e.m.mu.Unlock()
		if n != 0 {
			t.Errorf("[%s] %d workers after RemovePod", kind, n)
		}
		e.m.Close()
	}
}

func (e *env) workerCount() int {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return len(e.m.workers)
}

// TestStoppedWorkerNotRemade: kubelet's worker stops on a container that
// terminated for good (TestDoProbe "container terminated") and kubelet
// calls AddPod at each sync. Update is called at each sync too, and a
// result change wakes the pod: a worker made again on the same container
// would set its initial result, wake the pod, be made again, without end.
// It is made again only for a new container, and RemovePod forgets it.
func TestStoppedWorkerNotRemade(t *testing.T) {
	e := newEnv(t)
	changes := 0
	pod := testPod()
	setProbe(&pod.Spec.Containers[0], Readiness, withDefaults(corev1.Probe{}))
	s := e.terminated(0)
	var mu sync.Mutex
	e.m.AddListener(func(types.UID) { mu.Lock(); changes++; mu.Unlock() })
	e.m.Update(pod, s)
	for e.workerCount() != 0 {
		goruntime.Gosched() // the worker stops by itself
	}
	for i := 0; i < 3; i++ {
		e.m.Update(pod, s)
		if n := e.workerCount(); n != 0 {
			t.Fatalf("sync %d: %d workers made again on the same terminated container", i, n)
		}
	}
	mu.Lock()
	if changes != 1 {
		t.Errorf("%d changes, want 1 (the initial result)", changes)
	}
	mu.Unlock()
	if _, ok := e.result(&worker{key: key{kind: Readiness}}); ok {
		t.Error("a stopped worker's result is kept")
	}
	// A new container instance gets a worker.
	r := e.running(true)
	e.id2(t, &r)
	e.m.Update(pod, r)
	if n := e.workerCount(); n != 1 {
		t.Errorf("%d workers for a new container, want 1", n)
	}
	e.m.RemovePod(pod.UID)
	e.m.mu.Lock()
	left := len(e.m.stopped)
	e.m.mu.Unlock()
	if left != 0 {
		t.Errorf("RemovePod left %d stopped workers remembered", left)
	}
}

// TestAddRemovePods is kubelet's: a worker per probe of each container and
// sidecar (TestAddRemovePodsWithRestartableInitContainer), none for a
// regular init container, and RemovePod stops them all.
func TestAddRemovePods(t *testing.T) {
	e := newEnv(t)
	p := withDefaults(corev1.Probe{})
	always := corev1.ContainerRestartPolicyAlways
	noProbe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "no_probe_pod"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	probePod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "probe_pod"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", ReadinessProbe: p}, {Name: "restartable-init", RestartPolicy: &always, LivenessProbe: p, ReadinessProbe: p, StartupProbe: p}},
		Containers:     []corev1.Container{{Name: "probe1"}, {Name: "readiness", ReadinessProbe: p}, {Name: "liveness", LivenessProbe: p}, {Name: "startup", StartupProbe: p}}}}
	keys := func() []string {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		var l []string
		for k := range e.m.workers {
			l = append(l, fmt.Sprintf("%s/%s/%s", k.uid, k.container, k.kind))
		}
		sort.Strings(l)
		return l
	}
	e.m.Update(noProbe, corev1.PodStatus{})
	if k := keys(); len(k) != 0 {
		t.Errorf("workers for a pod without probes: %v", k)
	}
	e.m.Update(probePod, corev1.PodStatus{})
	want := "[probe_pod/liveness/Liveness probe_pod/readiness/Readiness probe_pod/restartable-init/Liveness probe_pod/restartable-init/Readiness probe_pod/restartable-init/Startup probe_pod/startup/Startup]"
	if k := fmt.Sprint(keys()); k != want {
		t.Errorf("workers %s\nwant    %s", k, want)
	}
	e.m.RemovePod(noProbe.UID)
	if k := fmt.Sprint(keys()); k != want {
		t.Errorf("after removing the pod without probes: %s", k)
	}
	e.m.RemovePod(probePod.UID)
	e.m.RemovePod(probePod.UID)
	if k := keys(); len(k) != 0 {
		t.Errorf("after RemovePod: %v", k)
	}
}

// TestRemovePodDuringProbe: a probe still running when its pod is removed
// records nothing (kubelet's TestCleanUp asks that no result stays).
func TestRemovePodDuringProbe(t *testing.T) {
	e := newEnv(t)
	entered, release := e.rt.Hang("ExecSync")
	defer release()
	pod := testPod()
	setProbe(&pod.Spec.Containers[0], Readiness, withDefaults(corev1.Probe{}))
	e.m.Update(pod, e.running(true))
	<-entered
	e.m.RemovePod(pod.UID)
	release()
	e.m.Close() // waits for the worker
	if _, ok := e.m.get(Readiness, e.id); ok {
		t.Error("a result was recorded after RemovePod")
	}
	if got := e.ev.take(); len(got) != 0 {
		t.Errorf("events for a probe cut short by RemovePod: %q", got)
	}
}
