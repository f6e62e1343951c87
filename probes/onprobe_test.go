package probes_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/probes"
)

// WithOnProbe hears each probe that produced a result, with the pod and
// container, and the worker's end.
func TestOnProbe(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	rt := &execOnly{calls: make(chan []string, 100)}
	runs := make(chan probes.ProbeRun, 100)
	m := probes.New(rt, probes.WithClock(clk), probes.WithOnProbe(func(r probes.ProbeRun) { runs <- r }))
	defer m.Close()
	c := corev1.Container{Name: "app", LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		PeriodSeconds: 10, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1}}
	pod := probePod(c)
	m.Update(pod, running("app", "c1", true, clk.Now(), "10.0.0.5"))
	<-rt.calls
	r := <-runs
	if r.Kind != probes.Liveness || r.Pod != "p" || r.Namespace != "ns" || r.PodUID != pod.UID || r.Container != "app" || r.Result != podsync.ProbeSuccess || r.Stopped {
		t.Fatalf("run = %+v", r)
	}
	m.RemovePod(pod.UID)
	if r := <-runs; !r.Stopped || r.Container != "app" || r.PodUID != pod.UID {
		t.Fatalf("end = %+v", r)
	}
}
