package diff

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kubeletstatus "k8s.io/kubernetes/pkg/kubelet/status"

	"github.com/podstart/podstart/apistatus"
)

// randomStatusCase: a pod with up to 3 init containers (some sidecars), up
// to 3 app containers and readiness gates; container statuses in any
// state, ready or not, started or not, some missing; other conditions;
// an old status with or without Initialized.
func randomStatusCase(r *rand.Rand) (*corev1.Pod, *corev1.PodStatus, []corev1.ContainerStatus, []corev1.PodCondition, corev1.PodPhase) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{}
	pod.Generation = int64(r.IntN(5))
	names := []string{"a", "b", "c"}
	var statuses []corev1.ContainerStatus
	add := func(name string) {
		if r.IntN(5) == 0 {
			return // unknown
		}
		s := corev1.ContainerStatus{Name: name, Ready: r.IntN(2) == 0}
		if r.IntN(3) > 0 {
			v := r.IntN(2) == 0
			s.Started = &v
		}
		switch r.IntN(4) {
		case 0:
			s.State.Running = &corev1.ContainerStateRunning{}
		case 1:
			s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(r.IntN(2))}
		case 2:
			s.State.Waiting = &corev1.ContainerStateWaiting{}
		}
		statuses = append(statuses, s)
	}
	for _, n := range names[:r.IntN(4)] {
		c := corev1.Container{Name: "init-" + n}
		if r.IntN(2) == 0 {
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		add(c.Name)
	}
	for _, n := range names[:r.IntN(4)] {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n})
		add(n)
	}
	if r.IntN(8) == 0 {
		statuses = nil
	}
	var conds []corev1.PodCondition
	for _, g := range []corev1.PodConditionType{"x.io/one", "x.io/two"}[:r.IntN(3)] {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		if r.IntN(3) > 0 {
			conds = append(conds, corev1.PodCondition{Type: g, Status: pick(r, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown})})
		}
	}
	old := &corev1.PodStatus{}
	if r.IntN(2) == 0 {
		old.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: pick(r, []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse})}}
	}
	phase := pick(r, []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed})
	return pod, old, statuses, conds, phase
}

// TestStatusConditions compares the three container-driven conditions
// with kubelet's exported generators.
func TestStatusConditions(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	for range n {
		pod, old, statuses, conds, phase := randomStatusCase(r)
		pairs := []struct {
			name        string
			got, wanted corev1.PodCondition
		}{
			{"ContainersReady", apistatus.ContainersReadyCondition(pod, old, statuses, phase), kubeletstatus.GenerateContainersReadyCondition(pod, old, statuses, phase)},
			{"Ready", apistatus.ReadyCondition(pod, old, conds, statuses, phase), kubeletstatus.GeneratePodReadyCondition(pod, old, conds, statuses, phase)},
			{"Initialized", apistatus.InitializedCondition(pod, old, statuses, phase), kubeletstatus.GeneratePodInitializedCondition(pod, old, statuses, phase)},
		}
		for _, p := range pairs {
			if diff := cmp.Diff(p.wanted, p.got); diff != "" {
				d.add("%s condition differs (-kubelet +podstart):\n%s\npod %+v\nstatuses %+v\nphase %s", p.name, diff, pod.Spec, statuses, phase)
			}
		}
	}
	d.report(n, "pods' conditions")
}
