package apistatus_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/apistatus"
	"github.com/podstart/podstart/podsync"
)

// BenchmarkPodStatus: the API status of a running pod with 3 init, 2
// sidecar and 10 app containers, each app restarted once.
func BenchmarkPodStatus(b *testing.B) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "shop", UID: "uid-big"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}}
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	rs := &podsync.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, IPs: []string{"10.1.0.5"},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Metadata: &runtimeapi.PodSandboxMetadata{Uid: "uid-big"}, Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.1.0.5"}}}}
	add := func(name string, state podsync.ContainerState, at time.Time, restarts int) {
		rs.ContainerStatuses = append([]*podsync.ContainerStatus{{ID: fmt.Sprintf("%s-%d", name, restarts), Name: name, State: state,
			CreatedAt: at, StartedAt: at, FinishedAt: at.Add(time.Second), RestartCount: restarts, SandboxID: "sb", Image: "busybox:1.35", ImageRef: "sha256:abc"}},
			rs.ContainerStatuses...)
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("init-%d", i)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: name, Image: "busybox:1.35"})
		add(name, podsync.ContainerStateExited, t0.Add(time.Duration(i)*time.Second), 0)
	}
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("side-%d", i)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: name, Image: "busybox:1.35", RestartPolicy: &always})
		add(name, podsync.ContainerStateRunning, t0.Add(time.Duration(3+i)*time.Second), 0)
	}
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("app-%d", i)
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name, Image: "busybox:1.35"})
		add(name, podsync.ContainerStateExited, t0.Add(10*time.Second), 0)
		add(name, podsync.ContainerStateRunning, t0.Add(20*time.Second), 1)
	}
	in := apistatus.Input{Pod: pod, Status: rs, HostIPs: []string{"10.0.0.1"}, Now: t0.Add(time.Minute)}
	prev := apistatus.PodStatus(in)
	in.Previous = &prev
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := apistatus.PodStatus(in)
		if s.Phase != corev1.PodRunning {
			b.Fatal(s.Phase)
		}
	}
}
