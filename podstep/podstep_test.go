package podstep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podstep"
	"github.com/podstart/podstart/podsync"
	rtfake "github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/validation"
)

func newPod(uid string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID("uid-" + uid)},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

// syncer is a Syncer on the fake runtime, one fake clock for everything.
func syncer(t *testing.T, opts ...rtfake.Option) (*podsync.Syncer, *rtfake.Runtime, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	rt := rtfake.New(append([]rtfake.Option{rtfake.WithClock(clk)}, opts...)...)
	dir := t.TempDir()
	s := podsync.NewSyncer(rt, nil, podsync.WithClock(clk), podsync.WithRootDir(dir), podsync.WithPodLogsDir(dir+"/logs"),
		podsync.WithMounter(fake.New()))
	return s, rt, clk
}

func waiting(s corev1.PodStatus, name string) string {
	for _, c := range append(s.InitContainerStatuses, s.ContainerStatuses...) {
		if c.Name == name && c.State.Waiting != nil {
			return c.State.Waiting.Reason
		}
	}
	return ""
}

func TestSyncToRunning(t *testing.T) {
	s, rt, _ := syncer(t, rtfake.WithImages("busybox:1.35"))
	p, err := podstep.New(s, newPod("run", corev1.Container{Name: "app", Image: "busybox:1.35"}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !apistatus.Running(p.Pod(), st) || !apistatus.Ready(st) || !apistatus.Settled(p.Pod(), st) || apistatus.Terminal(st) {
		t.Fatalf("after one sync: phase %s, statuses %+v", st.Phase, st.ContainerStatuses)
	}
	if st.ContainerStatuses[0].ContainerID == "" || st.StartTime == nil {
		t.Errorf("status lacks the container ID or start time: %+v", st)
	}
	// A second sync changes nothing on the runtime.
	before := len(rt.Calls())
	if _, err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range rt.Calls()[before:] {
		if c.Method == "CreateContainer" || c.Method == "RunPodSandbox" {
			t.Errorf("a settled pod's sync called %s", c.Method)
		}
	}

	killed, err := p.Kill(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !apistatus.Terminal(killed) || killed.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("killed: phase %s, %+v", killed.Phase, killed.ContainerStatuses)
	}
	if err := p.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countContainers(t, rt); n != 0 {
		t.Errorf("%d containers left after Remove", n)
	}
	if _, err := p.Sync(context.Background()); !errors.Is(err, podstep.ErrRemoved) {
		t.Errorf("sync after remove: %v, want ErrRemoved", err)
	}
}

// The reason of a failed pull reaches the status without the caller
// carrying anything: ErrImagePull, then ImagePullBackOff.
func TestFailedPullReason(t *testing.T) {
	s, _, clk := syncer(t, rtfake.WithRegistryImages("busybox:1.35"))
	p, err := podstep.New(s, newPod("pull", corev1.Container{Name: "app", Image: "missing:1"}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Sync(context.Background())
	if !errors.Is(err, images.ErrImagePull) {
		t.Fatalf("first sync: %v, want ErrImagePull", err)
	}
	if r := waiting(st, "app"); r != "ErrImagePull" {
		t.Errorf("waiting reason %q, want ErrImagePull", r)
	}
	if !apistatus.Settled(p.Pod(), st) || apistatus.Running(p.Pod(), st) {
		t.Errorf("a failed pull should be settled and not running")
	}
	clk.Step(time.Second)
	st, err = p.Sync(context.Background())
	if !errors.Is(err, images.ErrImagePullBackOff) || waiting(st, "app") != "ImagePullBackOff" {
		t.Errorf("second sync: %v, reason %q; want ImagePullBackOff", err, waiting(st, "app"))
	}
}

// A crash loop reads CrashLoopBackOff, not Terminated.
func TestCrashLoopReason(t *testing.T) {
	s, _, clk := syncer(t, rtfake.WithImages("busybox:1.35"), rtfake.WithStartFunc(func(*runtimeapi.ContainerConfig) *rtfake.Exit {
		return &rtfake.Exit{Code: 1}
	}))
	p, err := podstep.New(s, newPod("crash", corev1.Container{Name: "app", Image: "busybox:1.35"}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Sync(context.Background()) // started, exited at once
	if err != nil {
		t.Fatal(err)
	}
	if apistatus.Settled(p.Pod(), st) {
		t.Errorf("an exited container that restarts is not settled: %+v", st.ContainerStatuses)
	}
	clk.Step(time.Second)
	if _, err = p.Sync(context.Background()); err != nil { // restarted at once (no back-off yet), exits again
		t.Fatal(err)
	}
	st, err = p.Sync(context.Background())
	if !errors.Is(err, podsync.ErrCrashLoopBackOff) {
		t.Fatalf("third sync: %v, want CrashLoopBackOff", err)
	}
	if r := waiting(st, "app"); r != "CrashLoopBackOff" || !apistatus.Settled(p.Pod(), st) {
		t.Errorf("reason %q (settled %v), want CrashLoopBackOff and settled", r, apistatus.Settled(p.Pod(), st))
	}
	if st.ContainerStatuses[0].LastTerminationState.Terminated == nil || st.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("last state %+v, want exit 1", st.ContainerStatuses[0].LastTerminationState)
	}
}

// A pod that ends reaches its terminal phase by syncs alone.
func TestRunToCompletion(t *testing.T) {
	s, _, _ := syncer(t, rtfake.WithImages("busybox:1.35"), rtfake.WithStartFunc(func(*runtimeapi.ContainerConfig) *rtfake.Exit {
		return &rtfake.Exit{Code: 0}
	}))
	pod := newPod("done", corev1.Container{Name: "app", Image: "busybox:1.35"})
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.35"}}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	p, err := podstep.New(s, pod)
	if err != nil {
		t.Fatal(err)
	}
	var st corev1.PodStatus
	for i := 0; i < 5 && !apistatus.Settled(p.Pod(), st); i++ {
		if st, err = p.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st.Phase != corev1.PodSucceeded || !apistatus.Terminal(st) {
		t.Fatalf("phase %s, want Succeeded; %+v", st.Phase, st.ContainerStatuses)
	}
}

func TestNewChecksThePod(t *testing.T) {
	s, _, _ := syncer(t)
	bad := newPod("bad", corev1.Container{Name: "app", Image: "busybox:1.35"})
	bad.UID = ""
	if _, err := podstep.New(s, bad); !errors.Is(err, validation.ErrInvalidPod) {
		t.Errorf("pod without UID: %v, want ErrInvalidPod", err)
	}
	p, err := podstep.New(s, newPod("upd", corev1.Container{Name: "app", Image: "busybox:1.35"}))
	if err != nil {
		t.Fatal(err)
	}
	other := newPod("other", corev1.Container{Name: "app", Image: "busybox:1.35"})
	if err := p.Update(other); !errors.Is(err, validation.ErrInvalidPod) {
		t.Errorf("update with another UID: %v, want ErrInvalidPod", err)
	}
}

func countContainers(t *testing.T, rt *rtfake.Runtime) int {
	t.Helper()
	cs, err := rt.ListContainers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// A container with restartPolicy Never in a pod of restartPolicy Always
// (ContainerRestartRules, beta and on in v1.37) that fails is not run
// again: the pod is Failed and its sandbox is not made again, so the
// restart count stays 0. Found by the conformance spec "Pod Extended
// (container restart policy) Container Restart Rules should restart
// container on container-level restart policy Never".
func TestContainerRestartPolicyNeverInAlwaysPod(t *testing.T) {
	dir := t.TempDir()
	rt := rtfake.New(rtfake.WithImages("busybox:1.35"), rtfake.WithStartFunc(func(*runtimeapi.ContainerConfig) *rtfake.Exit { return &rtfake.Exit{Code: 1} }))
	syncer := podsync.NewSyncer(rt, nil, podsync.WithRootDir(dir), podsync.WithPodLogsDir(dir+"/logs"), podsync.WithMounter(fake.New()))
	never := corev1.ContainerRestartPolicyNever
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "never", Namespace: "default", UID: "uid-never"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "main-container", Image: "busybox:1.35", Command: []string{"/bin/sh", "-c", "exit 1"}, RestartPolicy: &never}}}}
	p, err := podstep.New(syncer, pod)
	if err != nil {
		t.Fatal(err)
	}
	var st corev1.PodStatus
	for range 6 {
		if st, err = p.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if st.Phase != corev1.PodFailed || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].RestartCount != 0 ||
		st.ContainerStatuses[0].State.Terminated == nil || st.ContainerStatuses[0].State.Terminated.ExitCode != 1 {
		t.Fatalf("status %+v", st)
	}
	if n, m := rt.CallCount("RunPodSandbox"), rt.CallCount("CreateContainer"); n != 1 || m != 1 {
		t.Fatalf("%d sandboxes and %d containers made, want 1 and 1", n, m)
	}
}
