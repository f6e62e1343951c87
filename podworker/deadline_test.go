package podworker_test

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podworker"
)

// An activeDeadlineSeconds set on a running, steady pod is enforced as
// kubelet's active deadline handler does: once the pod has been active
// that long (from its start time) it is killed and its final status is
// Failed, DeadlineExceeded, "Pod was active on the node longer than the
// specified deadline"; a deadline still ahead wakes the pod when it
// passes, though a steady pod is not resynced. Found by the conformance
// spec "Pods should allow activeDeadlineSeconds to be updated
// [NodeConformance] [Conformance]".
func TestActiveDeadlineLoweredOnRunningPod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline int64         // seconds from the pod's start
		before   time.Duration // stepped after the update, the pod still running
	}{
		{"already past", 30, 0},
		{"ahead", 200, 100 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClocked(t)
			var mu sync.Mutex
			var final *podworker.PodState
			c.workers.OnSync(func(_ types.UID, st podworker.PodState) {
				if st.Removed {
					mu.Lock()
					final = &st
					mu.Unlock()
				}
			})
			removed := func() *podworker.PodState {
				mu.Lock()
				defer mu.Unlock()
				return final
			}
			pod := testPod("deadline")
			if err := c.workers.Upsert(pod); err != nil {
				t.Fatal(err)
			}
			c.runUntil("running", pod.UID, running)
			c.step(time.Minute)
			st, _ := c.workers.Status(pod.UID)
			if st.APIStatus.StartTime == nil {
				t.Fatal("no start time")
			}
			start := st.APIStatus.StartTime.Time

			upd := pod.DeepCopy()
			upd.Spec.ActiveDeadlineSeconds = &tc.deadline
			if err := c.workers.Upsert(upd); err != nil {
				t.Fatal(err)
			}
			c.step(time.Second) // the update's sync
			if tc.before > 0 {
				c.step(tc.before)
				if removed() != nil {
					t.Fatalf("pod killed %v after its start, before its deadline", c.clk.Since(start))
				}
			}
			for i := 0; removed() == nil; i++ {
				if i > 200 {
					t.Fatalf("pod not killed %v after its start, deadline %ds", c.clk.Since(start), tc.deadline)
				}
				c.step(time.Second)
			}
			if got := c.clk.Since(start); got > time.Duration(tc.deadline)*time.Second+2*time.Second && tc.before > 0 {
				t.Errorf("killed %v after its start, deadline %ds", got, tc.deadline)
			}
			s := removed().APIStatus
			if s.Phase != corev1.PodFailed || s.Reason != apistatus.DeadlineExceeded || s.Message != "Pod was active on the node longer than the specified deadline" {
				t.Fatalf("final status %s %q %q", s.Phase, s.Reason, s.Message)
			}
			if n := c.rt.CallCount("StopPodSandbox"); n == 0 {
				t.Error("sandbox not stopped")
			}
		})
	}
}
