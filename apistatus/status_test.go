package apistatus_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/defaults"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

type node struct {
	t       *testing.T
	clk     *testingclock.FakeClock
	fake    *fake.Runtime
	syncer  *podsync.Syncer
	reasons *apistatus.Reasons
	last    *corev1.PodStatus
	root    string
}

func newNode(t *testing.T, fopts ...fake.Option) *node {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	f := fake.New(append([]fake.Option{fake.WithClock(clk), fake.WithImages("busybox:1.35", "nginx:1")}, fopts...)...)
	ims := images.NewManager(f, images.WithClock(clk))
	t.Cleanup(func() { ims.Close() })
	root := t.TempDir()
	return &node{t: t, clk: clk, fake: f, reasons: apistatus.NewReasons(), root: root,
		syncer: podsync.NewSyncer(f, ims, podsync.WithClock(clk), podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))}
}

// sync runs one sync and returns the API status after it, as an agent's
// loop would report it.
func (n *node) sync(pod *corev1.Pod) corev1.PodStatus {
	n.t.Helper()
	ctx := context.Background()
	st, err := n.syncer.Status(ctx, pod)
	if err != nil {
		n.t.Fatal(err)
	}
	n.reasons.Update(pod.UID, n.syncer.SyncPod(ctx, pod, st, nil))
	return n.status(pod)
}

func (n *node) status(pod *corev1.Pod) corev1.PodStatus {
	n.t.Helper()
	st, err := n.syncer.Status(context.Background(), pod)
	if err != nil {
		n.t.Fatal(err)
	}
	s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: st, Reasons: n.reasons.For(pod.UID), ResizeError: n.reasons.ResizeFor(pod.UID), Previous: n.last,
		HostIPs: []string{"10.0.0.1"}, Now: n.clk.Now()})
	n.last = &s
	return s
}

func cond(s corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func webPod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web", Generation: 3},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init-db", Image: "busybox:1.35"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1"}},
		},
	}
	defaults.Pod(pod)
	return pod
}

func TestStatusThroughAPodsLife(t *testing.T) {
	n := newNode(t, fake.WithStartFunc(func(c *runtimeapi.ContainerConfig) *fake.Exit {
		if c.Metadata.Name == "init-db" {
			return &fake.Exit{}
		}
		return nil
	}))
	pod := webPod()

	// Before anything ran.
	s := n.status(pod)
	if s.Phase != corev1.PodPending || s.QOSClass != corev1.PodQOSBestEffort || s.ObservedGeneration != 3 || s.HostIP != "10.0.0.1" {
		t.Fatalf("fresh: phase %s, qos %s, generation %d, host %s", s.Phase, s.QOSClass, s.ObservedGeneration, s.HostIP)
	}
	if w := s.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Fatalf("app before init: %+v", s.ContainerStatuses[0].State)
	}
	want := map[corev1.PodConditionType][3]string{
		corev1.PodReadyToStartContainers: {"False", "PodSandboxNotReady", "no pod sandbox exists"},
		corev1.PodInitialized:            {"False", "ContainersNotInitialized", "containers with incomplete status: [init-db]"},
		corev1.PodReady:                  {"False", "ContainersNotReady", "containers with unready status: [app]"},
		corev1.ContainersReady:           {"False", "ContainersNotReady", "containers with unready status: [app]"},
		corev1.PodScheduled:              {"True", "", ""},
	}
	for typ, w := range want {
		c := cond(s, typ)
		if string(c.Status) != w[0] || c.Reason != w[1] || c.Message != w[2] || c.ObservedGeneration != 3 {
			t.Errorf("%s: %s %q %q (generation %d), want %v", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration, w)
		}
	}
	start := *s.StartTime
	readyTransition := cond(s, corev1.PodReady).LastTransitionTime

	// The pod runs.
	n.clk.Step(5 * time.Second)
	for i := 0; i < 4; i++ {
		s = n.sync(pod)
	}
	if s.Phase != corev1.PodRunning || cond(s, corev1.PodReady).Status != corev1.ConditionTrue || cond(s, corev1.PodInitialized).Status != corev1.ConditionTrue {
		t.Fatalf("running: phase %s, conditions %+v", s.Phase, s.Conditions)
	}
	if !s.StartTime.Equal(&start) {
		t.Errorf("start time moved: %v then %v", start, s.StartTime)
	}
	if got := cond(s, corev1.PodReady).LastTransitionTime; !got.After(readyTransition.Time) {
		t.Errorf("Ready turned True but its transition time stayed %v", got)
	}
	app := s.ContainerStatuses[0]
	// Image is the runtime's name for it: containerd (and the fake) give
	// the first repo tag, normalised, and kubelet passes it on.
	if app.State.Running == nil || !app.Ready || app.Started == nil || !*app.Started || !strings.HasPrefix(app.ContainerID, "containerd://") ||
		app.Image != "docker.io/library/nginx:1" || app.ImageID == "" || app.RestartCount != 0 {
		t.Fatalf("app: %+v", app)
	}
	initS := s.InitContainerStatuses[0]
	if initS.State.Terminated == nil || initS.State.Terminated.Reason != "Completed" || !initS.Ready {
		t.Fatalf("init: %+v", initS)
	}
	transition := cond(s, corev1.PodReady).LastTransitionTime
	n.clk.Step(time.Minute)
	if s = n.status(pod); !cond(s, corev1.PodReady).LastTransitionTime.Time.Equal(transition.Time) {
		t.Errorf("unchanged Ready got a new transition time")
	}

	// The app crashes twice: CrashLoopBackOff with kubelet's message.
	for i := 0; i < 2; i++ {
		st, _ := n.syncer.Status(context.Background(), pod)
		if err := n.fake.ExitContainer(st.FindContainerStatusByName("app").ID, fake.Exit{Code: 1}); err != nil {
			t.Fatal(err)
		}
		s = n.sync(pod)
	}
	app = s.ContainerStatuses[0]
	if w := app.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || w.Message != "back-off 10s restarting failed container=app pod=web_shop(uid-web)" {
		t.Fatalf("crash loop: %+v", app.State)
	}
	if lt := app.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" || app.RestartCount != 1 || app.Ready {
		t.Fatalf("crash loop last state %+v, restarts %d, ready %v", app.LastTerminationState, app.RestartCount, app.Ready)
	}
	if s.Phase != corev1.PodRunning || cond(s, corev1.PodReady).Status != corev1.ConditionFalse {
		t.Fatalf("crash loop: phase %s, ready %s", s.Phase, cond(s, corev1.PodReady).Status)
	}
}

func TestImagePullReasons(t *testing.T) {
	n := newNode(t, fake.WithRegistryImages("nginx:1"))
	pod := webPod()
	pod.Spec.InitContainers = nil
	pod.Spec.Containers[0].Image = "missing:1"
	s := n.sync(pod)
	w := s.ContainerStatuses[0].State.Waiting
	if w == nil || w.Reason != "ErrImagePull" || !strings.Contains(w.Message, "missing") {
		t.Fatalf("after a failed pull: %+v", s.ContainerStatuses[0].State)
	}
	s = n.sync(pod)
	if w = s.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ImagePullBackOff" || !strings.HasPrefix(w.Message, `Back-off pulling image "missing:1"`) {
		t.Fatalf("in back-off: %+v", s.ContainerStatuses[0].State)
	}
	if w := s.ContainerStatuses[0].State.Waiting; s.Phase != corev1.PodPending || w == nil {
		t.Fatalf("phase %s", s.Phase)
	}
}

func TestTerminationMessageInStatus(t *testing.T) {
	n := newNode(t)
	pod := webPod()
	pod.Spec.InitContainers = nil
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	n.sync(pod)
	st, _ := n.syncer.Status(context.Background(), pod)
	resp, err := n.fake.ContainerStatus(context.Background(), st.FindContainerStatusByName("app").ID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.Status.Mounts {
		if m.ContainerPath == "/dev/termination-log" {
			if err := os.WriteFile(m.HostPath, []byte("disk full"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := n.fake.ExitContainer(resp.Status.Id, fake.Exit{Code: 3}); err != nil {
		t.Fatal(err)
	}
	s := n.sync(pod)
	term := s.ContainerStatuses[0].State.Terminated
	if term == nil || term.Message != "disk full" || term.ExitCode != 3 || s.Phase != corev1.PodFailed {
		t.Fatalf("phase %s, terminated %+v", s.Phase, term)
	}
	if c := cond(s, corev1.PodReady); c.Reason != "PodFailed" {
		t.Fatalf("Ready: %+v", c)
	}
}

func TestReadinessGates(t *testing.T) {
	n := newNode(t)
	pod := webPod()
	pod.Spec.InitContainers = nil
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	n.sync(pod)
	s := n.sync(pod)
	if c := cond(s, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "ReadinessGatesNotReady" ||
		c.Message != `corresponding condition of pod readiness gate "example.com/lb" does not exist.` {
		t.Fatalf("Ready without the gate's condition: %+v", c)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}}
	s = n.status(pod)
	if c := cond(s, corev1.PodReady); c.Status != corev1.ConditionTrue {
		t.Fatalf("Ready with the gate True: %+v", c)
	}
	if c := cond(s, "example.com/lb"); c.Status != corev1.ConditionTrue {
		t.Fatal("the gate's own condition was dropped")
	}
}

// In-place resize as a user sees it: allocated and actual resources in the
// container status, PodResizeInProgress with reason Error while the resize
// cannot be done (its generation the one it began at), gone once done.
func TestResizeInStatus(t *testing.T) {
	n := newNode(t)
	pod := webPod()
	pod.Spec.InitContainers = nil
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	n.sync(pod)
	s := n.sync(pod)
	if c := cond(s, corev1.PodResizeInProgress); c.Type != "" {
		t.Fatalf("resize condition before any resize: %+v", c)
	}
	cs := s.ContainerStatuses[0]
	if cs.Resources == nil || cs.Resources.Limits.Cpu().String() != "500m" || cs.AllocatedResources.Memory().String() != "64Mi" {
		t.Fatalf("resources %+v allocated %+v", cs.Resources, cs.AllocatedResources)
	}

	// Lower memory below use: refused, in progress with the error.
	st, _ := n.syncer.Status(context.Background(), pod)
	if err := n.fake.SetMemoryUsage(st.FindContainerStatusByName("app").ID, 100<<20); err != nil {
		t.Fatal(err)
	}
	pod = pod.DeepCopy()
	pod.Generation = 4
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("96Mi")
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
	s = n.sync(pod)
	c := cond(s, corev1.PodResizeInProgress)
	if c.Status != corev1.ConditionTrue || c.Reason != corev1.PodReasonError || !strings.HasPrefix(c.Message, "cannot decrease memory limits") || c.ObservedGeneration != 4 {
		t.Fatalf("condition %+v", c)
	}
	if got := s.ContainerStatuses[0].Resources.Limits.Cpu().String(); got != "500m" {
		t.Fatalf("actual cpu limit %s before the resize", got)
	}

	// A newer generation keeps the generation the resize began at.
	pod = pod.DeepCopy()
	pod.Generation = 5
	n.clk.Step(time.Second)
	if c2 := cond(n.sync(pod), corev1.PodResizeInProgress); c2.ObservedGeneration != 4 || !c2.LastTransitionTime.Equal(&c.LastTransitionTime) {
		t.Fatalf("condition %+v after %+v", c2, c)
	}

	// Use falls: the resize is done, the condition gone, the status shows it.
	if err := n.fake.SetMemoryUsage(st.FindContainerStatusByName("app").ID, 10<<20); err != nil {
		t.Fatal(err)
	}
	s = n.sync(pod)
	if c := cond(s, corev1.PodResizeInProgress); c.Type != "" {
		t.Fatalf("condition left: %+v", c)
	}
	if got := s.ContainerStatuses[0].Resources.Limits; got.Cpu().String() != "1" || got.Memory().String() != "96Mi" {
		t.Fatalf("actual limits %v", got)
	}
}
