package podworker_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

// Kubelet v1.37.2's image pull errors carry no back-off expiry: a pod
// whose pull failed is retried at the pod worker's error period (10 s),
// not when the pull's back-off ends, so while the back-off doubles the
// pod's waiting reason alternates between ErrImagePull and
// ImagePullBackOff, as a watch on kubelet's pods shows. Retried at the
// back-off's end instead, every retry would pull again and the pod would
// show ErrImagePull alone. (Failed before the fix: the first retry came at
// the pull back-off's end, and a sync in the back-off never did.)
func TestImagePullRetriedAtErrorPeriod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	f := fake.New(fake.WithClock(clk))
	f.FailNext("PullImage", 100, status.Error(codes.NotFound, "not found"))
	w, states := retryWorkers(t, clk, f, func(d time.Duration) time.Duration { return d })
	pod := testPod("pull")
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = pod.Spec.Containers[:1]
	if err := w.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	next := func() podworker.PodState {
		t.Helper()
		select {
		case st := <-states:
			return st
		case <-time.After(20 * time.Second):
			t.Fatalf("no sync for 20 s; fake clock at %v", clk.Now())
		}
		return podworker.PodState{}
	}
	// Each retry is 10 s after its sync; the pull back-off is 10 s, then
	// 20 s from the second failure: pull, pull, back-off, pull, back-off.
	for i, want := range []error{images.ErrImagePull, images.ErrImagePull, images.ErrImagePullBackOff, images.ErrImagePull, images.ErrImagePullBackOff} {
		st := next()
		if !errors.Is(st.Result.Error(), want) {
			t.Fatalf("sync %d: %v, want %v", i+1, st.Result.Error(), want)
		}
		if retry := st.Synced.Add(podworker.DefaultErrorRetry); !st.NextSync.Equal(retry) {
			t.Fatalf("sync %d (%v) retried at %v, want the error period's end %v", i+1, want, st.NextSync, retry)
		}
		for !clk.HasWaiters() { // the retry timer is armed after the state is reported
			time.Sleep(time.Millisecond) // polling for the armed timer, not synchronisation
		}
		clk.SetTime(st.NextSync)
	}
}
