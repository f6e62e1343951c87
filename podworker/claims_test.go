package podworker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/podworker"
)

// fakeClaims records UnprepareResources calls into the volume manager's
// log (so their order shows) with the number of running containers the
// pod still had.
type fakeClaims struct {
	vols    *fakeVolumes
	e       *env
	mu      sync.Mutex
	failing bool
}

func (f *fakeClaims) UnprepareResources(ctx context.Context, pod *corev1.Pod) error {
	cs, err := f.e.fake.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)}})
	if err != nil {
		return err
	}
	running := 0
	for _, c := range cs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	f.vols.record(fmt.Sprintf("unprepare %s containers=%d running=%d", pod.Name, len(cs), running))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return errors.New("unprepare dynamic resources: NodeUnprepareResources: rpc error: code = Unavailable")
	}
	return nil
}

// A killed pod's claims are unprepared once its containers are stopped,
// before its volumes are unmounted; while that fails the pod stays (its
// volumes mounted), and it goes once it succeeds.
func TestClaimsUnpreparedAfterKill(t *testing.T) {
	vols := &fakeVolumes{mounted: map[types.UID]bool{}}
	claims := &fakeClaims{vols: vols, failing: true}
	e := newEnv(t, nil, podworker.WithVolumeManager(vols), podworker.WithResourceClaims(claims))
	claims.e = e
	pod := testPod("gpu")
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("running", []types.UID{pod.UID}, running)
	if err := e.workers.Delete(pod, nil); err != nil {
		t.Fatal(err)
	}
	e.waitFor("failed unprepare", []types.UID{pod.UID}, func(st podworker.PodState) bool { return st.Err != nil })
	calls, _ := vols.snapshot()
	if last := calls[len(calls)-1]; !isUnprepare(last) {
		t.Fatalf("calls %q: want the unprepare last, with no container running", calls)
	}
	vols.mu.Lock()
	stillMounted := vols.mounted[pod.UID]
	vols.mu.Unlock()
	if !stillMounted {
		t.Fatal("volumes unmounted although the claims were not unprepared")
	}
	claims.mu.Lock()
	claims.failing = false
	claims.mu.Unlock()
	if err := e.workers.Delete(pod, nil); err != nil { // wakes the pod
		t.Fatal(err)
	}
	e.waitFor("removed", []types.UID{pod.UID}, removed)
	calls, _ = vols.snapshot()
	n := len(calls)
	if n < 3 || !isUnprepare(calls[n-3]) || calls[n-2] != "remove "+string(pod.UID) || calls[n-1] != "wait-unmount gpu" {
		t.Fatalf("calls %q: want unprepare, then the volumes", calls)
	}
}

// isUnprepare: the pod's unprepare, with its containers there and none
// running.
func isUnprepare(call string) bool {
	var containers, running int
	_, err := fmt.Sscanf(call, "unprepare gpu containers=%d running=%d", &containers, &running)
	return err == nil && containers > 0 && running == 0
}
