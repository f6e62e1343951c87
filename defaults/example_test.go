package defaults_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/defaults"
)

// A pod as a user writes it, defaulted before it reaches podsync.
func ExamplePod() {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Image: "nginx"},
		{Name: "tool", Image: "busybox:1.35", ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{}},
		}},
	}}}
	defaults.Pod(pod)

	fmt.Println("restartPolicy:", pod.Spec.RestartPolicy, "dnsPolicy:", pod.Spec.DNSPolicy,
		"grace:", *pod.Spec.TerminationGracePeriodSeconds)
	for _, c := range pod.Spec.Containers {
		fmt.Println(c.Name, c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy)
	}
	p := pod.Spec.Containers[1].ReadinessProbe
	fmt.Println("probe:", p.PeriodSeconds, p.TimeoutSeconds, p.FailureThreshold, p.HTTPGet.Scheme, p.HTTPGet.Path)
	// Output:
	// restartPolicy: Always dnsPolicy: ClusterFirst grace: 30
	// web Always /dev/termination-log File
	// tool IfNotPresent /dev/termination-log File
	// probe: 10 1 3 HTTP /
}
