package diff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	podutil "k8s.io/kubernetes/pkg/util/pod"

	"github.com/podstart/podstart/statusmanager"
)

// randomPodStatus: a status with a random phase, reason and message, some
// of kubelet's and others' conditions in random order, container statuses
// in any state, IPs and a start time; each part left out at random.
func randomPodStatus(r *rand.Rand) corev1.PodStatus {
	var s corev1.PodStatus
	if r.IntN(4) > 0 {
		s.Phase = pick(r, []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed})
	}
	if r.IntN(3) == 0 {
		s.Reason, s.Message = pick(r, []string{"Evicted", "Unknown", ""}), pick(r, tricky)
	}
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, r.IntN(3), 0, time.UTC))
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady, corev1.PodInitialized, corev1.PodScheduled,
		corev1.PodReadyToStartContainers, corev1.DisruptionTarget, "example.com/gate"} {
		if r.IntN(2) == 0 {
			continue
		}
		c := corev1.PodCondition{Type: t, Status: pick(r, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse}),
			Reason: pick(r, []string{"", "PodCompleted", "ContainersNotReady"}), LastTransitionTime: at, ObservedGeneration: int64(r.IntN(3))}
		s.Conditions = append(s.Conditions, c)
	}
	r.Shuffle(len(s.Conditions), func(i, j int) { s.Conditions[i], s.Conditions[j] = s.Conditions[j], s.Conditions[i] })
	for _, list := range []*[]corev1.ContainerStatus{&s.ContainerStatuses, &s.InitContainerStatuses} {
		for _, name := range []string{"a", "b", "c"} {
			if r.IntN(2) == 0 {
				continue
			}
			cs := corev1.ContainerStatus{Name: name, Ready: r.IntN(2) == 0, RestartCount: int32(r.IntN(3)), Image: "busybox:1.35",
				ContainerID: fmt.Sprintf("containerd://%d", r.IntN(3))}
			switch r.IntN(3) {
			case 0:
				cs.State.Running = &corev1.ContainerStateRunning{StartedAt: at}
			case 1:
				cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(r.IntN(2)), Message: pick(r, tricky), FinishedAt: at}
			default:
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: pick(r, []string{"CrashLoopBackOff", "ContainerCreating"})}
			}
			*list = append(*list, cs)
		}
	}
	if r.IntN(2) == 0 {
		ip := fmt.Sprintf("10.88.0.%d", r.IntN(3))
		s.PodIP, s.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	}
	if r.IntN(2) == 0 {
		s.StartTime = &at
	}
	return s
}

// TestStatusPatch compares statusmanager.StatusPatch with kubelet's
// PatchPodStatus (pkg/util/pod) on random pairs of statuses: the same patch
// bytes, the same "unchanged".
func TestStatusPatch(t *testing.T) {
	r := newRand(t)
	d := differences{t: t}
	n := cases(500)
	ctx := context.Background()
	for i := range n {
		old := randomPodStatus(r)
		next := randomPodStatus(r)
		if r.IntN(5) == 0 {
			next = *old.DeepCopy() // unchanged
		}
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		client := k8sfake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod", UID: uid}, Status: old})
		_, want, wantUnchanged, err := podutil.PatchPodStatus(ctx, client, "ns", "pod", uid, old, next)
		if err != nil {
			t.Fatalf("kubelet: %v", err)
		}
		got, gotUnchanged, err := statusmanager.StatusPatch(uid, old, next)
		if err != nil {
			t.Fatalf("podstart: %v", err)
		}
		if string(got) != string(want) || gotUnchanged != wantUnchanged {
			d.add("patch %s (unchanged %v), kubelet %s (%v)", got, gotUnchanged, want, wantUnchanged)
		}
	}
	d.report(n, "status patches")
}
