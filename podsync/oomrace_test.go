package podsync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// A container its memory limit killed is first reported exited with
// reason "Error", as containerd does until it has handled the OOM event,
// and "OOMKilled" after. The StatusCache asks about an exited instance
// again while its exit settles (podsync.ExitSettleTime), so the late
// reason is seen, Relist reports the pod changed, and an exit that stays
// "Error" is no longer asked about once it settled.
func TestLateOOMKilledReason(t *testing.T) {
	for _, tc := range []struct {
		name   string
		relist bool
	}{{"Status", false}, {"Relist", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, false, nil)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: "shop", UID: "uid-hog"},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "hog", Image: "busybox:1.35"}}},
			}
			h.converge(pod, 3)
			id := runningID(t, h, pod, "hog")

			var oomRecorded atomic.Bool
			h.fake.InterceptAnswer(func(_ context.Context, method string, _, resp proto.Message, err error) (proto.Message, error) {
				r, ok := resp.(*runtimeapi.ContainerStatusResponse)
				if method != "ContainerStatus" || !ok || oomRecorded.Load() || r.GetStatus().GetReason() != "OOMKilled" {
					return resp, err
				}
				r = proto.Clone(r).(*runtimeapi.ContainerStatusResponse)
				r.Status.Reason = "Error"
				return r, err
			})
			if err := h.fake.ExitContainer(id, fake.Exit{Code: 137, Reason: "OOMKilled"}); err != nil {
				t.Fatal(err)
			}
			read := func() (string, bool) {
				t.Helper()
				ctx := context.Background()
				if !tc.relist {
					st, err := h.syncer.Status(ctx, pod)
					if err != nil {
						t.Fatal(err)
					}
					return st.FindContainerStatusByName("hog").Reason, true
				}
				statuses, changed, err := h.syncer.StatusCache().Relist(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return statuses[pod.UID].FindContainerStatusByName("hog").Reason, len(changed) == 1 && changed[0] == pod.UID
			}
			if reason, changed := read(); reason != "Error" || !changed {
				t.Fatalf("first read after the exit: reason %q, pod changed %v; want Error, true", reason, changed)
			}
			if reason, changed := read(); reason != "Error" || (tc.relist && changed) {
				t.Fatalf("unchanged answer: reason %q, pod changed %v; want Error, false", reason, changed)
			}
			oomRecorded.Store(true)
			h.clk.Step(podsync.ExitSettleTime - time.Second)
			if reason, changed := read(); reason != "OOMKilled" || !changed {
				t.Fatalf("after the runtime recorded the OOM: reason %q, pod changed %v; want OOMKilled, true", reason, changed)
			}
			// OOMKilled is final: no more status calls for it.
			h.fake.ResetCalls()
			if reason, _ := read(); reason != "OOMKilled" || h.fake.CallCount("ContainerStatus") != 0 {
				t.Fatalf("reason %q, %d ContainerStatus calls; want OOMKilled and none", reason, h.fake.CallCount("ContainerStatus"))
			}
		})
	}
}

// An exit that stays "Error" is asked about until ExitSettleTime has
// passed since the cache first saw it, then never again.
func TestExitSettles(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: "shop", UID: "uid-crash"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "crash", Image: "busybox:1.35"}}},
	}
	h.converge(pod, 3)
	if err := h.fake.ExitContainer(runningID(t, h, pod, "crash"), fake.Exit{Code: 1}); err != nil {
		t.Fatal(err)
	}
	status := func() {
		t.Helper()
		if _, err := h.syncer.Status(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	status() // first seen exited
	h.fake.ResetCalls()
	h.clk.Step(podsync.ExitSettleTime - time.Millisecond)
	status()
	if n := h.fake.CallCount("ContainerStatus"); n != 1 {
		t.Fatalf("%d ContainerStatus calls while the exit settles, want 1", n)
	}
	h.fake.ResetCalls()
	h.clk.Step(time.Millisecond)
	status()
	status()
	if n := h.fake.CallCount("ContainerStatus"); n != 0 {
		t.Fatalf("%d ContainerStatus calls once the exit settled, want 0", n)
	}
}
