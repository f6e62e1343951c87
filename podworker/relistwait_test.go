package podworker_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/runtime/fake"
)

func onePod(name string) *corev1.Pod {
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1", ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}
}

// listCalls counts the node-wide and the per-pod (filtered) list calls.
func listCalls(f *fake.Runtime) (nodeWide, perPod int) {
	for _, c := range f.Calls() {
		var filtered bool
		switch r := c.Request.(type) {
		case *runtimeapi.ListPodSandboxRequest:
			filtered = len(r.GetFilter().GetLabelSelector()) > 0
		case *runtimeapi.ListContainersRequest:
			filtered = len(r.GetFilter().GetLabelSelector()) > 0
		default:
			continue
		}
		if filtered {
			perPod++
		} else {
			nodeWide++
		}
	}
	return nodeWide, perPod
}

// A pod's start reads no status of its own: its first sync starts from the
// last relist (the runtime had nothing of it), and the sync after the one
// that started it waits for a relist, as kubelet's pod worker waits for its
// PLEG cache. One relist (two list calls), where each sync's own read cost
// two.
func TestPodStartReadsNoStatusOfItsOwn(t *testing.T) {
	for _, events := range []bool{false, true} {
		e := newEnv(t, nil, podworker.WithRelistPeriod(0), podworker.WithResyncPeriod(0), podworker.WithGC(0, podsync.DefaultGCPolicy), podworker.WithContainerEvents(events))
		ctx := context.Background()
		if err := e.workers.Relist(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.workers.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		e.fake.ResetCalls()
		p := onePod("solo")
		if err := e.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
		e.waitFor("pod running", []types.UID{p.UID}, running)
		if err := e.workers.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		nodeWide, perPod := listCalls(e.fake)
		// Events (the sandbox's and the container's) come while the pod
		// syncs, and are served by the relist its loop waits for; one
		// delivered after the sync ends may cost one relist more.
		want := 2
		if events {
			want = 4
		}
		t.Logf("events %v: %d node-wide list calls", events, nodeWide)
		if perPod != 0 || nodeWide < 2 || nodeWide > want {
			t.Errorf("events %v: %d node-wide and %d per-pod list calls for one pod's start, want 2 to %d and 0", events, nodeWide, perPod, want)
		}
		if n := e.fake.CallCount("RunPodSandbox"); n != 1 {
			t.Errorf("events %v: %d RunPodSandbox calls", events, n)
		}
	}
}
