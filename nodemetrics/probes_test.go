package nodemetrics

import (
	"testing"
	"time"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/probes"
)

func TestProbes(t *testing.T) {
	p := NewProbes()
	run := probes.ProbeRun{Kind: probes.Readiness, Namespace: "ns", Pod: "p", PodUID: "u", Container: "app", Duration: 250 * time.Millisecond}
	for _, r := range []podsync.ProbeResult{podsync.ProbeSuccess, podsync.ProbeSuccess, podsync.ProbeFailure, podsync.ProbeUnknown} {
		run.Result = r
		p.OnProbe(run)
	}
	fams := gather(t, p.Gatherer())
	base := []string{"probe_type=Readiness", "container=app", "pod=p", "namespace=ns"}
	for result, want := range map[string]float64{"successful": 2, "failed": 1, "unknown": 1} {
		if v := value(t, fams, "prober_probe_total", append(base, "result="+result, "pod_uid=u")...); v != want {
			t.Errorf("%s: %v, want %v", result, v, want)
		}
	}
	h := find(fams["prober_probe_duration_seconds"], base...).Histogram
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 0.75 { // successful and unknown ones
		t.Errorf("durations: count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	if f := fams["prober_probe_total"]; f.GetHelp() != "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result." {
		t.Errorf("help %q", f.GetHelp())
	}
	if fams["process_start_time_seconds"] == nil {
		t.Error("no process_start_time_seconds")
	}
	p.OnProbe(probes.ProbeRun{Kind: probes.Readiness, PodUID: "u", Container: "app", Stopped: true})
	fams = gather(t, p.Gatherer())
	if fams["prober_probe_total"] != nil || fams["prober_probe_duration_seconds"] != nil {
		t.Errorf("series left after the worker stopped: %v", fams["prober_probe_total"])
	}
}
