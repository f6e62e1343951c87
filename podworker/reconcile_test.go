package podworker_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// The echo of the node's own status write is kubelet's RECONCILE: the
// held pod takes the new status and nothing is synced, however many
// echoes come. A change of labels (kubelet's UPDATE) syncs, as does an
// Upsert of the same pod (a caller's resync).
func TestReconcileStatusEchoDoesNotSync(t *testing.T) {
	c := newClocked(t)
	pod := testPod("echo")
	if err := c.workers.Reconcile(pod); err != nil {
		t.Fatal(err)
	}
	c.runUntil("running", pod.UID, running)
	c.step(time.Minute)
	before := c.synced(pod.UID)
	// The API server's phase turns Running: one sync (the status reads it).
	st, _ := c.workers.Status(pod.UID)
	first := pod.DeepCopy()
	first.Status = st.APIStatus
	if err := c.workers.Reconcile(first); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if got := c.synced(pod.UID) - before; got != 1 {
		t.Fatalf("%d syncs after the phase the API server holds changed, want 1", got)
	}
	before = c.synced(pod.UID)
	calls := len(c.rt.Calls())
	for i := 0; i < 5; i++ {
		echo := pod.DeepCopy()
		st, _ := c.workers.Status(pod.UID)
		echo.Status = st.APIStatus
		echo.Status.Message = string(rune('a' + i)) // each echo differs
		echo.Annotations = map[string]string{"kubernetes.io/config.seen": "now"}
		if err := c.workers.Reconcile(echo); err != nil {
			t.Fatal(err)
		}
		c.step(time.Second)
	}
	if got := c.synced(pod.UID) - before; got != 0 {
		t.Fatalf("%d syncs after five status echoes, want 0", got)
	}
	if got := podCalls(c.rt.Calls()[calls:]); len(got) != 0 {
		t.Errorf("CRI calls for the pod after five status echoes: %v, want none", got)
	}
	if st, _ := c.workers.Status(pod.UID); st.Pod.Status.Message != "e" {
		t.Errorf("held pod's status message %q, want the last echo's", st.Pod.Status.Message)
	}

	relabelled := pod.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "gold"}
	if err := c.workers.Reconcile(relabelled); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if got := c.synced(pod.UID) - before; got != 1 {
		t.Fatalf("%d syncs after a label change, want 1", got)
	}
	if err := c.workers.Upsert(relabelled); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if got := c.synced(pod.UID) - before; got != 2 {
		t.Fatalf("%d syncs after an Upsert, want 2 (Upsert always syncs)", got)
	}
}

// A readiness gate set True by another controller is a status-only
// change that kubelet syncs (NeedToReconcilePodReadiness): the pod's
// Ready condition follows it.
func TestReconcileReadinessGate(t *testing.T) {
	c := newClocked(t)
	pod := testPod("gated")
	pod.Spec.InitContainers = nil // a sidecar would make every echo sync, as in kubelet (needsReadinessReconcile)
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	pod.Status.Phase = corev1.PodRunning // as the echoes will say: no phase change
	if err := c.workers.Reconcile(pod); err != nil {
		t.Fatal(err)
	}
	c.runUntil("running", pod.UID, running)
	c.step(time.Minute)
	st, _ := c.workers.Status(pod.UID)
	if ready(st.APIStatus) {
		t.Fatal("pod Ready before its readiness gate")
	}
	// The echo of that status: Ready False, as it should be: no sync.
	before := c.synced(pod.UID)
	echo := pod.DeepCopy()
	echo.Status = st.APIStatus
	if err := c.workers.Reconcile(echo); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if got := c.synced(pod.UID) - before; got != 0 {
		t.Fatalf("%d syncs after the echo of a gated pod's status, want 0", got)
	}
	gate := echo.DeepCopy()
	gate.Status.Conditions = append(gate.Status.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue})
	if err := c.workers.Reconcile(gate); err != nil {
		t.Fatal(err)
	}
	c.step(time.Second)
	if got := c.synced(pod.UID) - before; got != 1 {
		t.Fatalf("%d syncs after the readiness gate turned True, want 1", got)
	}
	if st, _ := c.workers.Status(pod.UID); !ready(st.APIStatus) {
		t.Errorf("pod not Ready after its gate turned True: %v", st.APIStatus.Conditions)
	}
}

func ready(s corev1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podCalls are the calls about one pod: all but the node-wide relists
// (unfiltered ListPodSandbox and ListContainers), which the clock's steps
// make whatever the pods do (every second until the runtime's events
// stream and the node is quiet).
func podCalls(calls []fake.Call) []string {
	var out []string
	for _, c := range calls {
		switch r := c.Request.(type) {
		case *runtimeapi.ListPodSandboxRequest:
			if len(r.GetFilter().GetLabelSelector()) == 0 {
				continue
			}
		case *runtimeapi.ListContainersRequest:
			if len(r.GetFilter().GetLabelSelector()) == 0 {
				continue
			}
		}
		out = append(out, c.Method)
	}
	return out
}
