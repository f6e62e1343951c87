package podworker_test

import (
	"errors"
	"testing"

	"github.com/podstart/podstart/validation"
)

// TestUpsertRefusesInvalidPod: a pod the API server would refuse gets no
// loop and no sync; a running pod sent an invalid spec keeps the one it
// had.
func TestUpsertRefusesInvalidPod(t *testing.T) {
	e := newEnv(t, nil)
	bad := testPod("bad")
	bad.Spec.Containers[0].Name = "../../x"
	if err := e.workers.Upsert(bad); !errors.Is(err, validation.ErrInvalidPod) {
		t.Fatalf("Upsert(invalid) = %v, want ErrInvalidPod", err)
	}
	if pods := e.workers.Pods(); len(pods) != 0 {
		t.Fatalf("the invalid pod got a worker: %v", pods)
	}

	good := testPod("good")
	if err := e.workers.Upsert(good); err != nil {
		t.Fatal(err)
	}
	update := good.DeepCopy()
	update.Spec.Containers[0].Image = ""
	if err := e.workers.Upsert(update); !errors.Is(err, validation.ErrInvalidPod) {
		t.Fatalf("Upsert(invalid update) = %v, want ErrInvalidPod", err)
	}
	st, ok := e.workers.Status(good.UID)
	if !ok || st.Pod == nil || st.Pod.Spec.Containers[0].Image != good.Spec.Containers[0].Image {
		t.Fatalf("the running pod's spec changed: %+v", st.Pod)
	}
	if n := e.fake.CallCount("RunPodSandbox"); n > 1 {
		t.Fatalf("%d sandboxes for one valid pod", n)
	}
}
