package podsync

import (
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// realisticPod builds a pod and a status the runtime could report: init
// containers ran in order up to a frontier; the frontier container is in
// any state; earlier statuses may have been garbage-collected; app
// containers have statuses only once every init container has finished.
func realisticPod(rng *rand.Rand) (*corev1.Pod, *PodStatus) {
	pod := basePod()
	pod.Spec.RestartPolicy = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}[rng.Intn(3)]
	pod.Spec.Containers = pod.Spec.Containers[:1+rng.Intn(3)]
	nInit := rng.Intn(5)
	for i := 0; i < nInit; i++ {
		c := corev1.Container{Name: fmt.Sprintf("init%d", i), Image: "busybox"}
		if rng.Intn(3) == 0 {
			c.RestartPolicy = &always
			if rng.Intn(2) == 0 {
				c.StartupProbe = &corev1.Probe{}
			}
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	st := statusOf(ready())
	frontier := rng.Intn(nInit + 1) // nInit: all init containers finished
	states := []ContainerState{ContainerStateCreated, ContainerStateRunning, ContainerStateExited, ContainerStateUnknown}
	var statuses []*ContainerStatus
	for i := 0; i < nInit && i <= frontier; i++ {
		c := &pod.Spec.InitContainers[i]
		var s *ContainerStatus
		switch {
		case i == frontier:
			s = cs(c.Name, states[rng.Intn(len(states))], rng.Intn(2))
			if rng.Intn(5) == 0 {
				s.Reason = "OOMKilled"
			}
		case IsRestartableInitContainer(c):
			s = running(c.Name)
			if rng.Intn(3) == 0 {
				s = exited(c.Name, rng.Intn(2))
			}
		default:
			s = exited(c.Name, 0)
			if rng.Intn(3) == 0 {
				continue // garbage-collected
			}
		}
		statuses = append([]*ContainerStatus{s}, statuses...)
	}
	if frontier == nInit {
		for i := range pod.Spec.Containers {
			if rng.Intn(3) > 0 {
				statuses = append(statuses, cs(pod.Spec.Containers[i].Name, states[rng.Intn(len(states))], rng.Intn(2)))
			}
		}
	}
	st.ContainerStatuses = statuses
	return pod, st
}

func initDone(s *ContainerStatus) bool {
	return s.State == ContainerStateExited && s.ExitCode == 0 && s.Reason != "OOMKilled"
}

// TestNoAppBeforeInitProperty: ComputePodActions never starts an app
// container while a regular init container has not exited 0.
func TestNoAppBeforeInitProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(42))
	startup := []ProbeResults{nil, probes{start: map[string]ProbeResult{}}}
	for n := 0; n < 20000; n++ {
		pod, st := realisticPod(rng)
		pr := startup[rng.Intn(len(startup))]
		if p, ok := pr.(probes); ok {
			for _, c := range pod.Spec.InitContainers {
				p.start["id-"+c.Name] = ProbeResult(rng.Intn(3))
			}
		}
		a := ComputePodActions(pod, st, pr)
		if len(a.ContainersToStart) == 0 {
			continue
		}
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			if IsRestartableInitContainer(c) {
				continue
			}
			if s := st.FindContainerStatusByName(c.Name); s != nil && !initDone(s) {
				t.Fatalf("app containers %v started while init %s is %s (exit %d, %s)\npod inits %d, statuses %+v\n%s",
					a.ContainersToStart, c.Name, s.State, s.ExitCode, s.Reason, len(pod.Spec.InitContainers), st.ContainerStatuses, a)
			}
		}
		// And the last regular init container must have finished: its
		// status says so, or it was garbage-collected after a later init
		// container started, or the pod was initialised before (an app
		// container exists).
		appSeen := false
		for _, c := range pod.Spec.Containers {
			if s := st.FindContainerStatusByName(c.Name); s != nil && (s.State == ContainerStateRunning || s.State == ContainerStateCreated) {
				appSeen = true
			}
		}
		for i := len(pod.Spec.InitContainers) - 1; i >= 0 && !appSeen; i-- {
			c := &pod.Spec.InitContainers[i]
			if IsRestartableInitContainer(c) {
				continue
			}
			s := st.FindContainerStatusByName(c.Name)
			laterRan := false
			for _, later := range pod.Spec.InitContainers[i+1:] {
				laterRan = laterRan || st.FindContainerStatusByName(later.Name) != nil
			}
			if s == nil && !laterRan || s != nil && !initDone(s) {
				t.Fatalf("apps %v started before the last regular init %s finished\n%s", a.ContainersToStart, c.Name, a)
			}
			break
		}
	}
}
