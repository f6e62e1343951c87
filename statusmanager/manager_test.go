package statusmanager

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/statusmanager/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ Client = (*fake.Client)(nil)

// testPod is kubelet's getTestPod.
func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "12345678", Name: "foo", Namespace: "new"}}
}

var seq atomic.Int64

// randomStatus is kubelet's getRandomPodStatus: a new message each time.
func randomStatus() corev1.PodStatus {
	return corev1.PodStatus{Message: strconv.FormatInt(seq.Add(1), 10)}
}

// state is what podworker hands over after a sync; running says whether
// the runtime shows a running container.
func state(pod *corev1.Pod, status corev1.PodStatus, running bool) podworker.PodState {
	rs := &podsync.PodStatus{UID: pod.UID}
	if running {
		rs.ContainerStatuses = []*podsync.ContainerStatus{{Name: "app", State: podsync.ContainerStateRunning}}
	}
	return podworker.PodState{Pod: pod.DeepCopy(), Status: rs, APIStatus: status}
}

func removed(pod *corev1.Pod, status corev1.PodStatus) podworker.PodState {
	return podworker.PodState{Pod: pod.DeepCopy(), Status: &podsync.PodStatus{UID: pod.UID}, APIStatus: status, Terminating: true, Removed: true}
}

func newManager(c *fake.Client) (*Manager, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return New(c, WithClock(clk)), clk
}

// verbs syncs what is pending (kubelet's consumeUpdates) and returns the
// calls the client got, then forgets them.
func verbs(t *testing.T, m *Manager, c *fake.Client, reconcile bool) string {
	t.Helper()
	_ = m.Sync(context.Background(), reconcile)
	v := strings.Join(c.Verbs(), ",")
	c.ClearCalls()
	return v
}

// pending counts the versions not yet written (kubelet's verifyUpdates).
func pending(m *Manager) int {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for uid, e := range m.statuses {
		if m.apiVersions[uid] < e.version {
			n++
		}
	}
	return n
}

// TestVersions: kubelet's TestNewStatus, TestChangedStatus and
// TestUnchangedStatus.
func TestVersions(t *testing.T) {
	c := fake.NewClient(testPod())
	m, _ := newManager(c)
	pod := testPod()
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if n := pending(m); n != 1 {
		t.Fatalf("new status: %d pending, want 1", n)
	}
	if v := verbs(t, m, c, false); v != "get,patch" {
		t.Fatalf("calls %s", v)
	}
	s := randomStatus()
	m.OnSync(pod.UID, state(pod, s, true))
	if v := verbs(t, m, c, false); v != "get,patch" {
		t.Fatalf("changed status: calls %s", v)
	}
	m.OnSync(pod.UID, state(pod, s, true))
	m.OnSync(pod.UID, state(pod, s, true))
	if n := pending(m); n != 0 {
		t.Errorf("unchanged status: %d pending", n)
	}
	if v := verbs(t, m, c, false); v != "" {
		t.Errorf("unchanged status: calls %s", v)
	}
	if w, ok := m.Written(pod.UID); !ok || w.Message != s.Message {
		t.Errorf("written %+v %v", w, ok)
	}
	if got, _ := c.Pod("new", "foo"); got.Status.Message != s.Message {
		t.Errorf("API status %+v", got.Status)
	}
}

// TestUnchangedByKubelet: a change kubelet does not own (another's
// condition) is not a new version.
func TestUnchangedByKubelet(t *testing.T) {
	c := fake.NewClient(testPod())
	m, _ := newManager(c)
	pod := testPod()
	s := runningStatus()
	m.OnSync(pod.UID, state(pod, s, true))
	verbs(t, m, c, false)
	s.Conditions = append(s.Conditions, featureT)
	s.Conditions[0].LastTransitionTime = metav1.Now()
	m.OnSync(pod.UID, state(pod, s, true))
	if n := pending(m); n != 0 {
		t.Errorf("%d pending", n)
	}
}

// TestSyncPodIgnoresNotFound is kubelet's.
func TestSyncPodIgnoresNotFound(t *testing.T) {
	c := fake.NewClient()
	m, _ := newManager(c)
	pod := testPod()
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if v := verbs(t, m, c, false); v != "get" {
		t.Errorf("calls %s", v)
	}
	if _, ok := m.Status(pod.UID); !ok {
		t.Error("entry of a pod still held by the worker dropped")
	}
}

// TestRemovedPodForbiddenIsDropped: once the worker removed a pod and
// its object is gone, the node authorizer answers a GET of it with 403
// ("no relationship found between node and this object"), not 404. The
// entry of a pod written before is dropped then, as kubelet's orphaned
// statuses are, instead of being retried at every sync for ever.
func TestRemovedPodForbiddenIsDropped(t *testing.T) {
	pod := testPod()
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if v := verbs(t, m, c, false); v != "get,patch" {
		t.Fatalf("calls %s", v)
	}
	m.OnSync(pod.UID, removed(pod, randomStatus()))
	c.FailNext("get", apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, errors.New("no relationship found between node and this object")))
	if err := m.Sync(context.Background(), false); err != nil {
		t.Fatalf("sync of a removed pod the API server no longer shows us: %v", err)
	}
	c.ClearCalls()
	if _, ok := m.Status(pod.UID); ok {
		t.Fatal("entry of a removed, forbidden pod kept")
	}
	if v := verbs(t, m, c, true); v != "" {
		t.Errorf("calls after the drop: %s", v)
	}
	// A pod still held by the worker keeps its entry through a 403.
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	c.FailNext("get", apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, errors.New("denied")))
	if err := m.Sync(context.Background(), false); err == nil {
		t.Error("a 403 for a held pod was not reported")
	}
	if _, ok := m.Status(pod.UID); !ok {
		t.Error("entry of a held pod dropped on a 403")
	}
}

// TestRejectedPodForbiddenIsRetried: a pod rejected at admission is
// removed by the worker at once, before the node authorizer (which learns
// of new pods from a watch of its own) may know it is bound to the node: a
// 403 then is retried, not taken for a deleted pod's, so its Failed status
// reaches the API server. (Failed before the fix: the node conformance
// spec "should not launch unsafe, but not explicitly enabled sysctls"
// timed out on a pod left Pending.)
func TestRejectedPodForbiddenIsRetried(t *testing.T) {
	pod := testPod()
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	rejected := removed(pod, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "SysctlForbidden", Message: "Pod was rejected: forbidden sysctl"})
	m.OnSync(pod.UID, rejected)
	c.FailNext("get", apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, errors.New("no relationship found between node and this object")))
	if err := m.Sync(context.Background(), false); err == nil {
		t.Fatal("the 403 of a pod never written was not reported")
	}
	if v := verbs(t, m, c, false); v != "get,get,patch" {
		t.Fatalf("calls %s, want the failed get then the retry's get and patch", v)
	}
	if p, _ := c.Pod(pod.Namespace, pod.Name); p.Status.Phase != corev1.PodFailed || p.Status.Reason != "SysctlForbidden" {
		t.Fatalf("API status %+v, want the rejection", p.Status)
	}
}

// TestForget: a pod the caller no longer has (deleted from the API
// server) is forgotten at once; nothing is written for it any more.
func TestForget(t *testing.T) {
	pod := testPod()
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	m.OnSync(pod.UID, removed(pod, randomStatus()))
	m.Forget(pod.UID)
	if _, ok := m.Status(pod.UID); ok {
		t.Fatal("entry kept after Forget")
	}
	if v := verbs(t, m, c, true); v != "" {
		t.Errorf("calls after Forget: %s", v)
	}
}

// TestSyncPodChecksMismatchedUID is kubelet's: a pod recreated under the
// same name is not written, and the old pod's entry is dropped.
func TestSyncPodChecksMismatchedUID(t *testing.T) {
	other := testPod()
	other.UID = "first"
	c := fake.NewClient(other)
	m, _ := newManager(c)
	pod := testPod()
	pod.UID = "second"
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if v := verbs(t, m, c, false); v != "get" {
		t.Errorf("calls %s", v)
	}
	if _, ok := m.Status(pod.UID); ok {
		t.Error("entry kept")
	}
}

// TestSyncPodNoDeadlock is kubelet's sequence of API answers.
func TestSyncPodNoDeadlock(t *testing.T) {
	c := fake.NewClient()
	m, _ := newManager(c)
	pod := testPod()

	// Pod not found.
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if v := verbs(t, m, c, false); v != "get" {
		t.Errorf("not found: %s", v)
	}
	// Pod was recreated.
	recreated := testPod()
	recreated.UID = "other_pod"
	c.Put(recreated)
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if v := verbs(t, m, c, false); v != "get" {
		t.Errorf("recreated: %s", v)
	}
	// Pod not deleted (success case).
	c.Put(testPod())
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if v := verbs(t, m, c, false); v != "get,patch" {
		t.Errorf("success: %s", v)
	}
	// Pod is terminated, but still running.
	pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	api, _ := c.Pod("new", "foo")
	api.DeletionTimestamp = pod.DeletionTimestamp
	c.Put(api)
	m.OnSync(pod.UID, state(pod, randomStatus(), true))
	if v := verbs(t, m, c, false); v != "get,patch" {
		t.Errorf("terminating: %s", v)
	}
	// Pod is terminated successfully (its containers stopped, not yet
	// removed by the worker).
	m.OnSync(pod.UID, state(pod, randomStatus(), false))
	if v := verbs(t, m, c, false); v != "get,patch" {
		t.Errorf("terminated: %s", v)
	}
	// Error case.
	c.FailNext(fake.Get, errors.New("intentional test error"))
	m.OnSync(pod.UID, state(pod, randomStatus(), false))
	if v := verbs(t, m, c, false); v != "get" {
		t.Errorf("error: %s", v)
	}
}

// TestStaleUpdates is kubelet's.
func TestStaleUpdates(t *testing.T) {
	c := fake.NewClient(testPod())
	m, _ := newManager(c)
	pod := testPod()
	s := corev1.PodStatus{Message: "initial status"}
	m.OnSync(pod.UID, state(pod, s, true))
	s.Message = "first version bump"
	m.OnSync(pod.UID, state(pod, s, true))
	s.Message = "second version bump"
	m.OnSync(pod.UID, state(pod, s, true))

	// The reconcile pushes the latest status: one update.
	if v := verbs(t, m, c, true); v != "get,patch" {
		t.Errorf("reconcile: %s", v)
	}
	if v := verbs(t, m, c, false); v != "" {
		t.Errorf("nothing left: %s", v)
	}
	m.OnSync(pod.UID, state(pod, s, true))
	if n := pending(m); n != 0 {
		t.Errorf("unchanged status: %d pending", n)
	}
	// Even stale, an unchanged status is not patched.
	m.syncMu.Lock()
	m.apiVersions[pod.UID]--
	m.syncMu.Unlock()
	if v := verbs(t, m, c, true); v != "get" {
		t.Errorf("stale, unchanged: %s", v)
	}
	if n := pending(m); n != 0 {
		t.Errorf("%d pending", n)
	}
}

// TestReconcilePodStatus is kubelet's: the periodic sync writes again only
// what differs from the API server's status (as last seen) in a field
// kubelet owns.
func TestReconcilePodStatus(t *testing.T) {
	c := fake.NewClient(testPod())
	m, _ := newManager(c)
	pod := testPod()
	s := randomStatus()
	m.OnSync(pod.UID, state(pod, s, true))
	verbs(t, m, c, true)

	// The same status: no reconcile.
	if v := verbs(t, m, c, true); v != "" {
		t.Errorf("same status: %s", v)
	}
	// The API server's status with times in nanoseconds (the pod as the
	// caller's informer shows it): no reconcile either.
	withNanos := testPod()
	withNanos.Status = s
	start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 999, time.UTC))
	withNanos.Status.StartTime = &start
	s2 := s
	whole := start.Rfc3339Copy()
	s2.StartTime = &whole
	m.OnSync(pod.UID, state(withNanos, s2, true))
	verbs(t, m, c, false)
	m.OnSync(pod.UID, state(withNanos, s2, true))
	if v := verbs(t, m, c, true); v != "" {
		t.Errorf("only nanoseconds differ: %s", v)
	}
	// Someone else changed the status in the API server: the reconcile
	// writes ours again.
	changed, _ := c.Pod("new", "foo")
	changed.Status.Message = "overwritten"
	c.Put(changed)
	m.OnSync(pod.UID, state(changed, s2, true))
	if !m.needsReconcile(m.statuses[pod.UID]) {
		t.Fatal("no reconcile needed")
	}
	if v := verbs(t, m, c, false); v != "" {
		t.Errorf("before the period: %s", v)
	}
	if v := verbs(t, m, c, true); v != "get,patch" {
		t.Errorf("reconcile: %s", v)
	}
	if got, _ := c.Pod("new", "foo"); got.Status.Message != s.Message {
		t.Errorf("API message %q", got.Status.Message)
	}
}

// TestDeletePod: kubelet's TestDeletePodBeforeFinished and
// TestDeletePodFinished: the object goes only once the worker removed the
// pod, with grace 0 and the UID as precondition.
func TestDeletePod(t *testing.T) {
	pod := testPod()
	pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	s := randomStatus()
	s.Phase = corev1.PodFailed
	m.OnSync(pod.UID, state(pod, s, false))
	if v := verbs(t, m, c, false); v != "get,patch" {
		t.Errorf("before finished: %s", v)
	}
	m.OnSync(pod.UID, removed(pod, s))
	if v := verbs(t, m, c, false); v != "get,delete" {
		t.Errorf("finished: %s", v)
	}
	if _, ok := c.Pod("new", "foo"); ok {
		t.Error("pod not deleted")
	}
	if _, ok := m.Status(pod.UID); ok {
		t.Error("entry kept")
	}
}

// TestDeleteAfterTerminalPhase: a removed pod's final status is patched
// (its terminal phase no longer held back), then the object deleted.
func TestDeleteAfterTerminalPhase(t *testing.T) {
	pod := testPod()
	pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	pod.Status = runningStatus()
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	s := runningStatus()
	s.Phase = corev1.PodSucceeded
	m.OnSync(pod.UID, state(pod, s, true))
	if v := verbs(t, m, c, false); v != "get" {
		t.Errorf("containers running: %s", v) // held back: nothing to patch
	}
	m.OnSync(pod.UID, removed(pod, s))
	if v := verbs(t, m, c, false); v != "get,patch,delete" {
		t.Errorf("removed: %s", v)
	}
}

func TestDeleteCalls(t *testing.T) {
	pod := testPod()
	pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	m.OnSync(pod.UID, removed(pod, corev1.PodStatus{Phase: corev1.PodFailed}))
	if err := m.Sync(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	calls := c.Calls()
	if len(calls) != 3 {
		t.Fatalf("calls %+v", calls)
	}
	if p := string(calls[1].Patch); p != `{"metadata":{"uid":"12345678"},"status":{"phase":"Failed"}}` {
		t.Errorf("patch %s", p)
	}
	if d := calls[2]; d.Verb != fake.Delete || d.UID != pod.UID || d.Name != "foo" || d.Namespace != "new" {
		t.Errorf("delete %+v", d)
	}
}

// TestDoNotDeleteRecreated: the UID precondition keeps a pod recreated
// between the read and the deletion; the entry is dropped.
func TestDoNotDeleteRecreated(t *testing.T) {
	pod := testPod()
	pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	pod.Status.Phase = corev1.PodFailed
	c := &recreatingClient{Client: fake.NewClient(pod)}
	m, _ := newManager(c.Client)
	m.client = c
	m.OnSync(pod.UID, removed(pod, corev1.PodStatus{Phase: corev1.PodFailed}))
	if err := m.Sync(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Pod("new", "foo"); !ok || got.UID != "new-uid" {
		t.Errorf("recreated pod deleted: %+v", got)
	}
	if _, ok := m.Status(pod.UID); ok {
		t.Error("entry kept")
	}
}

// recreatingClient recreates the pod under a new UID right before a
// deletion reaches it.
type recreatingClient struct{ *fake.Client }

func (c *recreatingClient) DeletePod(ctx context.Context, ns, name string, uid types.UID) error {
	p, _ := c.Pod(ns, name)
	p.UID = "new-uid"
	c.Put(p)
	return c.Client.DeletePod(ctx, ns, name, uid)
}

// TestRetries: a failed read, patch or deletion is not lost.
func TestRetries(t *testing.T) {
	pod := testPod()
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	ctx := context.Background()
	boom := apierrors.NewServiceUnavailable("etcd is down")

	s := randomStatus()
	m.OnSync(pod.UID, state(pod, s, true))
	c.FailNext(fake.Patch, boom)
	if err := m.Sync(ctx, false); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("error %v, want the client's", err)
	}
	if _, ok := m.Written(pod.UID); ok {
		t.Error("written after a failed patch")
	}
	// Retried when another pod's status wakes the manager...
	other := testPod()
	other.Name, other.UID = "bar", "bar-uid"
	c.Put(other)
	m.OnSync(other.UID, state(other, randomStatus(), true))
	if err := m.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Pod("new", "foo"); got.Status.Message != s.Message {
		t.Errorf("not retried: %+v", got.Status)
	}
	// ... or at the periodic reconcile.
	s = randomStatus()
	m.OnSync(pod.UID, state(pod, s, true))
	c.FailNext(fake.Get, boom)
	var se *apierrors.StatusError
	if err := m.Sync(ctx, false); !errors.As(err, &se) {
		t.Fatalf("error %v", err)
	}
	if err := m.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Pod("new", "foo"); got.Status.Message != s.Message {
		t.Errorf("not retried at reconcile: %+v", got.Status)
	}

	// A failed deletion is retried at the reconcile (needsUpdate:
	// canBeDeleted).
	api, _ := c.Pod("new", "foo")
	api.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	c.Put(api)
	final := corev1.PodStatus{Phase: corev1.PodSucceeded, Message: s.Message}
	m.OnSync(pod.UID, removed(pod, final))
	c.FailNext(fake.Delete, boom)
	if err := m.Sync(ctx, false); err == nil {
		t.Fatal("no error")
	}
	if _, ok := c.Pod("new", "foo"); !ok {
		t.Fatal("deleted")
	}
	c.ClearCalls()
	if v := verbs(t, m, c, false); v != "" {
		t.Errorf("without reconcile: %s", v)
	}
	if v := verbs(t, m, c, true); v != "get,delete" {
		t.Errorf("reconcile: %s", v)
	}
	if _, ok := c.Pod("new", "foo"); ok {
		t.Error("not deleted")
	}
}

// TestDropped: entries of pods gone from the API server and the worker
// are dropped; so is a removed pod's once its final status is written.
func TestDropped(t *testing.T) {
	c := fake.NewClient()
	m, _ := newManager(c)
	gone := testPod()
	m.OnSync(gone.UID, removed(gone, corev1.PodStatus{Phase: corev1.PodFailed}))
	kept := testPod()
	kept.Name, kept.UID = "kept", "kept-uid"
	c.Put(kept)
	m.OnSync(kept.UID, removed(kept, corev1.PodStatus{Phase: corev1.PodFailed}))
	if err := m.Sync(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	n := len(m.statuses) + len(m.written)
	m.mu.Unlock()
	if n != 0 || len(m.apiVersions) != 0 {
		t.Errorf("%d entries left, %d versions", n, len(m.apiVersions))
	}
	if got, _ := c.Pod("new", "kept"); got.Status.Phase != corev1.PodFailed {
		t.Errorf("final status not written: %+v", got.Status)
	}
}

// TestKeepsOthersConditions: the patch never removes a condition another
// component added since the manager last looked.
func TestKeepsOthersConditions(t *testing.T) {
	pod := testPod()
	c := fake.NewClient(pod)
	m, _ := newManager(c)
	m.OnSync(pod.UID, state(pod, runningStatus(), true))
	verbs(t, m, c, false)
	api, _ := c.Pod("new", "foo")
	api.Status.Conditions = append(api.Status.Conditions, featureT)
	c.Put(api)
	s := runningStatus()
	s.Conditions[0].Status = corev1.ConditionFalse
	m.OnSync(pod.UID, state(pod, s, true))
	verbs(t, m, c, false)
	got, _ := c.Pod("new", "foo")
	if _, f := findCondition(got.Status.Conditions, featureT.Type); f == nil {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
	if _, r := findCondition(got.Status.Conditions, corev1.PodReady); r == nil || r.Status != corev1.ConditionFalse {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
}

// TestRun: OnSync wakes Run without blocking; the period (on the fake
// clock) reconciles; Run ends with its context and leaves no goroutine.
func TestRun(t *testing.T) {
	pod := testPod()
	c := fake.NewClient(pod)
	m, clk := newManager(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	s := randomStatus()
	m.OnSync(pod.UID, state(pod, s, true))
	waitFor(t, func() bool { w, ok := m.Written(pod.UID); return ok && w.Message == s.Message })

	api, _ := c.Pod("new", "foo")
	api.Status.Message = "overwritten"
	c.Put(api)
	m.OnSync(pod.UID, state(api, s, true)) // the caller's view: a status that is not ours
	waitFor(t, func() bool { return clk.HasWaiters() })
	clk.Step(DefaultSyncPeriod)
	waitFor(t, func() bool { p, _ := c.Pod("new", "foo"); return p.Status.Message == s.Message })

	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
}

// waitFor polls cond: Run works on its own goroutine.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

// TestOnSyncDoesNotBlock: OnSync returns while the API server hangs.
func TestOnSyncDoesNotBlock(t *testing.T) {
	hang := make(chan struct{})
	c := &hangingClient{Client: fake.NewClient(testPod()), hang: hang}
	m := New(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	pod := testPod()
	for range 100 {
		m.OnSync(pod.UID, state(pod, randomStatus(), true))
	}
	if _, ok := m.Status(pod.UID); !ok {
		t.Error("no status")
	}
	cancel()
	close(hang)
	<-done
}

type hangingClient struct {
	*fake.Client
	hang chan struct{}
}

func (c *hangingClient) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	select {
	case <-c.hang:
	case <-ctx.Done():
	}
	return nil, apierrors.NewTimeoutError("hung", 1)
}

// A pod deleted from the API server while the worker still kills it (a
// forced deletion): the first refused read after a write drops its entry,
// and the statuses the kill still sends are not read or written (each
// cost a failing read before: ~2 a second per pod in the burst tier),
// until the worker's last; a status after that is written again.
func TestDeletedHeldPodIsNotReadAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"forbidden", apierrors.NewForbidden(corev1.Resource("pods"), "p", errors.New("no relationship found between node and this object"))},
		{"not found", apierrors.NewNotFound(corev1.Resource("pods"), "p")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			c := fake.NewClient(pod)
			m, _ := newManager(c)
			m.OnSync(pod.UID, state(pod, randomStatus(), true))
			if v := verbs(t, m, c, false); v != "get,patch" {
				t.Fatalf("calls %s", v)
			}
			deleting := pod.DeepCopy()
			now := metav1.Now()
			deleting.DeletionTimestamp = &now
			m.OnSync(pod.UID, state(deleting, randomStatus(), true))
			c.FailNext("get", tc.err)
			if v := verbs(t, m, c, false); v != "get" {
				t.Fatalf("calls %s, want the refused get", v)
			}
			for i := range 3 {
				m.OnSync(pod.UID, state(deleting, randomStatus(), true))
				if v := verbs(t, m, c, true); v != "" {
					t.Fatalf("status %d of the deleted pod: calls %s, want none", i, v)
				}
			}
			m.OnSync(pod.UID, removed(deleting, randomStatus()))
			if v := verbs(t, m, c, true); v != "" {
				t.Fatalf("the worker's last: calls %s", v)
			}
			if _, ok := m.Status(pod.UID); ok {
				t.Fatal("entry kept")
			}
			m.OnSync(pod.UID, state(pod, randomStatus(), true))
			if v := verbs(t, m, c, false); v != "get,patch" {
				t.Fatalf("a status after the worker's last: calls %s, want it written", v)
			}
		})
	}
}
