package probes_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime/fake"
)

// BenchmarkProbeRound: one Manager with 100 pods of 3 containers, each
// with a liveness, a readiness and a startup exec probe (900 workers), on
// runtime/fake. One op is one period: the clock steps, every worker wakes,
// and the 600 liveness and readiness probes run (the containers started,
// so the startup workers wake and idle, as kubelet's).
func BenchmarkProbeRound(b *testing.B) {
	const pods, containers = 100, 3
	const perRound = pods * containers * 2
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var execs atomic.Int64
	var target atomic.Int64
	done := make(chan struct{}, 1)
	rt := fake.New(fake.WithClock(clk), fake.WithExecFunc(func(string, []string) ([]byte, []byte, int32, error) {
		if execs.Add(1) == target.Load() {
			done <- struct{}{}
		}
		return []byte("ok\n"), nil, 0, nil
	}))
	m := probes.New(rt, probes.WithClock(clk))
	defer m.Close()
	exec := func(name string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/check", name}}},
			PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	}
	started := true
	target.Store(perRound)
	for p := 0; p < pods; p++ {
		uid := types.UID(fmt.Sprintf("uid-%d", p))
		sb := rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("pod-%d", p), Namespace: "bench", Uid: string(uid)}},
			runtimeapi.PodSandboxState_SANDBOX_READY, clk.Now())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", p), Namespace: "bench", UID: uid}}
		status := corev1.PodStatus{Phase: corev1.PodRunning}
		for c := 0; c < containers; c++ {
			name := fmt.Sprintf("c%d", c)
			id, err := rt.SeedContainer(sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "busybox"}},
				fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: clk.Now()})
			if err != nil {
				b.Fatal(err)
			}
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name, LivenessProbe: exec("live"), ReadinessProbe: exec("ready"), StartupProbe: exec("start")})
			status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{Name: name, ContainerID: "containerd://" + id,
				Started: &started, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(clk.Now())}}})
		}
		m.Update(pod, status)
	}
	<-done // every worker's first probe
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		target.Add(perRound)
		clk.Step(10 * time.Second)
		<-done
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perRound), "ns/probe")
}
