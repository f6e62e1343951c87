package podworker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var always = corev1.ContainerRestartPolicyAlways

func testPod(name string) *corev1.Pod {
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{
				{Name: "init-a", Image: "busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent},
				{Name: "proxy", Image: "envoy:1", RestartPolicy: &always, ImagePullPolicy: corev1.PullIfNotPresent},
			},
			Containers: []corev1.Container{
				{Name: "app", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent},
				{Name: "web", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent},
			},
		},
	}
}

func exitInits(c *runtimeapi.ContainerConfig) *fake.Exit {
	if strings.HasPrefix(c.Metadata.Name, "init-") {
		return &fake.Exit{}
	}
	return nil
}

type env struct {
	t       testing.TB
	fake    *fake.Runtime
	syncer  *podsync.Syncer
	workers *podworker.Workers
	root    string

	mu      sync.Mutex
	states  map[types.UID]podworker.PodState
	changed chan struct{}
}

func newEnv(t testing.TB, fopts []fake.Option, opts ...podworker.Option) *env {
	f := fake.New(append([]fake.Option{fake.WithStartFunc(exitInits)}, fopts...)...)
	e := &env{t: t, fake: f, root: t.TempDir(), states: map[types.UID]podworker.PodState{}, changed: make(chan struct{}, 1)}
	ims := images.NewManager(f)
	t.Cleanup(func() { ims.Close() })
	e.syncer = podsync.NewSyncer(f, ims, podsync.WithRootDir(e.root), podsync.WithPodLogsDir(filepath.Join(e.root, "logs")))
	onSync := func(uid types.UID, st podworker.PodState) {
		e.mu.Lock()
		e.states[uid] = st
		e.mu.Unlock()
		select {
		case e.changed <- struct{}{}:
		default:
		}
	}
	e.workers = podworker.New(e.syncer, append([]podworker.Option{podworker.WithOnSync(onSync), podworker.WithRelistPeriod(20 * time.Millisecond)}, opts...)...)
	t.Cleanup(func() { e.workers.Close() })
	return e
}

// waitFor waits until cond holds for every pod in uids, as reported after
// each sync; it fails after 20 s.
func (e *env) waitFor(what string, uids []types.UID, cond func(podworker.PodState) bool) {
	e.t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		ok := true
		for _, uid := range uids {
			if st, seen := e.states[uid]; !seen || !cond(st) {
				ok = false
				break
			}
		}
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-e.changed:
		case <-deadline.C:
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func running(st podworker.PodState) bool {
	if st.Status == nil || st.Pod == nil {
		return false
	}
	for _, c := range st.Pod.Spec.Containers {
		cs := st.Status.FindContainerStatusByName(c.Name)
		if cs == nil || cs.State != podsync.ContainerStateRunning {
			return false
		}
	}
	return len(st.Result.Results) == 0
}

func removed(st podworker.PodState) bool { return st.Removed }

func TestUpsertRunsPodAndDeleteRemovesIt(t *testing.T) {
	e := newEnv(t, nil)
	pod := testPod("one")
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod running", []types.UID{pod.UID}, running)
	if st, ok := e.workers.Status(pod.UID); !ok || !running(st) {
		t.Fatalf("Status: %+v %v", st, ok)
	}
	if err := e.workers.Delete(pod, nil); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod removed", []types.UID{pod.UID}, removed)
	if _, ok := e.workers.Status(pod.UID); ok {
		t.Fatal("removed pod still held")
	}
	e.assertNodeEmpty()
}

func (e *env) assertNodeEmpty() {
	e.t.Helper()
	ctx := context.Background()
	sbs, _ := e.fake.ListPodSandbox(ctx, nil)
	cs, _ := e.fake.ListContainers(ctx, nil)
	if len(sbs)+len(cs) != 0 {
		e.t.Errorf("left on the runtime: %d sandboxes, %d containers", len(sbs), len(cs))
	}
	for _, dir := range []string{filepath.Join(e.root, "pods"), filepath.Join(e.root, "logs")} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			e.t.Fatal(err)
		}
		if len(entries) != 0 {
			e.t.Errorf("%d directories left in %s", len(entries), dir)
		}
	}
}

// 50 pods started and deleted: nothing is left.
func TestFiftyPodsLeaveNothing(t *testing.T) {
	e := newEnv(t, nil)
	var uids []types.UID
	var pods []*corev1.Pod
	for i := 0; i < 50; i++ {
		p := testPod(fmt.Sprintf("p%02d", i))
		pods = append(pods, p)
		uids = append(uids, p.UID)
		if err := e.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("50 pods running", uids, running)
	for _, p := range pods {
		now := metav1.Now()
		p = p.DeepCopy()
		p.DeletionTimestamp = &now
		if err := e.workers.Upsert(p); err != nil { // as an informer delivers a deletion
			t.Fatal(err)
		}
	}
	e.waitFor("50 pods removed", uids, removed)
	e.assertNodeEmpty()
}

// Upserts of one pod from many goroutines at once never create a second
// sandbox or a second instance of a container.
func TestConcurrentUpsertsNeverDuplicate(t *testing.T) {
	e := newEnv(t, nil)
	const rounds, per = 20, 50 // 1,000 upserts
	for r := 0; r < rounds; r++ {
		pod := testPod(fmt.Sprintf("c%02d", r))
		var wg sync.WaitGroup
		for i := 0; i < per; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := e.workers.Upsert(pod); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		e.waitFor("pod running", []types.UID{pod.UID}, running)
	}
	ctx := context.Background()
	pods, err := podsync.ListPods(ctx, e.fake)
	if err != nil || len(pods) != rounds {
		t.Fatalf("ListPods: %d pods, %v", len(pods), err)
	}
	for _, p := range pods {
		names := map[string]int{}
		for _, c := range p.Containers {
			names[c.Metadata.Name]++
		}
		if len(p.Sandboxes) != 1 || len(p.Containers) != 4 {
			t.Errorf("%s: %d sandboxes, containers %v; want 1 and one of each of 4", p.Name, len(p.Sandboxes), names)
		}
	}
	if n := e.fake.CallCount("RunPodSandbox"); n != rounds {
		t.Errorf("%d RunPodSandbox calls for %d pods", n, rounds)
	}
}

// With 100 steady pods, a relist costs two CRI calls.
func TestRelistCostsTwoCalls(t *testing.T) {
	e := newEnv(t, nil, podworker.WithRelistPeriod(0), podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithResyncPeriod(0), podworker.WithContainerEvents(false))
	var uids []types.UID
	for i := 0; i < 100; i++ {
		p := testPod(fmt.Sprintf("r%03d", i))
		uids = append(uids, p.UID)
		if err := e.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("100 pods running", uids, running)
	ctx := context.Background()
	if err := e.workers.Relist(ctx); err != nil { // learns every instance once
		t.Fatal(err)
	}
	// The pods it woke sync (reading their status when the relist began
	// before their last sync ended): steady is when they are done.
	if err := e.workers.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	e.fake.ResetCalls()
	for i := 0; i < 3; i++ {
		if err := e.workers.Relist(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.fake.Calls()); n != 6 {
		t.Fatalf("3 relists of 100 steady pods made %d CRI calls (%v), want 6", n, e.fake.Calls()[:min(n, 10)])
	}
}

// A crashed container is restarted when its back-off ends: not before
// (the new instance is created at or after the expiry, on the fake
// clock) and without polling.
func TestBackOffExpiryWakesPod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	f := fake.New(fake.WithClock(clk), fake.WithStartFunc(exitInits))
	root := t.TempDir()
	ims := images.NewManager(f, images.WithClock(clk))
	defer ims.Close()
	syncer := podsync.NewSyncer(f, ims, podsync.WithClock(clk), podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	states := make(chan podworker.PodState, 100)
	w := podworker.New(syncer, podworker.WithClock(clk), podworker.WithRelistPeriod(0), podworker.WithResyncPeriod(0), podworker.WithContainerEvents(false),
		podworker.WithRelistGap(0), podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithOnSync(func(_ types.UID, st podworker.PodState) { states <- st }))
	defer w.Close()
	pod := testPod("crash")
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = pod.Spec.Containers[:1]
	if err := w.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	next := func(cond func(podworker.PodState) bool) podworker.PodState {
		for {
			select {
			case st := <-states:
				if cond(st) {
					return st
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no sync for 20 s; fake clock at %v", clk.Now())
			}
		}
	}
	next(running)
	crash := func() {
		t.Helper()
		cs, _ := f.ListContainers(context.Background(), &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		if len(cs) != 1 {
			t.Fatalf("%d running containers", len(cs))
		}
		if err := f.ExitContainer(cs[0].Id, fake.Exit{Code: 1}); err != nil {
			t.Fatal(err)
		}
		if err := w.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	crash() // the first restart has no back-off
	next(running)
	crash()
	st := next(func(st podworker.PodState) bool { return !st.NextSync.IsZero() })
	if !errors.Is(st.Result.Error(), podsync.ErrCrashLoopBackOff) {
		t.Fatalf("result %v, want CrashLoopBackOff", st.Result.Error())
	}
	clk.SetTime(st.NextSync)
	next(running)
	cs, _ := f.ListContainers(context.Background(), &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if created := time.Unix(0, cs[0].CreatedAt); created.Before(st.NextSync) {
		t.Fatalf("restarted at %v, before the back-off ended at %v", created, st.NextSync)
	}
}

// After an agent restart, pods it no longer has are removed once it says
// its sources are ready; the pods it upserted again keep running.
func TestOrphansRemovedAfterSourcesReady(t *testing.T) {
	e := newEnv(t, nil, podworker.WithGC(0, podsync.DefaultGCPolicy))
	keep, orphan := testPod("keep"), testPod("orphan")
	for _, p := range []*corev1.Pod{keep, orphan} {
		if err := e.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor("pods running", []types.UID{keep.UID, orphan.UID}, running)
	e.workers.Close()

	// A new agent process knows only keep.
	w2 := podworker.New(e.syncer, podworker.WithGC(0, podsync.DefaultGCPolicy))
	defer w2.Close()
	if err := w2.Upsert(keep); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := w2.CollectGarbage(ctx); err != nil { // sources not ready: nothing goes
		t.Fatal(err)
	}
	if pods, _ := podsync.ListPods(ctx, e.fake); len(pods) != 2 {
		t.Fatalf("%d pods before SourcesReady, want 2", len(pods))
	}
	w2.SourcesReady()
	if err := w2.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	pods, _ := podsync.ListPods(ctx, e.fake)
	if len(pods) != 1 || pods[0].UID != keep.UID {
		t.Fatalf("left: %v", pods)
	}
	if n := e.fake.CallCount("RunPodSandbox"); n != 2 {
		t.Fatalf("%d sandboxes created: the restart duplicated a pod", n)
	}
}

// retryWorkers runs Workers on clk and f with only the retries' timers
// (no periodic relist, resync, events, GC or relist gap), jitter as
// given; states hears every sync. Closed at the test's end.
func retryWorkers(t *testing.T, clk *testingclock.FakeClock, f *fake.Runtime, jitter func(time.Duration) time.Duration) (*podworker.Workers, chan podworker.PodState) {
	root := t.TempDir()
	ims := images.NewManager(f, images.WithClock(clk))
	t.Cleanup(func() { ims.Close() })
	syncer := podsync.NewSyncer(f, ims, podsync.WithClock(clk), podsync.WithRootDir(root), podsync.WithPodLogsDir(root+"/logs"))
	states := make(chan podworker.PodState, 100)
	w := podworker.New(syncer, podworker.WithClock(clk), podworker.WithRelistPeriod(0), podworker.WithResyncPeriod(0), podworker.WithContainerEvents(false),
		podworker.WithRelistGap(0), podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithJitter(jitter),
		podworker.WithOnSync(func(_ types.UID, st podworker.PodState) { states <- st }))
	t.Cleanup(func() { w.Close() })
	return w, states
}

// Kubelet's pod workers requeue a sync that failed on a back-off for the
// time left of it plus up to half as much again (wait.Jitter with
// workerBackOffPeriodJitterFactor 0.5), so a crash-looping container is
// restarted after its back-off ends, not the moment it does. With the
// largest spread: not restarted at the back-off's end (the retry timer is
// still waiting), restarted at the jittered time.
func TestCrashLoopRetryIsJittered(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	f := fake.New(fake.WithClock(clk), fake.WithStartFunc(exitInits))
	most := func(d time.Duration) time.Duration { return d + time.Duration(podworker.JitterFactor*float64(d)) }
	w, states := retryWorkers(t, clk, f, most)
	pod := testPod("jitter")
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = pod.Spec.Containers[:1]
	if err := w.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	next := func(cond func(podworker.PodState) bool) podworker.PodState {
		for {
			select {
			case st := <-states:
				if cond(st) {
					return st
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no sync for 20 s; fake clock at %v", clk.Now())
			}
		}
	}
	runningIDs := func() []*runtimeapi.Container {
		cs, _ := f.ListContainers(context.Background(), &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		return cs
	}
	crash := func(seen time.Duration) {
		t.Helper()
		cs := runningIDs()
		if len(cs) != 1 {
			t.Fatalf("%d running containers", len(cs))
		}
		if err := f.ExitContainer(cs[0].Id, fake.Exit{Code: 1}); err != nil {
			t.Fatal(err)
		}
		clk.Step(seen)
		if err := w.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	next(running)
	crash(0) // the first restart has no back-off
	next(running)
	crash(2 * time.Second) // the sync that meets the back-off comes 2 s after the exit
	st := next(func(st podworker.PodState) bool { return !st.NextSync.IsZero() })
	backOffEnd, ok := st.Result.NextSync()
	if !errors.Is(st.Result.Error(), podsync.ErrCrashLoopBackOff) || !ok {
		t.Fatalf("result %v, want CrashLoopBackOff", st.Result.Error())
	}
	if want := st.Synced.Add(most(backOffEnd.Sub(st.Synced))); !st.NextSync.Equal(want) {
		t.Fatalf("retry at %v, want %v (back-off ends %v, %v after the sync, plus half)", st.NextSync, want, backOffEnd, backOffEnd.Sub(st.Synced))
	}
	for !clk.HasWaiters() { // the retry timer is armed after the state is reported
		goruntime.Gosched()
	}
	clk.SetTime(backOffEnd)
	if !clk.HasWaiters() || len(runningIDs()) != 0 {
		t.Fatalf("retried when the back-off ended, at %v; kubelet retries at %v", backOffEnd, st.NextSync)
	}
	clk.SetTime(st.NextSync)
	next(running)
	if created := time.Unix(0, runningIDs()[0].CreatedAt); created.Before(st.NextSync) {
		t.Fatalf("restarted at %v, before the retry at %v", created, st.NextSync)
	}
}

// Listeners given at construction and added later all hear a sync, in
// order; a removed one no longer does.
func TestOnSyncListeners(t *testing.T) {
	var mu sync.Mutex
	heard := map[types.UID]string{}
	listen := func(name string) func(types.UID, podworker.PodState) {
		return func(uid types.UID, st podworker.PodState) {
			mu.Lock()
			heard[uid] += name
			mu.Unlock()
		}
	}
	e := newEnv(t, nil, podworker.WithOnSync(listen("a")), podworker.WithOnSync(listen("b")))
	remove := e.workers.OnSync(listen("c"))
	// The last listener: once it heard a pod, all the others have.
	last := make(chan types.UID, 100)
	e.workers.OnSync(func(uid types.UID, _ podworker.PodState) {
		select {
		case last <- uid:
		default: // read while waited for; later syncs need not be
		}
	})
	heardBy := func(uid types.UID) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case got := <-last:
				if got == uid {
					return
				}
			case <-timeout:
				t.Fatalf("no sync of %s heard", uid)
			}
		}
	}
	first, second := testPod("first"), testPod("second")
	if err := e.workers.Upsert(first); err != nil {
		t.Fatal(err)
	}
	heardBy(first.UID)
	remove()
	if err := e.workers.Upsert(second); err != nil {
		t.Fatal(err)
	}
	heardBy(second.UID)
	mu.Lock()
	defer mu.Unlock()
	if got := heard[first.UID]; !strings.HasPrefix(got, "abc") {
		t.Errorf("first pod's syncs heard as %q, want a, b, c in order", got)
	}
	if got := heard[second.UID]; !strings.HasPrefix(got, "ab") || strings.Contains(got, "c") {
		t.Errorf("second pod's syncs heard as %q, want a and b only", got)
	}
}
