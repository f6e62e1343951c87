package podsync_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// A result says when the pod's crash-loop back-off ends, as kubelet's
// back-off errors do; an image pull's back-off gives no such time (kubelet
// v1.37.2 retries a failed pull at the pod worker's error period), though
// the pull's error still says when it ends.
func TestResultNextSync(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := appPod("next")
	h.converge(pod, 3)
	if _, ok := h.sync(pod).NextSync(); ok {
		t.Fatal("a running pod has a next sync time")
	}
	cs, _ := instances(t, h.fake, pod)
	exitAt := h.clk.Now()
	if err := h.fake.ExitContainer(cs[0].Id, fake.Exit{Code: 1}); err != nil {
		t.Fatal(err)
	}
	h.sync(pod) // restarts it: the first exit has no back-off yet
	cs, _ = instances(t, h.fake, pod)
	if err := h.fake.ExitContainer(cs[0].Id, fake.Exit{Code: 1}); err != nil {
		t.Fatal(err)
	}
	r := h.sync(pod)
	until, ok := r.NextSync()
	// The fake keeps times unique by adding nanoseconds.
	if d := until.Sub(exitAt.Add(10 * time.Second)); !ok || d < 0 || d > time.Millisecond {
		t.Fatalf("NextSync %v %v, want the exit time plus 10 s (%v); result %v", until, ok, exitAt.Add(10*time.Second), r.Error())
	}
	if !errors.Is(r.Error(), podsync.ErrCrashLoopBackOff) {
		t.Fatalf("error %v does not match ErrCrashLoopBackOff", r.Error())
	}

	// An image pull that fails starts a 10 s back-off; neither the
	// failure nor the syncs in the back-off give a next sync time.
	h2 := newHarness(t, false, nil)
	h2.fake.FailNext("PullImage", 1, status.Error(codes.NotFound, "not found"))
	pod2 := appPod("pull")
	r = h2.sync(pod2)
	var pullErr *images.Error
	if _, ok := r.NextSync(); ok || !errors.Is(r.Error(), images.ErrImagePull) || !errors.As(r.Error(), &pullErr) {
		t.Fatalf("after a failed pull: a next sync time (%v) or error %v", ok, r.Error())
	}
	if want := h2.clk.Now().Add(10 * time.Second); !pullErr.Until.Equal(want) {
		t.Fatalf("the pull's error says its back-off ends %v, want %v", pullErr.Until, want)
	}
	h2.clk.Step(time.Second)
	r = h2.sync(pod2)
	if _, ok := r.NextSync(); ok || !errors.Is(r.Error(), images.ErrImagePullBackOff) {
		t.Fatalf("in back-off: a next sync time (%v) or error %v", ok, r.Error())
	}
}
