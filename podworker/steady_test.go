package podworker_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

// clocked is Workers on a fake clock, with the pods' syncs counted.
type clocked struct {
	t       *testing.T
	clk     *testingclock.FakeClock
	rt      *fake.Runtime
	events  *countedEvents
	workers *podworker.Workers
	mu      sync.Mutex
	syncs   map[types.UID]int
	synced1 chan struct{} // a sync ended
}

func newClocked(t *testing.T, opts ...podworker.Option) *clocked {
	return newClockedWith(t, nil, opts...)
}

// newClockedWith is newClocked with options for the Syncer, made on the
// fake clock.
func newClockedWith(t *testing.T, syncOpts func(*testingclock.FakeClock) []podsync.Option, opts ...podworker.Option) *clocked {
	c := &clocked{t: t, clk: testingclock.NewFakeClock(time.Unix(1_000_000, 0)), syncs: map[types.UID]int{}, synced1: make(chan struct{}, 1)}
	c.rt = fake.New(fake.WithClock(c.clk), fake.WithStartFunc(exitInits))
	c.events = &countedEvents{Runtime: c.rt, handledOne: make(chan struct{}, 1)}
	root := t.TempDir()
	ims := images.NewManager(c.rt, images.WithClock(c.clk))
	t.Cleanup(func() { ims.Close() })
	syncer := podsync.NewSyncer(c.events, ims, append([]podsync.Option{podsync.WithClock(c.clk), podsync.WithRootDir(root), podsync.WithPodLogsDir(root + "/logs")}, syncOptsOf(syncOpts, c.clk)...)...)
	c.workers = podworker.New(syncer, append([]podworker.Option{podworker.WithClock(c.clk), podworker.WithJitter(func(d time.Duration) time.Duration { return d }),
		podworker.WithOnSync(func(uid types.UID, _ podworker.PodState) {
			c.mu.Lock()
			c.syncs[uid]++
			c.mu.Unlock()
			select {
			case c.synced1 <- struct{}{}:
			default:
			}
		})}, opts...)...)
	t.Cleanup(func() { c.workers.Close() })
	return c
}

func syncOptsOf(f func(*testingclock.FakeClock) []podsync.Option, clk *testingclock.FakeClock) []podsync.Option {
	if f == nil {
		return nil
	}
	return f(clk)
}

// countedEvents is the fake runtime with the container events the
// Workers have handled counted: an event sent (fake's EventsSent) but not
// yet handled is work WaitIdle cannot know of.
type countedEvents struct {
	*fake.Runtime
	handled    atomic.Int64
	handledOne chan struct{}
}

func (e *countedEvents) StreamContainerEvents(ctx context.Context, onEvent func(*runtimeapi.ContainerEventResponse)) error {
	return e.Runtime.StreamContainerEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) {
		onEvent(ev)
		e.handled.Add(1)
		select {
		case e.handledOne <- struct{}{}:
		default:
		}
	})
}

// settle waits until the Workers listen to the runtime's events, have
// handled every event sent and are idle: the counted state a measurement
// on the fake clock starts from, whatever the scheduler did.
func (c *clocked) settle() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		handled := c.events.handled.Load()
		if err := c.workers.WaitIdle(ctx); err != nil {
			c.t.Fatalf("WaitIdle at %v: %v", c.clk.Now(), err)
		}
		// Every event handled before WaitIdle began has asked for its
		// relist, which WaitIdle waited for. The watchers read once: a
		// subscription between two reads left it waiting for an event
		// that never came.
		watchers := c.rt.EventWatchers()
		if watchers > 0 && handled == int64(c.rt.EventsSent()) && handled == c.events.handled.Load() {
			return
		}
		if watchers == 0 {
			// Not yet subscribed: its first events are what we wait for
			// otherwise; poll the count without stepping the clock.
			goruntime.Gosched()
			if ctx.Err() != nil {
				c.t.Fatal("the Workers never listened to the runtime's events")
			}
			continue
		}
		select {
		case <-c.events.handledOne:
		case <-ctx.Done():
			c.t.Fatalf("%d of %d events handled", c.events.handled.Load(), c.rt.EventsSent())
		}
	}
}

// step advances the clock by d, a second at a time, letting the Workers
// finish what each second made due.
func (c *clocked) step(d time.Duration) {
	c.t.Helper()
	for end := c.clk.Now().Add(d); c.clk.Now().Before(end); {
		c.clk.Step(time.Second)
		// A hang detector for each wait, not a budget for the whole step:
		// seventy simulated minutes are 4,200 waits, which a loaded
		// machine under -race may not finish in any fixed time.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.workers.WaitIdle(ctx)
		cancel()
		if err != nil {
			c.t.Fatalf("WaitIdle at %v: %v", c.clk.Now(), err)
		}
	}
}

func (c *clocked) synced(uid types.UID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncs[uid]
}

func (c *clocked) runUntil(what string, uid types.UID, cond func(podworker.PodState) bool) {
	c.t.Helper()
	for i := 0; ; i++ {
		if st, ok := c.workers.Status(uid); ok && cond(st) {
			return
		}
		if i > 120 {
			c.t.Fatalf("not %s after %d simulated seconds", what, i)
		}
		c.step(time.Second)
	}
}

// A running pod whose last sync had nothing to do is not synced again
// until something changes: the resync would find nothing to do either. A
// change of the runtime (a container exits) still syncs it at once.
func TestSteadyPodIsNotResynced(t *testing.T) {
	c := newClocked(t)
	pod := testPod("steady")
	if err := c.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	c.runUntil("running", pod.UID, running)
	c.step(time.Minute)
	before := c.synced(pod.UID)
	c.step(5 * podworker.DefaultResyncPeriod)
	if got := c.synced(pod.UID); got != before {
		t.Fatalf("%d syncs of a steady pod in five resync periods, want none", got-before)
	}
	if got := c.rt.CallCount("StartContainer"); got != 4 {
		t.Fatalf("%d containers started, want 4", got)
	}
	// The same spec upserted again is synced (a caller's resync).
	if err := c.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if got := c.synced(pod.UID); got != before+1 {
		t.Fatalf("%d syncs after an upsert, want 1", got-before)
	}
}

// Pods that a resync may still give work keep kubelet's periodic resync:
// one with an active deadline, and one whose sync failed (retried, then
// resynced while it keeps failing).
func TestResyncKeptForPodsThatNeedIt(t *testing.T) {
	var failSecrets atomic.Bool
	c := newClocked(t, podworker.WithPullSecrets(func(_ context.Context, pod *corev1.Pod) ([]corev1.Secret, error) {
		if pod.Name == "failing" && failSecrets.Load() {
			return nil, errors.New("secret unavailable")
		}
		return nil, nil
	}), podworker.WithErrorRetry(2*time.Minute)) // longer than the resync: the resync period bounds the retry
	deadline := testPod("deadline")
	d := int64(3600)
	deadline.Spec.ActiveDeadlineSeconds = &d
	failing := testPod("failing")
	for _, p := range []*corev1.Pod{deadline, failing} {
		if err := c.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	c.runUntil("running", deadline.UID, running)
	c.runUntil("running", failing.UID, running)
	failSecrets.Store(true)
	if err := c.workers.Upsert(failing); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if st, _ := c.workers.Status(failing.UID); st.Err == nil {
		t.Fatal("sync with failing pull secrets succeeded")
	}
	d0, f0 := c.synced(deadline.UID), c.synced(failing.UID)
	c.step(3 * podworker.DefaultResyncPeriod)
	if got := c.synced(deadline.UID) - d0; got != 3 {
		t.Errorf("pod with an active deadline synced %d times in three resync periods, want 3", got)
	}
	if got := c.synced(failing.UID) - f0; got != 3 {
		t.Errorf("failing pod synced %d times in three resync periods, want 3", got)
	}
}

// While the runtime's events stream and nothing changes, the node is
// relisted every evented relist period; a container's exit comes as an
// event, is seen at once, and brings the relist period back for
// QuietAfter. Without the evented period, every second, as kubelet.
func TestEventedRelistPeriod(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []podworker.Option
		perFive int // relists in five quiet minutes
	}{
		{"evented", nil, 5},
		{"kubelet", []podworker.Option{podworker.WithEventedRelistPeriod(0)}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClocked(t, append([]podworker.Option{podworker.WithGC(0, podsync.DefaultGCPolicy)}, tc.opts...)...)
			c.settle() // the event stream open: its opening is a change
			pod := testPod("quiet")
			if err := c.workers.Upsert(pod); err != nil {
				t.Fatal(err)
			}
			c.runUntil("running", pod.UID, running)
			c.settle() // the pod's start events handled
			c.step(podworker.QuietAfter + time.Minute)
			c.settle()
			relists := func() int { return c.rt.CallCount("ListPodSandbox") }
			before := relists()
			c.step(5 * time.Minute)
			if got := relists() - before; got != tc.perFive {
				t.Fatalf("%d relists in five quiet minutes, want %d", got, tc.perFive)
			}
			st, _ := c.workers.Status(pod.UID)
			app := st.Status.FindContainerStatusByName("app")
			if err := c.rt.ExitContainer(app.ID, fake.Exit{Code: 1}); err != nil {
				t.Fatal(err)
			}
			restarted := func(st podworker.PodState) bool {
				cs := st.Status.FindContainerStatusByName("app")
				return running(st) && cs != nil && cs.ID != app.ID
			}
			// The events alone relist and restart the container: the
			// exit's relist and the restart's, each at once or at the
			// relist gap's end (when the last relist ended less than a gap
			// before), far from the evented period.
			for gaps := 0; ; gaps++ {
				c.settle()
				st, _ := c.workers.Status(pod.UID)
				if restarted(st) {
					break
				}
				if gaps == 2 {
					t.Fatalf("not restarted after %d relist gaps", gaps)
				}
				c.clk.Step(podworker.DefaultRelistGap)
			}
			c.settle() // the restart's events handled
			before = relists()
			c.step(podworker.QuietAfter)
			if got := relists() - before; got < int(podworker.QuietAfter/time.Second)-2 {
				t.Fatalf("%d relists in the %v after a change, want one a second", got, podworker.QuietAfter)
			}
		})
	}
}

// A steady pod holds no goroutine: its loop ends once idle with nothing
// armed, and the next wake-up (an upsert, a delete) starts it again.
func TestIdlePodHoldsNoGoroutine(t *testing.T) {
	c := newClocked(t)
	c.step(time.Second)
	base := goruntime.NumGoroutine()
	const n = 30
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		pod := testPod(fmt.Sprintf("idle%02d", i))
		pods = append(pods, pod)
		if err := c.workers.Upsert(pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, pod := range pods {
		c.runUntil("running", pod.UID, running)
	}
	c.step(time.Minute)
	if got := goruntime.NumGoroutine() - base; got >= n/2 {
		t.Errorf("%d more goroutines with %d steady pods, want their loops ended", got, n)
	}
	before := c.synced(pods[0].UID)
	if err := c.workers.Upsert(pods[0]); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if got := c.synced(pods[0].UID); got != before+1 {
		t.Fatalf("%d syncs after an upsert of an idle pod, want 1", got-before)
	}
	if err := c.workers.Delete(pods[1], nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, ok := c.workers.Status(pods[1].UID); !ok {
			break
		}
		if i > 60 {
			t.Fatal("deleted idle pod not removed after 60 simulated seconds")
		}
		c.step(time.Second)
	}
}

// A pod with a claim keeps kubelet's periodic resync when a volume manager
// is wired: each resync hands it to the volume manager again, where a
// claim's new size is found (an online expansion); a pod without one is
// not resynced.
func TestClaimPodKeepsResync(t *testing.T) {
	vols := &fakeVolumes{mounted: map[types.UID]bool{}}
	dir := t.TempDir()
	c := newClockedWith(t, func(*testingclock.FakeClock) []podsync.Option {
		return []podsync.Option{podsync.WithVolumes(claimVolumes{dir})}
	}, podworker.WithVolumeManager(vols))
	claimed := testPod("claimed")
	claimed.Spec.Volumes = append(claimed.Spec.Volumes, corev1.Volume{Name: "data",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
	plain := testPod("plain")
	for _, p := range []*corev1.Pod{claimed, plain} {
		if err := c.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
	}
	c.runUntil("running", claimed.UID, running)
	c.runUntil("running", plain.UID, running)
	c.step(time.Minute)
	adds := func(name string) int {
		calls, _ := vols.snapshot()
		n := 0
		for _, call := range calls {
			if call == "add "+name {
				n++
			}
		}
		return n
	}
	c0, p0 := adds("claimed"), adds("plain")
	c.step(3 * podworker.DefaultResyncPeriod)
	if got := adds("claimed") - c0; got != 3 {
		t.Errorf("the pod with a claim was handed to the volume manager %d times in three resync periods, want 3", got)
	}
	if got := adds("plain") - p0; got != 0 {
		t.Errorf("the pod without a claim was handed to the volume manager %d times in three resync periods, want 0", got)
	}
}

// claimVolumes provides the "data" claim's volume as a directory, and no
// other volume (the test pods have none else).
type claimVolumes struct{ dir string }

func (v claimVolumes) Volumes(_ context.Context, pod *corev1.Pod) (mounts.VolumeMap, error) {
	m := mounts.VolumeMap{}
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil {
			m[vol.Name] = mounts.Volume{HostPath: v.dir}
		}
	}
	return m, nil
}
