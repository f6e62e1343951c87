package images

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime/fake"
)

// slowCancelGate blocks every PullImage until release is closed, ignoring
// cancellation meanwhile (a runtime slow to notice), then fails a pull
// whose context was cancelled.
func slowCancelGate(rt *fake.Runtime) (release chan struct{}) {
	release = make(chan struct{})
	rt.Intercept(func(ctx context.Context, method string, _ proto.Message) error {
		if method != "PullImage" {
			return nil
		}
		<-release
		return ctx.Err()
	})
	return release
}

// TestCancelledCallerDoesNotHurtJoiner: a caller that cancels leaves a
// dying pull; a live caller arriving then starts its own pull, succeeds,
// and finds no back-off, whether it is the same pod or another.
func TestCancelledCallerDoesNotHurtJoiner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		liveUID  string
		parallel bool
	}{
		{name: "other pod, serial", liveUID: "live"},
		{name: "same pod, serial", liveUID: "dying"},
		{name: "other pod, parallel", liveUID: "live", parallel: true},
		{name: "same pod, parallel", liveUID: "dying", parallel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for trial := 0; trial < 50; trial++ {
				rt := fake.New()
				release := slowCancelGate(rt)
				opts := []Option{}
				if tt.parallel {
					opts = append(opts, WithParallelPulls(0))
				}
				m := NewManager(rt, opts...)
				ctx, cancel := context.WithCancel(context.Background())
				dying := make(chan error, 1)
				go func() {
					pod, c := testPod("busybox", corev1.PullAlways)
					pod.UID = "dying"
					_, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil)
					dying <- err
				}()
				waitFor(func() bool { return m.waiters("busybox:latest") == 1 })
				cancel()
				if err := <-dying; !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled caller: %v", err)
				}
				live := make(chan error, 1)
				go func() { _, err := ensure(m, "busybox", tt.liveUID); live <- err }()
				// Joined (or already answered, from a back-off).
				waitFor(func() bool { return m.waiters("busybox:latest") == 1 || len(live) == 1 })
				close(release)
				if err := <-live; err != nil {
					t.Fatalf("trial %d: live caller failed: %v", trial, err)
				}
				if st, ok := m.BackOff(typesUID(tt.liveUID), "busybox"); ok {
					t.Fatalf("live caller's pod in back-off: %+v", st)
				}
				m.Close()
			}
		})
	}
}

// TestThousandCallersWithCancellations: 1,000 concurrent callers over 5
// images, every third one cancelling at once: every live caller succeeds
// and none of their pods is in back-off.
func TestThousandCallersWithCancellations(t *testing.T) {
	t.Parallel()
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			rt := fake.New()
			release := slowCancelGate(rt)
			opts := []Option{}
			if parallel {
				opts = append(opts, WithParallelPulls(2))
			}
			m := NewManager(rt, opts...)
			defer m.Close()
			var wg sync.WaitGroup
			liveErrs := make([]error, 1000)
			for i := 0; i < 1000; i++ {
				image := fmt.Sprintf("busybox:%d", i%5)
				ctx, cancel := context.WithCancel(context.Background())
				if i%3 == 0 {
					cancel()
					wg.Add(1)
					go func() {
						defer wg.Done()
						pod, c := testPod(image, corev1.PullAlways)
						pod.UID = typesUID(fmt.Sprintf("c-%d", i))
						_, _, err := m.EnsureImageExists(ctx, pod, c, nil, nil)
						if err != nil && !errors.Is(err, context.Canceled) {
							t.Errorf("cancelled caller %d: %v", i, err)
						}
					}()
					continue
				}
				defer cancel()
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, liveErrs[i] = ensure(m, image, fmt.Sprintf("l-%d", i))
				}()
				if i == 500 {
					close(release)
				}
			}
			wg.Wait()
			for i, err := range liveErrs {
				if err != nil {
					t.Errorf("live caller %d failed: %v", i, err)
				}
				if i%3 != 0 {
					if st, ok := m.BackOff(typesUID(fmt.Sprintf("l-%d", i)), fmt.Sprintf("busybox:%d", i%5)); ok {
						t.Errorf("live caller %d in back-off: %+v", i, st)
					}
				}
			}
		})
	}
}

// TestPullBackOffCollected: the back-off and last error of pods whose
// pulls failed long ago are dropped as later pulls fail, not only after a
// success.
func TestPullBackOffCollected(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	rt := fake.New(fake.WithRegistryImages())
	m := NewManager(rt, WithClock(clk))
	defer m.Close()
	for i := 0; i < 100; i++ {
		if _, err := ensure(m, "missing", fmt.Sprint(i)); err == nil {
			t.Fatal("pull of a missing image succeeded")
		}
	}
	clk.Step(2*DefaultBackOffMax + time.Second)
	ensure(m, "missing", "fresh")
	for i := 0; i < 100; i++ {
		if st, ok := m.BackOff(typesUID(fmt.Sprint(i)), "missing"); ok {
			t.Fatalf("pod %d still has a back-off: %+v", i, st)
		}
	}
	if n := m.prevErrs(); n != 1 {
		t.Fatalf("%d last errors kept, want 1", n)
	}
}
