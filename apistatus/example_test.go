package apistatus_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// The runtime reports a pod's app container running in a ready sandbox;
// PodStatus gives what kubectl would show.
func ExamplePodStatus() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
	started := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	runtimeView := &podsync.PodStatus{
		UID: "1", IPs: []string{"10.1.0.5"},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Metadata: &runtimeapi.PodSandboxMetadata{Uid: "1"}, Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.1.0.5"}}},
		ContainerStatuses: []*podsync.ContainerStatus{{ID: "c1", Name: "app", State: podsync.ContainerStateRunning,
			CreatedAt: started, StartedAt: started, SandboxID: "sb1", Image: "nginx:1.27", ImageRef: "sha256:4f1c"}},
	}
	s := apistatus.PodStatus(apistatus.Input{Pod: pod, Status: runtimeView, HostIPs: []string{"192.168.1.10"}, Now: started})
	fmt.Println(s.Phase, s.PodIP, s.QOSClass)
	for _, c := range s.Conditions {
		fmt.Println(c.Type, c.Status)
	}
	app := s.ContainerStatuses[0]
	fmt.Println(app.ContainerID, app.Ready, *app.Started)
	// Output:
	// Running 10.1.0.5 BestEffort
	// PodReadyToStartContainers True
	// Initialized True
	// Ready True
	// ContainersReady True
	// PodScheduled True
	// containerd://c1 true true
}
