package podsync

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerRestartRules beyond ShouldContainerBeRestarted, as kubelet
// v1.36's computePodActions: a failed init container restarts by its own
// policy and rules; an init container in unknown state and a running
// container killed by a probe follow the container's policy; a new
// sandbox skips a succeeded container whose own policy is OnFailure.
func TestComputePodActionsContainerRestartPolicy(t *testing.T) {
	never, onFailure := corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure
	t.Run("failed init, pod Never, container OnFailure: restarted", func(t *testing.T) {
		pod := initPod(false)
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Spec.InitContainers[0].RestartPolicy = &onFailure
		a := ComputePodActions(pod, statusOf(ready(), exited("init1", 1)), nil)
		if a.KillPod || !reflect.DeepEqual(a.InitContainersToStart, []int{0}) {
			t.Fatalf("%s", a)
		}
	})
	t.Run("failed init, pod Always, container Never: pod killed", func(t *testing.T) {
		pod := initPod(false)
		pod.Spec.InitContainers[0].RestartPolicy = &never
		a := ComputePodActions(pod, statusOf(ready(), exited("init1", 1)), nil)
		if !a.KillPod || len(a.InitContainersToStart) != 0 {
			t.Fatalf("%s", a)
		}
	})
	t.Run("unknown init, pod Never, container OnFailure: killed and restarted", func(t *testing.T) {
		pod := initPod(false)
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Spec.InitContainers[0].RestartPolicy = &onFailure
		a := ComputePodActions(pod, statusOf(ready(), unknown("init1")), nil)
		if a.KillPod || !reflect.DeepEqual(a.InitContainersToStart, []int{0}) || len(a.ContainersToKill) != 1 {
			t.Fatalf("%s", a)
		}
	})
	t.Run("liveness failure, pod Always, container Never: killed, not restarted", func(t *testing.T) {
		pod := basePod()
		pod.Spec.Containers[0].RestartPolicy = &never
		st := statusOf(ready(), running("foo1"), running("foo2"), running("foo3"))
		a := ComputePodActions(pod, st, probes{live: map[string]ProbeResult{"id-foo1": ProbeFailure}})
		if _, killed := a.ContainersToKill["id-foo1"]; !killed || len(a.ContainersToStart) != 0 {
			t.Fatalf("%s", a)
		}
	})
	t.Run("liveness failure, pod Never, container OnFailure: restarted", func(t *testing.T) {
		pod := basePod()
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Spec.Containers[0].RestartPolicy = &onFailure
		st := statusOf(ready(), running("foo1"), running("foo2"), running("foo3"))
		a := ComputePodActions(pod, st, probes{live: map[string]ProbeResult{"id-foo1": ProbeFailure}})
		if !reflect.DeepEqual(a.ContainersToStart, []int{0}) {
			t.Fatalf("%s", a)
		}
	})
	t.Run("new sandbox skips a succeeded OnFailure container of an Always pod", func(t *testing.T) {
		pod := basePod()
		pod.Spec.Containers[1].RestartPolicy = &onFailure
		st := statusOf([]*runtimeapi.PodSandboxStatus{sandbox("sb0", 0, false, "")}, exited("foo1", 0), exited("foo2", 0), exited("foo3", 1))
		a := ComputePodActions(pod, st, nil)
		if !a.CreateSandbox || !reflect.DeepEqual(a.ContainersToStart, []int{0, 2}) {
			t.Fatalf("%s", a)
		}
	})
}
