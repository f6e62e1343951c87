package podworker_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podworker"
)

// fakeVolumes is a volume manager whose mounts fail while failing is set,
// recording what it is asked in order.
type fakeVolumes struct {
	mu      sync.Mutex
	calls   []string
	failing bool
	mounted map[types.UID]bool
}

func (f *fakeVolumes) record(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeVolumes) AddPod(_ context.Context, pod *corev1.Pod) error {
	f.record("add " + pod.Name)
	return nil
}

func (f *fakeVolumes) RemovePod(uid types.UID) { f.record("remove " + string(uid)) }

func (f *fakeVolumes) WaitForAttachAndMount(_ context.Context, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "wait-mount "+pod.Name)
	if f.failing {
		return errors.New("unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: context deadline exceeded")
	}
	f.mounted[pod.UID] = true
	return nil
}

func (f *fakeVolumes) WaitForUnmount(_ context.Context, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "wait-unmount "+pod.Name)
	delete(f.mounted, pod.UID)
	return nil
}

func (f *fakeVolumes) snapshot() ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...), f.failing
}

// With a volume manager, no container starts before the pod's volumes are
// mounted (a failed wait fails the sync and nothing is created), and a
// deleted pod's volumes are unmounted before it is gone.
func TestVolumesBeforeSyncAndAfterKill(t *testing.T) {
	vols := &fakeVolumes{failing: true, mounted: map[types.UID]bool{}}
	e := newEnv(t, nil, podworker.WithVolumeManager(vols))
	pod := testPod("stateful")
	if err := e.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	e.waitFor("failed volume wait", []types.UID{pod.UID}, func(st podworker.PodState) bool { return st.Err != nil })
	if n := e.fake.CallCount("CreateContainer") + e.fake.CallCount("RunPodSandbox"); n != 0 {
		t.Fatalf("%d sandbox or container creations before the volumes were mounted", n)
	}
	vols.mu.Lock()
	vols.failing = false
	vols.mu.Unlock()
	if err := e.workers.Upsert(pod); err != nil { // an update wakes the pod
		t.Fatal(err)
	}
	e.waitFor("running", []types.UID{pod.UID}, running)
	if err := e.workers.Delete(pod, nil); err != nil {
		t.Fatal(err)
	}
	e.waitFor("removed", []types.UID{pod.UID}, removed)
	calls, _ := vols.snapshot()
	want := []string{"remove " + string(pod.UID), "wait-unmount stateful"}
	if len(calls) < 4 || calls[0] != "add stateful" || calls[1] != "wait-mount stateful" ||
		calls[len(calls)-2] != want[0] || calls[len(calls)-1] != want[1] {
		t.Fatalf("volume manager calls %q, want adds and waits, then %q", calls, want)
	}
	vols.mu.Lock()
	defer vols.mu.Unlock()
	if vols.mounted[pod.UID] {
		t.Fatal("the removed pod's volumes are still mounted")
	}
}
