package podworker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/admission"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// recordingAdmitter wraps an admission.Admitter and records what it was
// asked.
type recordingAdmitter struct {
	a    *admission.Admitter
	mu   sync.Mutex
	seen map[string][]string // pod name: the admitted pods' names it was given
}

func (r *recordingAdmitter) admit(ctx context.Context, pod *corev1.Pod, admitted []*corev1.Pod) error {
	var names []string
	for _, p := range admitted {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	r.mu.Lock()
	r.seen[pod.Name] = names
	r.mu.Unlock()
	return r.a.Admit(ctx, pod, admitted)
}

func (r *recordingAdmitter) asked(name string) ([]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.seen[name]
	return s, ok
}

func newAdmitter(t *testing.T, pods string) *recordingAdmitter {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse(pods),
	}}}
	sysctls, err := admission.NewSysctlAllowlist(admission.SafeSysctls("6.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := admission.New(admission.Config{Node: func(context.Context, bool) (*corev1.Node, error) { return node, nil }, Sysctls: sysctls, AppArmorEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	return &recordingAdmitter{a: a, seen: map[string][]string{}}
}

// A pod with an unsafe sysctl the node does not allow (the node
// conformance suite's SysctlForbidden spec) never reaches the runtime: it
// ends Failed with kubelet's reason and message, once, and is not admitted
// again on its next update; another pod is admitted and runs.
func TestAdmissionRejectsSysctlForbidden(t *testing.T) {
	r := newAdmitter(t, "110")
	e := newEnv(t, nil, podworker.WithAdmission(r.admit))
	bad := testPod("unsafe-sysctl")
	bad.Status.Phase = corev1.PodPending
	bad.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "10000000000"}}}
	if err := e.workers.Upsert(bad); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod rejected", []types.UID{bad.UID}, removed)
	e.mu.Lock()
	st := e.states[bad.UID]
	e.mu.Unlock()
	if !errors.Is(st.Err, admission.ErrRejected) {
		t.Errorf("PodState.Err %v, want a rejection", st.Err)
	}
	got := st.APIStatus
	if got.Phase != corev1.PodFailed || got.Reason != "SysctlForbidden" || got.Message != `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("status %s %q %q, want kubelet's rejectPod status", got.Phase, got.Reason, got.Message)
	}
	if got.QOSClass != corev1.PodQOSBestEffort || got.StartTime == nil {
		t.Errorf("status QOS class %q, start time %v: want BestEffort and a start time", got.QOSClass, got.StartTime)
	}
	if _, held := e.workers.Status(bad.UID); held {
		t.Error("the rejected pod is still held")
	}

	// An update of the rejected pod (still Pending in the API server's
	// eyes until the status manager writes Failed) is not admitted again.
	if err := e.workers.Upsert(bad); err != nil {
		t.Fatal(err)
	}
	good := testPod("fine")
	if err := e.workers.Upsert(good); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod running", []types.UID{good.UID}, running)
	if err := e.workers.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.CallCount("RunPodSandbox"); n != 1 {
		t.Errorf("%d sandboxes created, want 1 (the rejected pod's none)", n)
	}
	if _, held := e.workers.Status(bad.UID); held {
		t.Error("the rejected pod got a loop on its update")
	}
	r.mu.Lock()
	n := len(r.seen)
	r.mu.Unlock()
	if n != 2 {
		t.Errorf("%d pods admitted, want 2 (the rejected one once)", n)
	}
	// Deleting the rejected pod only forgets it: nothing of it ran.
	if err := e.workers.Delete(bad, nil); err != nil {
		t.Fatal(err)
	}
	if _, held := e.workers.Status(bad.UID); held {
		t.Error("deleting the rejected pod gave it a loop")
	}
}

// The pods admitted before count, the rejected and the finished ones do
// not: with room for two pods, a third is OutOfpods until one of the
// others is gone.
func TestAdmissionCountsActivePods(t *testing.T) {
	r := newAdmitter(t, "2")
	e := newEnv(t, nil, podworker.WithAdmission(r.admit))
	a, b, c := testPod("a"), testPod("b"), testPod("c")
	for _, p := range []*corev1.Pod{a, b} {
		if err := e.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("pods running", []types.UID{a.UID, b.UID}, running)
	if err := e.workers.Upsert(c); err != nil {
		t.Fatal(err)
	}
	e.waitFor("third pod rejected", []types.UID{c.UID}, removed)
	e.mu.Lock()
	got := e.states[c.UID].APIStatus
	e.mu.Unlock()
	if got.Reason != "OutOfpods" || got.Message != "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2" {
		t.Errorf("status %q %q, want OutOfpods", got.Reason, got.Message)
	}
	if seen, _ := r.asked("c"); !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("c was admitted against %v, want [a b]", seen)
	}

	// b is deleted: a new pod d now fits, counted against a alone.
	if err := e.workers.Delete(b, nil); err != nil {
		t.Fatal(err)
	}
	e.waitFor("b removed", []types.UID{b.UID}, removed)
	d := testPod("d")
	if err := e.workers.Upsert(d); err != nil {
		t.Fatal(err)
	}
	e.waitFor("d running", []types.UID{d.UID}, running)
	if seen, _ := r.asked("d"); !slices.Equal(seen, []string{"a"}) {
		t.Errorf("d was admitted against %v, want [a]", seen)
	}
}

// A restarted agent finds its pods running: they are not admitted again
// (kubelet admits pods new to it), even on a node that would now refuse
// them, and keep running.
func TestAdmissionSkipsPodsAlreadyRunning(t *testing.T) {
	e := newEnv(t, nil)
	pod := testPod("survivor")
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod running", []types.UID{pod.UID}, running)
	e.workers.Close()

	r := newAdmitter(t, "0") // a node that takes no pod
	var mu sync.Mutex
	var states []podworker.PodState
	w2 := podworker.New(e.syncer, podworker.WithAdmission(r.admit), podworker.WithOnSync(func(_ types.UID, st podworker.PodState) {
		mu.Lock()
		states = append(states, st)
		mu.Unlock()
	}))
	defer w2.Close()
	if err := w2.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	if err := w2.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, asked := r.asked(pod.Name); asked {
		t.Error("the running pod was admitted again")
	}
	last := func() podworker.PodState {
		mu.Lock()
		defer mu.Unlock()
		if len(states) == 0 {
			t.Fatal("no sync heard")
		}
		return states[len(states)-1]
	}
	if st := last(); st.Removed || !running(st) {
		t.Errorf("the running pod did not keep running: removed %v", st.Removed)
	}
	if n := e.fake.CallCount("RunPodSandbox"); n != 1 {
		t.Errorf("%d sandboxes, want 1", n)
	}
	// A new pod on that node is refused.
	if err := w2.Upsert(testPod("newcomer")); err != nil {
		t.Fatal(err)
	}
	if err := w2.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := last(); st.Pod.Name != "newcomer" || !st.Removed || st.APIStatus.Reason != "OutOfpods" {
		t.Errorf("newcomer: removed %v reason %q, want rejected OutOfpods", st.Removed, st.APIStatus.Reason)
	}
	if n := e.fake.CallCount("RunPodSandbox"); n != 1 {
		t.Errorf("%d sandboxes, want 1: the rejected pod got one", n)
	}
}

func TestRejectedStatus(t *testing.T) {
	start := metav1.Unix(100, 0)
	pod := testPod("p")
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	now := metav1.Unix(200, 0)
	st := podworker.RejectedStatus(pod, admission.Reject("OutOfcpu", "Node didn't have enough resource: cpu"), now)
	want := corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu", Message: "Pod was rejected: Node didn't have enough resource: cpu", QOSClass: corev1.PodQOSBurstable, StartTime: &now}
	if st.Phase != want.Phase || st.Reason != want.Reason || st.Message != want.Message || st.QOSClass != want.QOSClass || !st.StartTime.Equal(want.StartTime) {
		t.Errorf("got %+v\nwant %+v", st, want)
	}
	pod.Status.StartTime = &start
	if st := podworker.RejectedStatus(pod, errors.New("boom"), now); !st.StartTime.Equal(&start) || st.Reason != "UnexpectedAdmissionError" || st.Message != "Pod was rejected: boom" {
		t.Errorf("got %+v", st)
	}
}

// After a restart, a pod the runtime runs counts for a new pod's
// admission even when its own loop has not reached its first sync yet
// (kubelet admitted it first, in order of creation): on a node with room
// for one pod, the newcomer is rejected, the running pod keeps running.
func TestAdmissionCountsRunningPodsNotYetSynced(t *testing.T) {
	rs := newRestarted(t)
	if err := rs.w2.Upsert(testPod("newcomer")); err != nil {
		t.Fatal(err)
	}
	st := <-rs.decided
	close(rs.release)
	if !st.Removed || st.APIStatus.Reason != "OutOfpods" {
		t.Errorf("newcomer: removed %v, reason %q: want rejected OutOfpods (the survivor counts)", st.Removed, st.APIStatus.Reason)
	}
	if err := rs.w2.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, ok := rs.w2.Status(rs.survivor.UID); !ok || !running(got) {
		t.Error("the survivor does not run")
	}
	if _, asked := rs.r.asked("survivor"); asked {
		t.Error("the survivor was admitted again")
	}
	if n := rs.e.fake.CallCount("RunPodSandbox"); n != 1 {
		t.Errorf("%d sandboxes, want 1", n)
	}
}

// The same with a relist since the agent started: the admission takes the
// restarted agent's pods from it and lists nothing (in a burst of new
// pods, every admission finds pods not yet decided).
func TestAdmissionTakesRunningPodsFromRelist(t *testing.T) {
	rs := newRestarted(t)
	if err := rs.w2.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	lists := rs.e.fake.CallCount("ListPodSandbox") + rs.e.fake.CallCount("ListContainers")
	if err := rs.w2.Upsert(testPod("newcomer")); err != nil {
		t.Fatal(err)
	}
	st := <-rs.decided
	after := rs.e.fake.CallCount("ListPodSandbox") + rs.e.fake.CallCount("ListContainers")
	close(rs.release)
	if !st.Removed || st.APIStatus.Reason != "OutOfpods" {
		t.Errorf("newcomer: removed %v, reason %q: want rejected OutOfpods (the survivor counts)", st.Removed, st.APIStatus.Reason)
	}
	if after != lists {
		t.Errorf("the newcomer's admission made %d list calls, want none (the relist has the survivor)", after-lists)
	}
	if _, asked := rs.r.asked("survivor"); asked {
		t.Error("the survivor was admitted again")
	}
}

// restarted is a node after an agent restart: the survivor runs in the
// runtime, the new Workers (w2, room for one pod) hold it, and its first
// status read is blocked until release is closed, so its loop has not
// reached its first sync; decided hears the newcomer's first state.
type restarted struct {
	e        *env
	survivor *corev1.Pod
	w2       *podworker.Workers
	r        *recordingAdmitter
	decided  chan podworker.PodState
	release  chan struct{}
}

func newRestarted(t *testing.T) *restarted {
	t.Helper()
	e := newEnv(t, nil)
	survivor := testPod("survivor")
	if err := e.workers.Upsert(survivor); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod running", []types.UID{survivor.UID}, running)
	e.workers.Close()

	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	remove := e.fake.Intercept(func(ctx context.Context, method string, req proto.Message) error {
		if r, ok := req.(*runtimeapi.ListPodSandboxRequest); ok && method == "ListPodSandbox" && r.GetFilter().GetLabelSelector()[podsync.LabelPodUID] == string(survivor.UID) {
			once.Do(func() { close(blocked) })
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	t.Cleanup(remove)
	rs := &restarted{e: e, survivor: survivor, r: newAdmitter(t, "1"), decided: make(chan podworker.PodState, 1), release: release}
	rs.w2 = podworker.New(e.syncer, podworker.WithAdmission(rs.r.admit), podworker.WithRelistPeriod(0), podworker.WithOnSync(func(_ types.UID, st podworker.PodState) {
		if st.Pod.Name == "newcomer" {
			select {
			case rs.decided <- st:
			default:
			}
		}
	}))
	t.Cleanup(func() { rs.w2.Close() })
	if err := rs.w2.Upsert(survivor); err != nil {
		t.Fatal(err)
	}
	<-blocked
	return rs
}
