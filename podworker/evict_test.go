package podworker_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podworker"
)

// An evicted pod is killed with the eviction's grace period, its final
// status is the eviction's, everything of it leaves the node, and the
// pod given again in its terminal phase (the API object stays) is not run.
func TestEvict(t *testing.T) {
	e := newEnv(t, nil)
	pod := testPod("hog")
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod running", []types.UID{pod.UID}, running)
	if err := e.workers.Evict(pod, 1, func(s *corev1.PodStatus) {
		s.Phase, s.Reason, s.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("pod removed", []types.UID{pod.UID}, removed)
	e.mu.Lock()
	final := e.states[pod.UID].APIStatus
	e.mu.Unlock()
	if final.Phase != corev1.PodFailed || final.Reason != "Evicted" || final.Message != "The node was low on resource: memory." {
		t.Errorf("final status %s %q %q, want the eviction's", final.Phase, final.Reason, final.Message)
	}
	for _, c := range e.fake.Calls() {
		// 1 s, raised to kubelet's minimum of 2 s; the pod's own is 5 s.
		if r, ok := c.Request.(interface{ GetTimeout() int64 }); ok && c.Method == "StopContainer" && r.GetTimeout() != 2 {
			t.Errorf("%s with timeout %d, want the eviction's 1 s raised to kubelet's minimum, 2", c.Method, r.GetTimeout())
		}
	}
	e.assertNodeEmpty()

	// The informer hands the pod over again, Failed as the status manager wrote it.
	again := pod.DeepCopy()
	again.Status = final
	sandboxes := e.fake.CallCount("RunPodSandbox")
	if err := e.workers.Upsert(again); err != nil {
		t.Fatal(err)
	}
	if _, held := e.workers.Status(pod.UID); held {
		t.Error("the evicted pod, Failed, got a loop again")
	}
	if n := e.fake.CallCount("RunPodSandbox"); n != sandboxes {
		t.Errorf("the evicted pod was started again (%d sandboxes)", n-sandboxes)
	}
	if err := e.workers.Evict(pod, 1, nil); !errors.Is(err, podworker.ErrUnknownPod) {
		t.Errorf("Evict of a pod no longer held: %v, want ErrUnknownPod", err)
	}
}
