package images

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// gate holds every PullImage until the test lets it go, and tells the test
// which image entered.
type gate struct {
	entered chan string
	release chan struct{}
	active  atomic.Int32
	peak    atomic.Int32
}

func newGate(rt *fake.Runtime) *gate {
	g := &gate{entered: make(chan string, 256), release: make(chan struct{})}
	rt.Intercept(func(ctx context.Context, method string, req proto.Message) error {
		if method != "PullImage" {
			return nil
		}
		n := g.active.Add(1)
		defer g.active.Add(-1)
		for {
			p := g.peak.Load()
			if n <= p || g.peak.CompareAndSwap(p, n) {
				break
			}
		}
		g.entered <- req.(*runtimeapi.PullImageRequest).Image.Image
		select {
		case <-g.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return g
}

func ensure(m *Manager, image string, uid string) (string, error) {
	pod, c := testPod(image, corev1.PullAlways)
	pod.UID = typesUID(uid)
	ref, _, err := m.EnsureImageExists(context.Background(), pod, c, nil, nil)
	return ref, err
}

func TestParallelLimit(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	g := newGate(rt)
	m := NewManager(rt, WithParallelPulls(5))
	defer m.Close()
	var wg sync.WaitGroup
	for i := 0; i < 7; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ensure(m, fmt.Sprintf("image%d", i), "p"); err != nil {
				t.Error(err)
			}
		}()
	}
	for i := 0; i < 5; i++ {
		<-g.entered
	}
	waitFor(func() bool { return m.slots.waiting() == 2 })
	if n := g.active.Load(); n != 5 {
		t.Fatalf("%d pulls at once, want 5", n)
	}
	g.release <- struct{}{}
	g.release <- struct{}{}
	<-g.entered
	<-g.entered
	for i := 0; i < 5; i++ {
		g.release <- struct{}{}
	}
	wg.Wait()
	if rt.CallCount("PullImage") != 7 || g.peak.Load() != 5 {
		t.Fatalf("%d pulls, peak %d", rt.CallCount("PullImage"), g.peak.Load())
	}
}

func TestSerialFIFO(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	g := newGate(rt)
	m := NewManager(rt) // serial is the default
	defer m.Close()
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ensure(m, fmt.Sprintf("image%d", i), "p")
		}()
		// Arrival order is the order the callers queue in.
		if i == 0 {
			<-g.entered
		} else {
			waitFor(func() bool { return m.slots.waiting() == i })
		}
	}
	order := []string{"image0:latest"}
	for i := 1; i < 5; i++ {
		g.release <- struct{}{}
		order = append(order, <-g.entered)
	}
	g.release <- struct{}{}
	wg.Wait()
	for i, img := range order {
		if img != fmt.Sprintf("image%d:latest", i) {
			t.Fatalf("pull order %v", order)
		}
	}
	if g.peak.Load() != 1 {
		t.Fatalf("serial puller ran %d at once", g.peak.Load())
	}
}

func TestWaitingForSlotHonoursContext(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	g := newGate(rt)
	m := NewManager(rt)
	defer m.Close()
	done := make(chan struct{})
	go func() { ensure(m, "first", "p"); close(done) }()
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	pod, c := testPod("second", corev1.PullAlways)
	errc := make(chan error, 1)
	go func() {
		_, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil)
		errc <- err
	}()
	waitFor(func() bool { return m.slots.waiting() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, ErrImagePull) || !errors.Is(err, runtime.ErrCanceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	// The abandoned pull leaves the queue as its flight is cancelled.
	waitFor(func() bool { return m.slots.waiting() == 0 })
	g.release <- struct{}{}
	<-done
	m.Close() // waits for every flight
	if n := rt.CallCount("PullImage"); n != 1 {
		t.Fatalf("the cancelled waiter pulled: %d pulls", n)
	}
}

func TestCloseStopsPulls(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	g := newGate(rt)
	m := NewManager(rt)
	errc := make(chan error, 1)
	go func() { _, err := ensure(m, "busybox", "p"); errc <- err }()
	<-g.entered
	m.Close()
	if err := <-errc; !errors.Is(err, ErrImagePull) {
		t.Fatalf("in-flight pull after Close: %v", err)
	}
	if _, err := ensure(m, "busybox", "q"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestSharedPull: 100 concurrent callers for one image make one runtime
// pull (kubelet makes 100) and all get the same ref.
func TestSharedPull(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	g := newGate(rt)
	m := NewManager(rt, WithParallelPulls(1))
	defer m.Close()
	var wg sync.WaitGroup
	refs := make([]string, 100)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ref, err := ensure(m, "busybox", fmt.Sprintf("pod-%d", i))
			if err != nil {
				t.Error(err)
			}
			refs[i] = ref
		}()
	}
	<-g.entered
	waitFor(func() bool { return m.waiters("busybox:latest") == 100 })
	// Followers took no slot: another image can still queue behind one.
	if m.slots.waiting() != 0 {
		t.Fatalf("%d waiting for a slot", m.slots.waiting())
	}
	g.release <- struct{}{}
	wg.Wait()
	if n := rt.CallCount("PullImage"); n != 1 {
		t.Fatalf("%d runtime pulls, want 1", n)
	}
	for _, r := range refs {
		if r != refs[0] || r == "" {
			t.Fatalf("refs differ: %q %q", r, refs[0])
		}
	}
}

// TestSharedPullDifferentCredentials: a caller with other credentials
// never rides on another caller's pull.
func TestSharedPullDifferentCredentials(t *testing.T) {
	t.Parallel()
	const reg = "reg.example.com"
	rt := fake.New(fake.WithRegistryAuth(reg, "u", "right"))
	g := newGate(rt)
	m := NewManager(rt, WithParallelPulls(0))
	defer m.Close()
	image := reg + "/app:1"
	run := func(secret string) chan error {
		errc := make(chan error, 1)
		go func() {
			pod, c := testPod(image, corev1.PullAlways)
			_, _, err := m.EnsureImageExists(context.Background(), pod, c, []corev1.Secret{secretFor("s", reg, "u", secret)}, nil)
			errc <- err
		}()
		return errc
	}
	good := run("right")
	<-g.entered
	bad := run("wrong")
	<-g.entered // a second runtime pull, not a join
	good2 := run("right")
	waitFor(func() bool { return m.waiters(image) == 3 })
	g.release <- struct{}{}
	g.release <- struct{}{}
	errs := []error{<-good, <-bad, <-good2}
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], runtime.ErrUnauthorized) {
		t.Fatalf("results %v", errs)
	}
	if n := rt.CallCount("PullImage"); n != 2 {
		t.Fatalf("%d runtime pulls, want 2", n)
	}
}

func TestProgressAndStall(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	rt := fake.New(fake.WithClock(clk), fake.WithPullProgress(4, time.Second), fake.WithImageSize(400))
	var mu sync.Mutex
	var seen []int64
	m := NewManager(rt, WithClock(clk), WithStallTimeout(10*time.Second), WithProgress(func(image string, p runtime.PullProgress) {
		mu.Lock()
		seen = append(seen, p.BytesDone)
		mu.Unlock()
	}))
	defer m.Close()
	errc := make(chan error, 1)
	go func() { _, err := ensure(m, "busybox", "p"); errc <- err }()
	for i := 0; i < 3; i++ {
		// Two timers wait: the fake's progress interval and the stall watch.
		waitFor(func() bool { return clk.Waiters() == 2 })
		clk.Step(time.Second)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[100 200 300 400]" {
		t.Fatalf("progress %v", seen)
	}

	// A pull that stops reporting is cancelled after the stall timeout.
	rt.Hang("PullImage")
	go func() { _, err := ensure(m, "nginx", "p"); errc <- err }()
	waitFor(func() bool { return clk.Waiters() == 1 })
	clk.Step(10 * time.Second)
	err := <-errc
	if !errors.Is(err, ErrImagePull) || !errors.Is(err, ErrPullStalled) {
		t.Fatalf("stalled pull: %v", err)
	}
}

// A pull is shared only by requests the runtime cannot tell apart: pods of
// one namespace with equal sandbox configs share it; a pod of another
// namespace gets a pull of its own, sent with its own sandbox config.
func TestSharedPullPerRequest(t *testing.T) {
	t.Parallel()
	rt := fake.New()
	g := newGate(rt)
	m := NewManager(rt, WithParallelPulls(0))
	defer m.Close()
	sandbox := func(ns string) *runtimeapi.PodSandboxConfig {
		return &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: ns, Uid: "u"}, Labels: map[string]string{"app": "web"}}
	}
	run := func(uid, ns string) chan error {
		errc := make(chan error, 1)
		go func() {
			pod, c := testPod("busybox", corev1.PullAlways)
			pod.UID = typesUID(uid)
			_, _, err := m.EnsureImageExists(context.Background(), pod, c, nil, sandbox(ns))
			errc <- err
		}()
		return errc
	}
	a := run("a", "team-a")
	<-g.entered
	b := run("b", "team-a") // the same request: joins
	waitFor(func() bool { return m.waiters("busybox:latest") == 2 })
	c := run("c", "team-b") // another namespace: a pull of its own
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("team-b's pull joined team-a's")
	}
	waitFor(func() bool { return m.waiters("busybox:latest") == 3 })
	g.release <- struct{}{}
	g.release <- struct{}{}
	for _, errc := range []chan error{a, b, c} {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	var namespaces []string
	for _, call := range rt.Calls() {
		if req, ok := call.Request.(*runtimeapi.PullImageRequest); ok {
			namespaces = append(namespaces, req.SandboxConfig.GetMetadata().GetNamespace())
		}
	}
	sort.Strings(namespaces)
	if !reflect.DeepEqual(namespaces, []string{"team-a", "team-b"}) {
		t.Fatalf("pulls sent for namespaces %v", namespaces)
	}
}
