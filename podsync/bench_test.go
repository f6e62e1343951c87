package podsync

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkComputePodActions: 3 regular init + 2 sidecar + 10 app
// containers, the pod fully running.
func BenchmarkComputePodActions(b *testing.B) {
	pod := basePod()
	pod.Spec.Containers = nil
	st := statusOf(ready())
	for i := 0; i < 5; i++ {
		c := corev1.Container{Name: fmt.Sprintf("init%d", i), Image: "busybox"}
		s := exited(c.Name, 0)
		if i >= 3 {
			c.RestartPolicy = &always
			s = running(c.Name)
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		st.ContainerStatuses = append(st.ContainerStatuses, s)
	}
	// As SyncPod sees a steady pod: every container with resources, and
	// the record of what was applied, so each running one is compared
	// for an in-place resize.
	st.ActuatedResources = map[string]ResourceValues{}
	for i := 0; i < 10; i++ {
		c := corev1.Container{Name: fmt.Sprintf("app%d", i), Image: "busybox", Resources: rr("100m", "500m", "64Mi", "128Mi")}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
		st.ContainerStatuses = append(st.ContainerStatuses, running(c.Name))
		st.ActuatedResources[c.Name] = rv("100m", "500m", "64Mi", "128Mi")
	}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].Resources = rr("100m", "", "", "64Mi")
		st.ActuatedResources[pod.Spec.InitContainers[i].Name] = rv("100m", "", "", "64Mi")
	}
	b.ReportAllocs()
	for b.Loop() {
		a := ComputePodActions(pod, st, nil)
		if a.KillPod || len(a.ContainersToStart) != 0 {
			b.Fatal(a)
		}
	}
}
