package podsync_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/podsync"
)

// What to do with a pod whose first init container has just finished and
// whose sidecar has not started yet.
func ExampleComputePodActions() {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "migrate", Image: "busybox"},
				{Name: "proxy", Image: "envoy", RestartPolicy: &always},
			},
			Containers: []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	status := &podsync.PodStatus{
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{
			Id: "sandbox-1", State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Metadata: &runtimeapi.PodSandboxMetadata{},
			Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.2"},
		}},
		ContainerStatuses: []*podsync.ContainerStatus{
			{ID: "c1", Name: "migrate", State: podsync.ContainerStateExited, ExitCode: 0},
		},
	}
	actions := podsync.ComputePodActions(pod, status, nil)
	fmt.Println(actions.InitContainersToStart, actions.ContainersToStart)
	fmt.Println(actions)
	// Output:
	// [1] []
	// start init [proxy]; waiting: app containers wait for init container "proxy"
}
