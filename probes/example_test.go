package probes_test

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime/fake"
)

// printer hands events to the example's goroutine, which prints them in
// order.
type printer chan string

func (p printer) Eventf(_ apiruntime.Object, typ, reason, format string, args ...interface{}) {
	p <- typ + " " + reason + " " + fmt.Sprintf(format, args...)
}

// A readiness probe on a fake runtime and a fake clock: the container is
// unready until the file its exec probe looks for exists.
func Example() {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	ready := false
	rt := fake.New(fake.WithClock(clk), fake.WithExecFunc(func(_ string, cmd []string) ([]byte, []byte, int32, error) {
		mu.Lock()
		defer mu.Unlock()
		if !ready {
			return nil, []byte("cat: " + cmd[1] + ": No such file or directory\n"), 1, nil
		}
		return []byte("ok\n"), nil, 0, nil
	}))
	sandbox := rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}},
		runtimeapi.PodSandboxState_SANDBOX_READY, clk.Now())
	id, _ := rt.SeedContainer(sandbox, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "nginx"}},
		fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: clk.Now()})

	events := make(printer, 10)
	changes := make(chan types.UID, 10)
	m := probes.New(rt, probes.WithClock(clk), probes.WithRecorder(events), probes.WithOnChange(func(uid types.UID) { changes <- uid }))
	defer m.Close()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app",
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
			PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
	}}}}
	started := true
	status := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "app", ContainerID: "containerd://" + id, Started: &started,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(clk.Now())}},
	}}}
	m.Update(pod, status) // in a node agent: each time the pod's API status is made

	<-changes // a new container starts unready
	r, _ := m.Readiness(id)
	fmt.Println("ready:", r == podsync.ProbeSuccess)
	// Probed when its worker starts, and again because Update found the
	// running container unready (kubelet's UpdatePodStatus trigger).
	fmt.Println(strings.TrimSpace(<-events))
	fmt.Println(strings.TrimSpace(<-events))

	mu.Lock()
	ready = true
	mu.Unlock()
	clk.Step(10 * time.Second) // the next period
	<-changes
	r, _ = m.Readiness(id)
	fmt.Println("ready:", r == podsync.ProbeSuccess)
	// Output:
	// ready: false
	// Warning Unhealthy Readiness probe failed: cat: /tmp/ready: No such file or directory
	// Warning Unhealthy Readiness probe failed: cat: /tmp/ready: No such file or directory
	// ready: true
}
