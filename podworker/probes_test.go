package podworker_test

import (
	"context"
	"path/filepath"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
	"github.com/podstart/podstart/probes"
	"github.com/podstart/podstart/runtime/fake"
)

func condition(s corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// A readiness probe that flips makes the API status's Ready flip; a
// liveness failure restarts the container.
func TestProbesDriveAPIStatus(t *testing.T) {
	var ready, alive atomic.Bool
	ready.Store(true)
	alive.Store(true)
	f := fake.New(fake.WithExecFunc(func(id string, cmd []string) ([]byte, []byte, int32, error) {
		ok := (cmd[0] == "ready" && ready.Load()) || (cmd[0] == "alive" && alive.Load())
		if ok {
			return nil, nil, 0, nil
		}
		return nil, []byte("no"), 1, nil
	}))
	pclk := testingclock.NewFakeClock(time.Now())
	pm := probes.New(f, probes.WithClock(pclk))
	defer pm.Close()
	root := t.TempDir()
	ims := images.NewManager(f)
	defer ims.Close()
	syncer := podsync.NewSyncer(f, ims, podsync.WithProbes(pm), podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	states := make(chan podworker.PodState, 1000)
	w := podworker.New(syncer, podworker.WithProbes(pm), podworker.WithRelistPeriod(10*time.Millisecond), podworker.WithHostIPs("10.0.0.1"),
		podworker.WithOnSync(func(_ types.UID, st podworker.PodState) { states <- st }))
	defer w.Close()
	pod := testPod("probed")
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = pod.Spec.Containers[:1]
	exec := func(cmd string) corev1.ProbeHandler {
		return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}}
	}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: exec("ready"), PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1}
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: exec("alive"), PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1}
	if err := w.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	until := func(what string, cond func(podworker.PodState) bool) podworker.PodState {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case st := <-states:
				if cond(st) {
					return st
				}
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	tick := func() {
		for !pclk.HasWaiters() {
			goruntime.Gosched()
		}
		pclk.Step(time.Second)
	}
	st := until("Ready", func(st podworker.PodState) bool {
		return condition(st.APIStatus, corev1.PodReady) == corev1.ConditionTrue
	})
	if st.APIStatus.Phase != corev1.PodRunning || st.APIStatus.HostIP != "10.0.0.1" {
		t.Fatalf("phase %s host %s", st.APIStatus.Phase, st.APIStatus.HostIP)
	}
	ready.Store(false)
	tick()
	until("not Ready", func(st podworker.PodState) bool {
		return condition(st.APIStatus, corev1.PodReady) == corev1.ConditionFalse
	})
	ready.Store(true)
	tick()
	until("Ready again", func(st podworker.PodState) bool {
		return condition(st.APIStatus, corev1.PodReady) == corev1.ConditionTrue
	})

	alive.Store(false)
	tick()
	st = until("restart", func(st podworker.PodState) bool {
		return len(st.APIStatus.ContainerStatuses) == 1 && st.APIStatus.ContainerStatuses[0].RestartCount == 1
	})
	list, _ := f.ListContainers(context.Background(), nil)
	if len(list) != 2 {
		t.Fatalf("%d instances after a liveness restart, want 2", len(list))
	}
	if lt := st.APIStatus.ContainerStatuses[0].LastTerminationState.Terminated; lt == nil {
		t.Fatalf("no last state after the liveness kill: %+v", st.APIStatus.ContainerStatuses[0])
	}
}
