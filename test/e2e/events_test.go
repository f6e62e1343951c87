package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/test/criproxy"
)

// requireContainerEvents skips unless the runtime streams CRI container
// events (GetContainerEvents; containerd 1.6 answers Unimplemented).
func requireContainerEvents(t *testing.T, rt *runtime.Client) {
	t.Helper()
	// Cancelled, not a deadline: a deadline travels to the runtime as the
	// call's timeout, and its end can come back as the runtime's
	// DeadlineExceeded before the context says so.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(500*time.Millisecond, cancel)
	err := rt.StreamContainerEvents(ctx, func(*runtimeapi.ContainerEventResponse) {})
	if errors.Is(err, runtime.ErrUnimplemented) {
		t.Skipf("the runtime streams no container events: %v", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("GetContainerEvents: %v", err)
	}
}

// eventsThrough is the runtime with its container event stream taken
// from another connection (through a criproxy, which the test can close
// under the stream); it records how each stream ended and counts events.
type eventsThrough struct {
	*runtime.Client
	events *runtime.Client

	delivered atomic.Int64
	mu        sync.Mutex
	ends      []error
}

func (e *eventsThrough) StreamContainerEvents(ctx context.Context, onEvent func(*runtimeapi.ContainerEventResponse)) error {
	err := e.events.StreamContainerEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) {
		e.delivered.Add(1)
		onEvent(ev)
	})
	e.mu.Lock()
	e.ends = append(e.ends, err)
	e.mu.Unlock()
	return err
}

func (e *eventsThrough) streamEnds() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ends)
}

var _ runtime.ContainerEventStreamer = (*eventsThrough)(nil)

// podStates records the Workers' states per pod, with when each was seen.
type podStates struct {
	mu     sync.Mutex
	states map[types.UID]podworker.PodState
	cond   *sync.Cond
}

func newPodStates() *podStates {
	s := &podStates{states: map[types.UID]podworker.PodState{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *podStates) record(uid types.UID, st podworker.PodState) {
	s.mu.Lock()
	s.states[uid] = st
	s.mu.Unlock()
	s.cond.Broadcast()
}

// wait returns when cond holds for the pod's state (checked at each
// recorded state, so the time is when the Workers saw it), or fails the
// test after timeout.
func (s *podStates) wait(t *testing.T, uid types.UID, what string, timeout time.Duration, cond func(podworker.PodState) bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, s.cond.Broadcast)
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !cond(s.states[uid]) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		s.cond.Wait()
	}
	return time.Now()
}

func containerState(st podworker.PodState, name string) podsync.ContainerState {
	if st.Status == nil {
		return ""
	}
	if cs := st.Status.FindContainerStatusByName(name); cs != nil {
		return cs.State
	}
	return ""
}

// A container that exits when the test writes to its FIFO: the exit is at
// the end of the ExecSync that writes (within milliseconds).
func exitOnDemand(image string) corev1.Container {
	return corev1.Container{Name: "app", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"sh", "-c", "mkfifo /tmp/exit && read x </tmp/exit; exit 3"}}
}

// podworker on a runtime with container events (containerd 2): while the
// stream lives, a container's exit wakes a relist at once (well before the
// relist period); when the stream is killed under it (the criproxy it
// runs through is closed, and stays closed, so every reopening fails),
// podworker goes on relisting every period and still sees the next
// container's exit, with no event delivered after the kill.
func TestContainerEventsFallbackOnContainerd(t *testing.T) {
	e, rt := setup(t)
	requireContainerEvents(t, rt)
	ctx := context.Background()
	backend := strings.TrimPrefix(e.endpoint, "unix://")
	proxy, err := criproxy.Start(filepath.Join(t.TempDir(), "events.sock"), backend)
	if err != nil {
		t.Fatal(err)
	}
	proxyClosed := false
	t.Cleanup(func() {
		if !proxyClosed {
			proxy.Close()
		}
	})
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	evRt, err := runtime.Dial(dctx, proxy.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { evRt.Close() })
	split := &eventsThrough{Client: rt, events: evRt}

	const relist = 4 * time.Second
	ims := images.NewManager(rt)
	t.Cleanup(func() { ims.Close() })
	dir := t.TempDir()
	syncer := podsync.NewSyncer(split, ims, podsync.WithRootDir(dir), podsync.WithPodLogsDir(filepath.Join(dir, "logs")))
	states := newPodStates()
	w := podworker.New(syncer, podworker.WithRelistPeriod(relist), podworker.WithResyncPeriod(0),
		podworker.WithOnSync(states.record))
	t.Cleanup(func() { w.Close() })

	// exitSeen runs a pod to Running, makes its container exit, and returns
	// how long after the exit the Workers saw it.
	exitSeen := func(name string) time.Duration {
		t.Helper()
		pod := newPod(t, rt, name, exitOnDemand(e.openImage))
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		if err := w.Upsert(pod); err != nil {
			t.Fatal(err)
		}
		states.wait(t, pod.UID, name+" running", 60*time.Second, func(st podworker.PodState) bool {
			return containerState(st, "app") == podsync.ContainerStateRunning
		})
		time.Sleep(relist + 500*time.Millisecond) // let a periodic relist pass, so the next is a period away
		st, _ := w.Status(pod.UID)
		id := st.Status.FindContainerStatusByName("app").ID
		// The FIFO may not exist for a moment after the start: retry the write.
		for i := 0; ; i++ {
			_, stderr, err := rt.ExecSync(ctx, id, []string{"sh", "-c", "[ -p /tmp/exit ] && echo >/tmp/exit"}, 5*time.Second)
			if err == nil {
				break
			}
			if i == 50 {
				t.Fatalf("exec in %s: %v (%s)", name, err, stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		exited := time.Now()
		seen := states.wait(t, pod.UID, name+"'s exit", 3*relist, func(st podworker.PodState) bool {
			return containerState(st, "app") == podsync.ContainerStateExited
		})
		return seen.Sub(exited)
	}

	withEvents := exitSeen("events-alive")
	before := split.delivered.Load()
	t.Logf("stream alive: exit seen after %v (relist period %v); %d events so far", withEvents.Round(time.Millisecond), relist, before)
	if before == 0 {
		t.Errorf("no container event reached podworker while the stream lived")
	}
	if withEvents >= relist {
		t.Errorf("with events the exit was seen after %v, not before the relist period %v", withEvents, relist)
	}

	proxyClosed = true
	if err := proxy.Close(); err != nil {
		t.Logf("closing the proxy: %v", err)
	}
	ends := func() int { return len(split.streamEnds()) }
	for deadline := time.Now().Add(10 * time.Second); ends() == 0; time.Sleep(20 * time.Millisecond) { // the stream ends on its own goroutine
		if time.Now().After(deadline) {
			t.Fatal("the event stream did not end when the proxy closed")
		}
	}
	killed := split.delivered.Load()
	relisted := exitSeen("events-killed")
	t.Logf("stream killed (ends: %v): exit seen after %v by relisting", split.streamEnds(), relisted.Round(time.Millisecond))
	if got := split.delivered.Load(); got != killed {
		t.Errorf("%d events delivered after the stream was killed", got-killed)
	}
	for _, err := range split.streamEnds() {
		if err == nil {
			t.Errorf("a stream ended without an error: %v", split.streamEnds())
		}
	}
}

// Pod start, creation (Upsert) to Running as the Workers report it (API
// phase Running), with container events and with relisting only
// (podworker.WithContainerEvents(false)), both at kubelet's 1 s relist
// period, for N pods each started one at a time (the earlier ones left
// running): a pod of one app
// container, and one whose init container must be seen exited before the
// app container starts (where an event saves waiting for a relist).
func TestPodStartEventsVsRelistOnContainerd(t *testing.T) {
	e, rt := setup(t)
	requireContainerEvents(t, rt)
	const n = 8
	type shape struct {
		name string
		pod  func(name string) *corev1.Pod
	}
	shapes := []shape{
		{"app only", func(name string) *corev1.Pod { return newPod(t, rt, name, sleeper("app", e.openImage)) }},
		{"init + app", func(name string) *corev1.Pod {
			p := newPod(t, rt, name, sleeper("app", e.openImage))
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: e.openImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"true"}}}
			return p
		}},
	}
	type row struct {
		shape, mode string
		d           []time.Duration
	}
	var rows []row
	for _, sh := range shapes {
		for _, events := range []bool{true, false} {
			mode := "events"
			if !events {
				mode = "relist only"
			}
			ims := images.NewManager(rt)
			dir := t.TempDir()
			syncer := podsync.NewSyncer(rt, ims, podsync.WithRootDir(dir), podsync.WithPodLogsDir(filepath.Join(dir, "logs")))
			states := newPodStates()
			w := podworker.New(syncer, podworker.WithContainerEvents(events), podworker.WithOnSync(states.record))
			r := row{shape: sh.name, mode: mode}
			for i := range n {
				pod := sh.pod(fmt.Sprintf("start-%s-%d", strings.ReplaceAll(strings.ReplaceAll(sh.name, " ", ""), "+", "-"), i))
				start := time.Now()
				if err := w.Upsert(pod); err != nil {
					t.Fatal(err)
				}
				at := states.wait(t, pod.UID, pod.Name+" Running", 60*time.Second, func(st podworker.PodState) bool {
					return st.APIStatus.Phase == corev1.PodRunning
				})
				r.d = append(r.d, at.Sub(start))
			}
			// The pods stay (newPod's cleanup removes them when the test
			// ends): deleting each through the Workers costs seconds.
			w.Close()
			ims.Close()
			rows = append(rows, r)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pod start, creation → Running, %d pods each, relist period %v:\n", n, podworker.DefaultRelistPeriod)
	fmt.Fprintf(&b, "%-11s %-12s %8s %8s %8s %8s\n", "pod", "mode", "min", "median", "mean", "max")
	for _, r := range rows {
		s := slices.Clone(r.d)
		slices.Sort(s)
		var sum time.Duration
		for _, d := range s {
			sum += d
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }
		fmt.Fprintf(&b, "%-11s %-12s %8s %8s %8s %8s\n", r.shape, r.mode, ms(s[0]), ms(s[len(s)/2]), ms(sum/time.Duration(len(s))), ms(s[len(s)-1]))
	}
	t.Log("\n" + b.String())
}
