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

// A result says when the pod's next back-off ends, for crash loops and
// for image pulls, as kubelet's back-off errors do.
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

	// An image pull that fails starts a 10 s back-off; while in it the
	// result still says when it ends.
	h2 := newHarness(t, false, nil)
	h2.fake.FailNext("PullImage", 1, status.Error(codes.NotFound, "not found"))
	pod2 := appPod("pull")
	r = h2.sync(pod2)
	until, ok = r.NextSync()
	if !ok || !until.Equal(h2.clk.Now().Add(10*time.Second)) || !errors.Is(r.Error(), images.ErrImagePull) {
		t.Fatalf("after a failed pull: NextSync %v %v, error %v", until, ok, r.Error())
	}
	h2.clk.Step(time.Second)
	r = h2.sync(pod2)
	if got, ok := r.NextSync(); !ok || !got.Equal(until) || !errors.Is(r.Error(), images.ErrImagePullBackOff) {
		t.Fatalf("in back-off: NextSync %v %v (want %v), error %v", got, ok, until, r.Error())
	}
}
