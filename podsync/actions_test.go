package podsync

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ---- builders ----

var always = corev1.ContainerRestartPolicyAlways

func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "new", UID: "12345678"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{
				{Name: "foo1", Image: "busybox"},
				{Name: "foo2", Image: "busybox"},
				{Name: "foo3", Image: "busybox"},
			},
		},
	}
}

func initPod(sidecars ...bool) *corev1.Pod {
	p := basePod()
	p.Spec.Containers = p.Spec.Containers[:2]
	for i, sc := range sidecars {
		c := corev1.Container{Name: fmt.Sprintf("init%d", i+1), Image: "busybox"}
		if sc {
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	return p
}

func sandbox(id string, attempt uint32, ready bool, ip string) *runtimeapi.PodSandboxStatus {
	st := runtimeapi.PodSandboxState_SANDBOX_READY
	if !ready {
		st = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	}
	return &runtimeapi.PodSandboxStatus{
		Id: id, State: st, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: attempt},
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux:   &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD}}},
	}
}

func cs(name string, state ContainerState, exit int) *ContainerStatus {
	return &ContainerStatus{ID: "id-" + name, Name: name, State: state, ExitCode: exit,
		Hash: HashContainer(&corev1.Container{Name: name, Image: "busybox"}), FinishedAt: time.Unix(100, 0)}
}

func running(name string) *ContainerStatus { return cs(name, ContainerStateRunning, 0) }
func exited(name string, code int) *ContainerStatus {
	return cs(name, ContainerStateExited, code)
}
func created(name string) *ContainerStatus { return cs(name, ContainerStateCreated, 0) }
func unknown(name string) *ContainerStatus { return cs(name, ContainerStateUnknown, 0) }

func statusOf(sandboxes []*runtimeapi.PodSandboxStatus, containers ...*ContainerStatus) *PodStatus {
	return &PodStatus{UID: "12345678", Name: "foo", Namespace: "new", SandboxStatuses: sandboxes, ContainerStatuses: containers}
}

func ready() []*runtimeapi.PodSandboxStatus {
	return []*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, true, "10.0.0.1")}
}

type probes struct{ live, start map[string]ProbeResult }

func (p probes) Liveness(id string) (ProbeResult, bool) { r, ok := p.live[id]; return r, ok }
func (p probes) Startup(id string) (ProbeResult, bool)  { r, ok := p.start[id]; return r, ok }

// want is the part of Actions a case checks; kills map an ID to a reason.
type want struct {
	killPod, createSandbox bool
	sandboxID              string
	attempt                uint32
	init, start, ephemeral []int
	kill                   map[string]KillReason
}

func check(t *testing.T, got Actions, w want) {
	t.Helper()
	if w.start == nil {
		w.start = []int{}
	}
	kills := map[string]KillReason{}
	for id, k := range got.ContainersToKill {
		kills[id] = k.Reason
	}
	if w.kill == nil {
		w.kill = map[string]KillReason{}
	}
	if got.KillPod != w.killPod || got.CreateSandbox != w.createSandbox || got.SandboxID != w.sandboxID || got.Attempt != w.attempt ||
		!reflect.DeepEqual(got.InitContainersToStart, w.init) || !reflect.DeepEqual(got.ContainersToStart, w.start) ||
		!reflect.DeepEqual(got.EphemeralContainersToStart, w.ephemeral) || !reflect.DeepEqual(kills, w.kill) {
		t.Fatalf("got  kill=%v create=%v sb=%q att=%d init=%v start=%v eph=%v kill=%v\nwant kill=%v create=%v sb=%q att=%d init=%v start=%v eph=%v kill=%v\n(%s)",
			got.KillPod, got.CreateSandbox, got.SandboxID, got.Attempt, got.InitContainersToStart, got.ContainersToStart, got.EphemeralContainersToStart, kills,
			w.killPod, w.createSandbox, w.sandboxID, w.attempt, w.init, w.start, w.ephemeral, w.kill, got)
	}
}

type tcase struct {
	name   string
	pod    *corev1.Pod
	status *PodStatus
	probes ProbeResults
	want   want
}

func run(t *testing.T, cases []tcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, ComputePodActions(tc.pod, tc.status, tc.probes), tc.want)
		})
	}
}

func withPolicy(p *corev1.Pod, rp corev1.RestartPolicy) *corev1.Pod {
	p.Spec.RestartPolicy = rp
	return p
}

// neverContainers gives the app containers at idx restartPolicy Never.
func neverContainers(p *corev1.Pod, idx ...int) *corev1.Pod {
	for _, i := range idx {
		p.Spec.Containers[i].RestartPolicy = new(corev1.ContainerRestartPolicyNever)
	}
	return p
}

func hostNet(p *corev1.Pod) *corev1.Pod { p.Spec.HostNetwork = true; return p }

// ---- sandbox ----

func TestSandboxActions(t *testing.T) {
	t.Parallel()
	nodeNS := sandbox("sb0", 0, true, "")
	nodeNS.Linux.Namespaces.Options.Network = runtimeapi.NamespaceMode_NODE
	noNetStatus := sandbox("sb0", 0, true, "")
	noNetStatus.Network = nil
	noNSOptions := sandbox("sb0", 0, true, "")
	noNSOptions.Linux = nil
	run(t, []tcase{
		{"new pod: create sandbox, start all", basePod(), statusOf(nil), nil,
			want{killPod: true, createSandbox: true, start: []int{0, 1, 2}}},
		{"nil status is a new pod", basePod(), nil, nil,
			want{killPod: true, createSandbox: true, start: []int{0, 1, 2}}},
		{"everything running: nothing to do", basePod(), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0"}},
		{"attempt is max, not 0, when nothing changes", basePod(), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb1", 0, true, "10.0.0.1"), sandbox("sb0", 1, false, "10.0.0.1")}, running("foo1"), running("foo2"), running("foo3")), nil,
			want{sandboxID: "sb1", attempt: 1}},
		{"two ready sandboxes: recreate", basePod(), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb1", 1, true, "10.0.0.1"), sandbox("sb0", 0, true, "10.0.0.1")}, running("foo1")), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb1", attempt: 2, start: []int{0, 1, 2}}},
		{"newest sandbox not ready: recreate", basePod(), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "10.0.0.1")}, exited("foo1", 0)), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb0", attempt: 1, start: []int{0, 1, 2}}},
		{"no IP on a pod-network pod: recreate", basePod(), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, true, "")}, running("foo1")), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb0", attempt: 1, start: []int{0, 1, 2}}},
		{"no IP but no network status: keep", basePod(), statusOf([]*runtimeapi.PodSandboxStatus{noNetStatus}, running("foo1"), running("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0"}},
		{"host network pod without IP: keep", hostNet(basePod()), statusOf([]*runtimeapi.PodSandboxStatus{nodeNS}, running("foo1"), running("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0"}},
		{"network namespace changed: recreate with empty sandbox ID", hostNet(basePod()), statusOf(ready(), running("foo1")), nil,
			want{killPod: true, createSandbox: true, sandboxID: "", attempt: 1, start: []int{0, 1, 2}}},
		{"missing namespace options read as POD (host network pod recreated)", hostNet(basePod()), statusOf([]*runtimeapi.PodSandboxStatus{noNSOptions}, running("foo1")), nil,
			want{killPod: true, createSandbox: true, sandboxID: "", attempt: 1, start: []int{0, 1, 2}}},
		{"Never: dead sandbox with container statuses is not recreated", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 1, false, "")}, exited("foo1", 0)), nil,
			want{killPod: true, sandboxID: "sb0", attempt: 2}},
		{"Never: dead sandbox at attempt 0 is recreated", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 0)), nil,
			want{killPod: true, sandboxID: "sb0", attempt: 1}},
		{"Never: no container ever created, sandbox recreated", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 1, false, "")}), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb0", attempt: 2, start: []int{0, 1, 2}}},
		{"OnFailure: dead sandbox, skip the succeeded container", withPolicy(basePod(), corev1.RestartPolicyOnFailure), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 0), exited("foo2", 1)), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb0", attempt: 1, start: []int{1, 2}}},
		{"OnFailure: dead sandbox, everything succeeded: kill only", withPolicy(basePod(), corev1.RestartPolicyOnFailure), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 0), exited("foo2", 0), exited("foo3", 0)), nil,
			want{killPod: true, sandboxID: "sb0", attempt: 1}},
		// ContainerRestartRules: kubelet's phase is Failed, so its SyncPod
		// stops before computePodActions and no sandbox is made again.
		// Found by the conformance spec "Pod Extended (container restart
		// policy) Container Restart Rules should restart container on
		// container-level restart policy Never" (restartCount must stay 0).
		{"Always pod, every container Never and failed: dead sandbox not recreated", neverContainers(basePod(), 0, 1, 2), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 1), exited("foo2", 1), exited("foo3", 0)), nil,
			want{killPod: true, sandboxID: "sb0", attempt: 1}},
		{"Always pod, one container Never and failed: recreated for the others", neverContainers(basePod(), 0), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 1), exited("foo2", 1), exited("foo3", 0)), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb0", attempt: 1, start: []int{0, 1, 2}}},
		{"Always pod, containers Never, a rule matches the exit: recreated", func() *corev1.Pod {
			p := neverContainers(basePod(), 0, 1, 2)
			p.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			return p
		}(), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 42), exited("foo2", 1), exited("foo3", 0)), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb0", attempt: 1, start: []int{0, 1, 2}}},
		{"Always pod, init container Never failed: dead sandbox not recreated", func() *corev1.Pod {
			p := initPod(false)
			p.Spec.InitContainers[0].RestartPolicy = new(corev1.ContainerRestartPolicyNever)
			return p
		}(), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("init1", 1)), nil,
			want{killPod: true, sandboxID: "sb0", attempt: 1}},
		{"new sandbox with init containers: start the first init only", initPod(false, false), statusOf(nil), nil,
			want{killPod: true, createSandbox: true, init: []int{0}}},
		{"new sandbox with a sidecar first: start it only", initPod(true, false), statusOf(nil), nil,
			want{killPod: true, createSandbox: true, init: []int{0}}},
		{"dead sandbox after reboot: re-initialise from the first init", initPod(false), statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 137), exited("init1", 0)), nil,
			want{killPod: true, createSandbox: true, sandboxID: "sb0", attempt: 1, init: []int{0}}},
		{"ephemeral containers not started on the sandbox path", func() *corev1.Pod {
			p := basePod()
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
			return p
		}(), statusOf(nil), nil, want{killPod: true, createSandbox: true, start: []int{0, 1, 2}}},
	})
}

// ---- app containers and restart policy ----

func TestAppContainerActions(t *testing.T) {
	t.Parallel()
	changed := running("foo2")
	changed.Hash = 1
	deleting := basePod()
	deleting.DeletionTimestamp = &metav1.Time{}
	fail := probes{live: map[string]ProbeResult{"id-foo1": ProbeFailure}}
	startFail := probes{start: map[string]ProbeResult{"id-foo1": ProbeFailure}}
	liveOK := probes{live: map[string]ProbeResult{"id-foo1": ProbeSuccess}, start: map[string]ProbeResult{"id-foo1": ProbeUnknown}}
	run(t, []tcase{
		{"Always: restart exited (0)", basePod(), statusOf(ready(), running("foo1"), exited("foo2", 0), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"Always: restart exited (1)", basePod(), statusOf(ready(), running("foo1"), exited("foo2", 1), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"Always: start a container with no status", basePod(), statusOf(ready(), running("foo1"), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"OnFailure: restart failed only", withPolicy(basePod(), corev1.RestartPolicyOnFailure), statusOf(ready(), exited("foo1", 0), exited("foo2", 1), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"Never: no restart", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf(ready(), exited("foo1", 0), exited("foo2", 1), running("foo3")), nil,
			want{sandboxID: "sb0"}},
		{"Never: a container never created is started", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf(ready(), running("foo1"), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"Never: created container is started", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf(ready(), running("foo1"), created("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"Never: unknown container killed then started", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf(ready(), running("foo1"), unknown("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}, kill: map[string]KillReason{"id-foo2": KillReasonUnknown}}},
		{"Always: unknown container killed then started", basePod(), statusOf(ready(), running("foo1"), unknown("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}, kill: map[string]KillReason{"id-foo2": KillReasonUnknown}}},
		{"created container restarted", basePod(), statusOf(ready(), running("foo1"), created("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"Never: all exited: kill pod", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf(ready(), exited("foo1", 0), exited("foo2", 1), exited("foo3", 0)), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"OnFailure: all succeeded: kill pod", withPolicy(basePod(), corev1.RestartPolicyOnFailure), statusOf(ready(), exited("foo1", 0), exited("foo2", 0), exited("foo3", 0)), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"hash changed: kill and restart", basePod(), statusOf(ready(), running("foo1"), changed, running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}, kill: map[string]KillReason{"id-foo2": KillReasonNone}}},
		{"hash changed under Never: still restarted", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf(ready(), running("foo1"), changed, running("foo3")), nil,
			want{sandboxID: "sb0", start: []int{1}, kill: map[string]KillReason{"id-foo2": KillReasonNone}}},
		{"liveness failure: kill and restart", basePod(), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), fail,
			want{sandboxID: "sb0", start: []int{0}, kill: map[string]KillReason{"id-foo1": KillReasonLivenessProbe}}},
		{"liveness failure under Never: kill only", withPolicy(basePod(), corev1.RestartPolicyNever), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), fail,
			want{sandboxID: "sb0", kill: map[string]KillReason{"id-foo1": KillReasonLivenessProbe}}},
		{"liveness failure under OnFailure: kill and restart", withPolicy(basePod(), corev1.RestartPolicyOnFailure), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), fail,
			want{sandboxID: "sb0", start: []int{0}, kill: map[string]KillReason{"id-foo1": KillReasonLivenessProbe}}},
		{"startup failure: kill and restart", basePod(), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), startFail,
			want{sandboxID: "sb0", start: []int{0}, kill: map[string]KillReason{"id-foo1": KillReasonStartupProbe}}},
		{"liveness success, startup unknown: keep", basePod(), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), liveOK,
			want{sandboxID: "sb0"}},
		{"only container killed by liveness under Never: kill pod too", func() *corev1.Pod {
			p := withPolicy(basePod(), corev1.RestartPolicyNever)
			p.Spec.Containers = p.Spec.Containers[:1]
			return p
		}(), statusOf(ready(), running("foo1")), fail,
			want{killPod: true, sandboxID: "sb0", kill: map[string]KillReason{"id-foo1": KillReasonLivenessProbe}}},
		{"being deleted: nothing restarted, pod killed", deleting, statusOf(ready(), exited("foo1", 1), exited("foo2", 1), exited("foo3", 1)), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"newest status decides (restarted instance first)", basePod(), statusOf(ready(), running("foo1"), exited("foo1", 1), running("foo2"), running("foo3")), nil,
			want{sandboxID: "sb0"}},
		{"ephemeral: start those without status only", func() *corev1.Pod {
			p := basePod()
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{
				{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug1"}},
				{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug2"}},
			}
			return p
		}(), statusOf(ready(), running("foo1"), running("foo2"), running("foo3"), exited("debug1", 1)), nil,
			want{sandboxID: "sb0", ephemeral: []int{1}}},
	})
}

// ---- regular init containers ----

func TestInitContainerActions(t *testing.T) {
	t.Parallel()
	oom := exited("init1", 0)
	oom.Reason = "OOMKilled"
	run(t, []tcase{
		{"first init running: wait", initPod(false, false), statusOf(ready(), running("init1")), nil,
			want{sandboxID: "sb0"}},
		{"first init done: start the second", initPod(false, false), statusOf(ready(), exited("init1", 0)), nil,
			want{sandboxID: "sb0", init: []int{1}}},
		{"second init running: wait", initPod(false, false), statusOf(ready(), running("init2"), exited("init1", 0)), nil,
			want{sandboxID: "sb0"}},
		{"last init done: start app containers", initPod(false, false), statusOf(ready(), exited("init2", 0), exited("init1", 0)), nil,
			want{sandboxID: "sb0", start: []int{0, 1}}},
		{"last init done, first init GC'd: start app containers", initPod(false, false), statusOf(ready(), exited("init2", 0)), nil,
			want{sandboxID: "sb0", start: []int{0, 1}}},
		{"no init status in a ready sandbox: start the first", initPod(false, false), statusOf(ready()), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"init failed, Always: retry it", initPod(false, false), statusOf(ready(), exited("init1", 1)), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"init failed, OnFailure: retry it", withPolicy(initPod(false, false), corev1.RestartPolicyOnFailure), statusOf(ready(), exited("init1", 1)), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"init failed, Never: kill pod", withPolicy(initPod(false, false), corev1.RestartPolicyNever), statusOf(ready(), exited("init1", 1)), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"second init failed, Never: kill pod", withPolicy(initPod(false, false), corev1.RestartPolicyNever), statusOf(ready(), exited("init2", 2), exited("init1", 0)), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"OOMKilled with exit 0 counts as failure: retry", initPod(false, false), statusOf(ready(), oom), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"OOMKilled with exit 0 under Never: kill pod", withPolicy(initPod(false, false), corev1.RestartPolicyNever), statusOf(ready(), oom), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"init unknown: kill it and retry", initPod(false, false), statusOf(ready(), unknown("init1")), nil,
			want{sandboxID: "sb0", init: []int{0}, kill: map[string]KillReason{"id-init1": KillReasonUnknown}}},
		{"init unknown under Never: kill pod", withPolicy(initPod(false, false), corev1.RestartPolicyNever), statusOf(ready(), unknown("init1")), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"init stuck in created: start it again (kubernetes#127212)", initPod(false, false), statusOf(ready(), created("init1")), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"app container running: init containers are done even if GC'd", initPod(false, false), statusOf(ready(), running("foo1")), nil,
			want{sandboxID: "sb0", start: []int{1}}},
		{"app container exited only: re-run init (kubernetes#120269)", initPod(false, false), statusOf(ready(), exited("foo1", 0)), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"app container created: initialised", initPod(false, false), statusOf(ready(), created("foo1"), exited("init2", 0)), nil,
			want{sandboxID: "sb0", start: []int{0, 1}}},
		{"finished regular init is never re-run once initialised", initPod(false, false), statusOf(ready(), running("foo1"), running("foo2"), exited("init1", 1)), nil,
			want{sandboxID: "sb0"}},
	})
}

// ---- sidecars ----

func sidecarPod(startupProbe bool) *corev1.Pod {
	p := initPod(true, false)
	if startupProbe {
		p.Spec.InitContainers[0].StartupProbe = &corev1.Probe{}
	}
	return p
}

func TestSidecarActions(t *testing.T) {
	t.Parallel()
	changed := running("init1")
	changed.Hash = 7
	withLiveness := sidecarPod(false)
	withLiveness.Spec.InitContainers[0].LivenessProbe = &corev1.Probe{}
	onlySidecar := initPod(true)
	sidecarLast := initPod(false, true)
	run(t, []tcase{
		{"sidecar started: start the next init without waiting for it to exit", sidecarPod(false), statusOf(ready(), running("init1")), nil,
			want{sandboxID: "sb0", init: []int{1}}},
		{"sidecar with startup probe, no result: wait", sidecarPod(true), statusOf(ready(), running("init1")), nil,
			want{sandboxID: "sb0"}},
		{"sidecar startup in progress: wait", sidecarPod(true), statusOf(ready(), running("init1")), probes{start: map[string]ProbeResult{"id-init1": ProbeUnknown}},
			want{sandboxID: "sb0"}},
		{"sidecar startup succeeded: start next", sidecarPod(true), statusOf(ready(), running("init1")), probes{start: map[string]ProbeResult{"id-init1": ProbeSuccess}},
			want{sandboxID: "sb0", init: []int{1}}},
		{"sidecar startup failed: kill and restart it", sidecarPod(true), statusOf(ready(), running("init1")), probes{start: map[string]ProbeResult{"id-init1": ProbeFailure}},
			want{sandboxID: "sb0", init: []int{0}, kill: map[string]KillReason{"id-init1": KillReasonStartupProbe}}},
		{"sidecar exited during init: restart it", sidecarPod(false), statusOf(ready(), exited("init1", 1)), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"sidecar exited under Never: restarted anyway", withPolicy(sidecarPod(false), corev1.RestartPolicyNever), statusOf(ready(), exited("init1", 0)), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"sidecar running, regular init running: wait", sidecarPod(false), statusOf(ready(), running("init2"), running("init1")), nil,
			want{sandboxID: "sb0"}},
		{"sidecar running, regular init done: start apps", sidecarPod(false), statusOf(ready(), exited("init2", 0), running("init1")), nil,
			want{sandboxID: "sb0", start: []int{0, 1}}},
		{"sidecar crashed while apps run: restart it with nothing else", sidecarPod(false), statusOf(ready(), running("foo1"), running("foo2"), exited("init2", 0), exited("init1", 2)), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"sidecar crashed while apps run under Never: restarted", withPolicy(sidecarPod(false), corev1.RestartPolicyNever), statusOf(ready(), running("foo1"), running("foo2"), exited("init1", 2)), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"sidecar vanished after initialisation: restart it", sidecarPod(false), statusOf(ready(), running("foo1"), running("foo2")), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"all apps done under Never: kill pod, do not restart sidecar", withPolicy(sidecarPod(false), corev1.RestartPolicyNever), statusOf(ready(), exited("foo1", 0), exited("foo2", 0), exited("init2", 0), exited("init1", 1)), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"all apps succeeded under OnFailure: kill pod, sidecar list cleared", withPolicy(sidecarPod(false), corev1.RestartPolicyOnFailure), statusOf(ready(), exited("foo1", 0), exited("foo2", 0), exited("init2", 0), running("init1")), nil,
			want{killPod: true, sandboxID: "sb0"}},
		{"sidecar definition changed: kill and restart", sidecarPod(false), statusOf(ready(), running("foo1"), running("foo2"), changed), nil,
			want{sandboxID: "sb0", init: []int{0}, kill: map[string]KillReason{"id-init1": KillReasonNone}}},
		{"sidecar liveness failure: kill and restart", withLiveness, statusOf(ready(), running("foo1"), running("foo2"), running("init1")), probes{live: map[string]ProbeResult{"id-init1": ProbeFailure}},
			want{sandboxID: "sb0", init: []int{0}, kill: map[string]KillReason{"id-init1": KillReasonLivenessProbe}}},
		{"sidecar liveness not yet run: next init not gated by it", withLiveness, statusOf(ready(), running("init1")), nil,
			want{sandboxID: "sb0", init: []int{1}}},
		{"sidecar unknown: kill and restart", sidecarPod(false), statusOf(ready(), running("foo1"), running("foo2"), unknown("init1")), nil,
			want{sandboxID: "sb0", init: []int{0}, kill: map[string]KillReason{"id-init1": KillReasonUnknown}}},
		{"sidecar unknown under Never: kill and restart it, not the pod", withPolicy(sidecarPod(false), corev1.RestartPolicyNever), statusOf(ready(), unknown("init1")), nil,
			want{sandboxID: "sb0", init: []int{0}, kill: map[string]KillReason{"id-init1": KillReasonUnknown}}},
		{"newest instance decides: sidecar running again after an unknown one", sidecarPod(false), statusOf(ready(), running("init1"), unknown("init1")), nil,
			want{sandboxID: "sb0", init: []int{1}}},
		{"sidecar stuck in created: start again", sidecarPod(false), statusOf(ready(), created("init1")), nil,
			want{sandboxID: "sb0", init: []int{0}}},
		{"only a sidecar, running: initialised, start apps", onlySidecar, statusOf(ready(), running("init1")), nil,
			want{sandboxID: "sb0", start: []int{0, 1}}},
		{"sidecar last, running: apps start", sidecarLast, statusOf(ready(), running("init2"), exited("init1", 0)), nil,
			want{sandboxID: "sb0", start: []int{0, 1}}},
		{"sidecar last, regular init done: start the sidecar", sidecarLast, statusOf(ready(), exited("init1", 0)), nil,
			want{sandboxID: "sb0", init: []int{1}}},
		{"two sidecars crash while apps run: both restarted in spec order", initPod(true, true), statusOf(ready(), running("foo1"), running("foo2"), exited("init2", 1), exited("init1", 1)), nil,
			want{sandboxID: "sb0", init: []int{0, 1}}},
		{"app crashed beside a sidecar while another app runs: restart it", initPod(true, false), statusOf(ready(), exited("foo1", 1), running("init1"), running("foo2")), nil,
			want{sandboxID: "sb0", start: []int{0}}},
	})
}

// TestCrashedAppBesideSidecar: the scenario of kubernetes#136969. With the
// regular init container garbage-collected and every app container
// crashed, kubelet v1.36 re-ran the init container instead of restarting
// the apps. Kubelet v1.37 looks at the current sandbox's instances only
// (ActiveContainerStatuses), where an exited app container proves
// initialisation; podstart knows an instance's sandbox from
// ContainerStatus.SandboxID, and without it behaves as kubelet v1.36.
func TestCrashedAppBesideSidecar(t *testing.T) {
	t.Parallel()
	pod := initPod(true, false)
	st := statusOf(ready(), exited("foo1", 1), exited("foo2", 1), running("init1"))
	check(t, ComputePodActions(pod, st, nil), want{sandboxID: "sb0", init: []int{1}})
	for _, c := range st.ContainerStatuses {
		c.SandboxID = "sb0"
	}
	check(t, ComputePodActions(pod, st, nil), want{sandboxID: "sb0", start: []int{0, 1}})
	// Instances of an older sandbox are not the pod's current ones
	// (kubernetes#120269): initialisation starts over, from the sidecar.
	for _, c := range st.ContainerStatuses {
		c.SandboxID = "old"
	}
	check(t, ComputePodActions(pod, st, nil), want{sandboxID: "sb0", init: []int{0}})
}

// TestInitializedInCurrentSandbox holds kubelet v1.37.2's
// TestComputePodActionsWithInitContainers and ...WithRestartableInitContainers
// cases on a stale main container, and the reason for the change: init
// containers that completed in an old sandbox do not initialise the new one.
func TestInitializedInCurrentSandbox(t *testing.T) {
	t.Parallel()
	in := func(sandbox string, s *ContainerStatus) *ContainerStatus { s.SandboxID = sandbox; return s }
	mixed := initPod(true, false, true)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		st   *PodStatus
		want want
	}{
		{"stale main container from a previous sandbox must not mark pod as initialized", initPod(false, false),
			statusOf(ready(), in("old", created("foo1"))), want{sandboxID: "sb0", init: []int{0}}},
		{"stale main container with mixed restartable and non-restartable init containers; start the first one", mixed,
			statusOf(ready(), in("old", created("foo1"))), want{sandboxID: "sb0", init: []int{0}}},
		{"init containers completed in the old sandbox: start the first again", initPod(false, false),
			statusOf(ready(), in("old", exited("foo1", 137)), in("old", exited("init2", 0)), in("old", exited("init1", 0))), want{sandboxID: "sb0", init: []int{0}}},
		{"first init done in this sandbox, the last only in the old one: the second next", initPod(false, false),
			statusOf(ready(), in("sb0", exited("init1", 0)), in("old", exited("init2", 0)), in("old", exited("init1", 0))), want{sandboxID: "sb0", init: []int{1}}},
		{"all done in this sandbox: apps start", initPod(false, false),
			statusOf(ready(), in("sb0", exited("init2", 0)), in("sb0", exited("init1", 0)), in("old", exited("foo1", 0))), want{sandboxID: "sb0", start: []int{0, 1}}},
		{"an app container of this sandbox, exited, inits removed: initialised, restart apps", initPod(false, false),
			statusOf(ready(), in("sb0", exited("foo1", 1)), in("sb0", exited("foo2", 1))), want{sandboxID: "sb0", start: []int{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, ComputePodActions(tc.pod, tc.st, nil), tc.want)
		})
	}
}

func TestActionsString(t *testing.T) {
	t.Parallel()
	pod := initPod(false, false)
	a := ComputePodActions(pod, statusOf(ready(), running("init1")), nil)
	if s := a.String(); !strings.Contains(s, `waiting: init container "init1" is running`) {
		t.Errorf("String() = %q", s)
	}
	a = ComputePodActions(pod, statusOf(nil), nil)
	if s := a.String(); s != "create sandbox attempt 0 (no pod sandbox exists); start init [init1]" {
		t.Errorf("String() = %q", s)
	}
	changed := running("foo2")
	changed.Hash = 1
	a = ComputePodActions(basePod(), statusOf(ready(), running("foo1"), changed, running("foo3")), nil)
	if s := a.String(); s != "kill foo2 id-foo2 (Container foo2 definition changed, will be restarted); start [foo2]" {
		t.Errorf("String() = %q", s)
	}
	if s := ComputePodActions(basePod(), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), nil).String(); s != "nothing to do" {
		t.Errorf("String() = %q", s)
	}
}

func TestKillMessages(t *testing.T) {
	t.Parallel()
	a := ComputePodActions(basePod(), statusOf(ready(), running("foo1"), running("foo2"), running("foo3")), probes{live: map[string]ProbeResult{"id-foo1": ProbeFailure}})
	if m := a.ContainersToKill["id-foo1"].Message; m != "Container foo1 failed liveness probe, will be restarted" {
		t.Errorf("message %q", m)
	}
	a = ComputePodActions(basePod(), statusOf(ready(), running("foo1"), unknown("foo2"), running("foo3")), nil)
	if m := a.ContainersToKill["id-foo2"].Message; m != `Container is in "unknown" state, try killing it before restart` {
		t.Errorf("message %q", m)
	}
}
