package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The burst tier's figures: percentiles, the per-burst report, the
// stages of each node's starts, the per-pod timelines and the summary
// across bursts. Printed, never asserted.

// dist is a distribution's nearest-rank percentiles.
type dist struct {
	n                  int
	p50, p90, p99, max time.Duration
}

func distOf(d []time.Duration) dist {
	if len(d) == 0 {
		return dist{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return dist{n: len(s), p50: rank(50), p90: rank(90), p99: rank(99), max: s[len(s)-1]}
}

func (d dist) String() string {
	ms := func(x time.Duration) string { return fmt.Sprintf("%8.0f", float64(x.Microseconds())/1000) }
	return ms(d.p50) + ms(d.p90) + ms(d.p99) + ms(d.max)
}

// latencies is from[name] → to[name] for each pod that has both.
func latencies(names []string, from, to map[string]time.Time) []time.Duration {
	var out []time.Duration
	for _, name := range names {
		if !from[name].IsZero() && !to[name].IsZero() {
			out = append(out, to[name].Sub(from[name]))
		}
	}
	return out
}

// measures are the burst's latency measures, in report order.
func (r *burstResult) measures() []struct {
	name string
	d    dist
} {
	return []struct {
		name string
		d    dist
	}{
		{"create sent → Running watched", distOf(latencies(r.names, r.sent, r.running))},
		{"create sent → Ready watched", distOf(latencies(r.names, r.sent, r.readyAt))},
		{"creationTimestamp → Running watched (the SLO's; +<1 s)", distOf(latencies(r.names, r.creation, r.running))},
		{"creationTimestamp → Ready's lastTransitionTime (API, 1 s)", distOf(latencies(r.names, r.creation, r.readyLTT))},
		{"create request's round trip", distOf(latencies(r.names, r.sent, r.answered))},
	}
}

// running is the burst's main measure: create sent → Running watched.
func (r *burstResult) runningDist() dist { return distOf(latencies(r.names, r.sent, r.running)) }

func (r *burstResult) loadMax() float64 {
	m := r.loadStart
	for _, l := range r.load {
		m = max(m, l)
	}
	return m
}

func (r *burstResult) loadEnd() float64 {
	if len(r.load) == 0 {
		return r.loadStart
	}
	return r.load[len(r.load)-1]
}

// log prints the burst's report.
func (r *burstResult) log(t *testing.T) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "burst %s on %s: %d pods created at once; first create sent → last Ready watched %v\n",
		r.label, r.side.node, r.n, r.last.Sub(r.t0).Round(time.Millisecond))
	fmt.Fprintf(&b, "  %-58s %8s%8s%8s%8s  (ms)\n", "measure", "p50", "p90", "p99", "max")
	for _, m := range r.measures() {
		fmt.Fprintf(&b, "  %-58s %s\n", m.name, m.d)
	}
	fmt.Fprintf(&b, "  load average (1 min): %.2f at the first create, %.2f at most, %.2f at the last Ready (%d CPUs)\n",
		r.loadStart, r.loadMax(), r.loadEnd(), numCPU)
	self, kubelet, containerd, machine := r.cpuTo.self-r.cpuFrom.self, r.cpuTo.kubelet-r.cpuFrom.kubelet,
		r.cpuTo.containerd-r.cpuFrom.containerd, r.cpuTo.machine-r.cpuFrom.machine
	wall := r.cpuTo.at.Sub(r.cpuFrom.at)
	fmt.Fprintf(&b, "  CPU over the burst (%v wall): machine %.2f s; the test process (agent, both CRI proxies, watch) %.2f s; kubelet %.2f s; containerd's daemon %.2f s; the rest %.2f s\n",
		wall.Round(time.Millisecond), machine.Seconds(), self.Seconds(), kubelet.Seconds(), containerd.Seconds(), (machine - self - kubelet - containerd).Seconds())
	fmt.Fprintf(&b, "  CRI calls through %s's proxy, by method (first create → last Ready; the %v after):\n", r.side.node, r.tailFor)
	fmt.Fprintf(&b, "  %-28s %8s %8s %8s %8s\n", "method", "calls", "per pod", "failed", "after")
	total, tail, failed := 0, 0, 0
	for _, m := range sortedKeys(r.calls, r.tail) {
		fmt.Fprintf(&b, "  %-28s %8d %8.2f %8d %8d\n", m, r.calls[m], float64(r.calls[m])/float64(r.n), r.failed[m], r.tail[m])
		total += r.calls[m]
		tail += r.tail[m]
		failed += r.failed[m]
	}
	fmt.Fprintf(&b, "  %-28s %8d %8.2f %8d %8d\n", "all", total, float64(total)/float64(r.n), failed, tail)
	fmt.Fprintf(&b, "  then: every pod deleted by the node in %v; the machine settled in %v", r.deleted.Round(time.Millisecond), r.settled.Round(time.Second))
	t.Log(b.String())
}

func sortedKeys(ms ...map[string]int) []string {
	var out []string
	for _, m := range ms {
		for k := range m {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// percentiles prints a stage table's p50, p90, p99 and max per stage.
func (s *stageTable) percentiles() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-72s %8s%8s%8s%8s  (ms)\n", "stage", "p50", "p90", "p99", "max")
	for _, name := range s.names {
		fmt.Fprintf(&b, "  %-72s %s  (n=%d)\n", name, distOf(s.per[name]), len(s.per[name]))
	}
	return b.String()
}

// logStages prints where the burst's starts went, stage by stage, and
// writes the per-pod timelines to bc.out.
func (r *burstResult) logStages(t *testing.T, bc burstConfig) {
	t.Helper()
	var calls []criCall
	var events []TraceEvent
	if r.side.agent {
		calls, events = r.side.cri.snapshot(), r.side.trace.snapshot()
		fine, coarse := agentBreakdown(r.names, r.sent, r.readyAt, events, calls)
		t.Logf("burst %s, the agent's starts traced (Config.Trace, CRI calls timed at its client), from the create sent:\n%s", r.label, fine.percentiles())
		t.Logf("burst %s, the agent's CRI calls as it sent them:\n%s", r.label, coarse.percentiles())
		var window []TraceEvent
		for _, e := range events {
			if !e.At.Before(r.t0) && !e.At.After(r.last) {
				window = append(window, e)
			}
		}
		t.Logf("burst %s, podsync's steps (every start of the burst, no pod attribution):\n%s", r.label, stepBreakdown(window).percentiles())
		t.Logf("burst %s, the agent's CRI calls in flight at once, at most: %s", r.label, inFlight(calls, r.t0, r.last))
		syncs := map[string]int{}
		for _, e := range events {
			if e.Stage == "sync" && !e.At.Before(r.t0) && !e.At.After(r.last.Add(r.tailFor)) {
				syncs[e.Name]++
			}
		}
		var per []time.Duration // counts, as durations for distOf
		for _, name := range r.names {
			per = append(per, time.Duration(syncs["default/"+name])*time.Millisecond)
		}
		d := distOf(per)
		t.Logf("burst %s, the agent's syncs per pod until %v after the last Ready: p50 %d, p90 %d, max %d",
			r.label, r.tailFor, d.p50.Milliseconds(), d.p90.Milliseconds(), d.max.Milliseconds())
	} else {
		calls = proxyCalls(r.side.proxy)
		coarse, fromLog := kubeletBreakdown(r.names, r.sent, r.readyAt, calls, r.side.kubeletLog)
		t.Logf("burst %s, kubelet's CRI calls as its proxy saw them sent:\n%s", r.label, coarse.percentiles())
		t.Logf("burst %s, kubelet's stages from its -v=%s log and its proxy:\n%s", r.label, kubeletVerbosity(), fromLog.percentiles())
	}
	if bc.out != "" {
		writeTimelines(t, filepath.Join(bc.out, fmt.Sprintf("timelines-%s-%s.tsv", r.label, r.side.node)), r, calls, events)
	}
}

// inFlight is, per CRI method timed at the client, the most calls that
// were in flight at once between from and to.
func inFlight(calls []criCall, from, to time.Time) string {
	type edge struct {
		at    time.Time
		delta int
	}
	byMethod := map[string][]edge{}
	for _, c := range calls {
		if c.start.Before(from) || c.start.After(to) || c.end.IsZero() {
			continue
		}
		byMethod[c.method] = append(byMethod[c.method], edge{c.start, 1}, edge{c.end, -1})
	}
	var out []string
	for _, m := range sortedKeys(map[string]int{"RunPodSandbox": 0, "CreateContainer": 0, "StartContainer": 0, "PodSandboxStatus": 0}) {
		es := byMethod[m]
		slices.SortFunc(es, func(a, b edge) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.delta - b.delta // an end before a start at the same instant
		})
		cur, top := 0, 0
		for _, e := range es {
			cur += e.delta
			top = max(top, cur)
		}
		out = append(out, fmt.Sprintf("%s %d", m, top))
	}
	return strings.Join(out, ", ")
}

// writeTimelines writes one line per pod: when each step of its start
// happened, in ms from the first create sent (kubelet's CRI calls as its
// proxy saw them start: no answers; the agent's trace for it alone).
func writeTimelines(t *testing.T, path string, r *burstResult, calls []criCall, events []TraceEvent) {
	t.Helper()
	ms := func(at time.Time) string {
		if at.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%d", at.Sub(r.t0).Milliseconds())
	}
	end := func(c *criCall) time.Time {
		if c == nil {
			return time.Time{}
		}
		return c.end
	}
	start := func(c *criCall) time.Time {
		if c == nil {
			return time.Time{}
		}
		return c.start
	}
	first := func(name, stage string, readyOnly bool) time.Time {
		for _, e := range events {
			if e.Name == "default/"+name && e.Stage == stage && (!readyOnly || e.Ready) && !e.At.Before(r.t0) {
				return e.At
			}
		}
		return time.Time{}
	}
	cri := byPod(calls)
	var b strings.Builder
	b.WriteString("pod\tsent\tanswered\twatch\tadmitted\tsync\tsandbox_sent\tsandbox_done\tcreate_sent\tcreate_done\tstart_sent\tstart_done\tsynced_ready\tpatch_ready\trunning_watched\tready_watched\n")
	for _, name := range r.names {
		p := cri[name]
		if p == nil {
			p = &podCRI{}
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, ms(r.sent[name]), ms(r.answered[name]),
			ms(first(name, "watch", false)), ms(first(name, "admitted", false)), ms(first(name, "sync", false)),
			ms(start(p.sandbox)), ms(end(p.sandbox)), ms(start(p.create)), ms(end(p.create)), ms(start(p.start)), ms(end(p.start)),
			ms(first(name, "synced", true)), ms(first(name, "patch", true)), ms(r.running[name]), ms(r.readyAt[name]))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// logBurstSummary prints every burst side by side, the SLO and the
// target, and the CRI calls per pod start of each node.
func logBurstSummary(t *testing.T, bc burstConfig, results []*burstResult) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "the burst tier's summary: %d pods per burst, create sent → Running watched (ms); SLO: p99 ≤ 5 s; target: p99(agent) ≤ 0.5 × p99(kubelet)\n", bc.n)
	fmt.Fprintf(&b, "  %-6s %-16s %8s%8s%8s%8s %10s %14s %10s\n", "burst", "node", "p50", "p90", "p99", "max", "SLO p99", "load start/max", "CPU s/pod")
	p99s := map[string][]time.Duration{} // by node: the p99 of each burst
	for _, r := range results {
		d := r.runningDist()
		slo := distOf(latencies(r.names, r.creation, r.running)).p99
		verdict := "met"
		if slo > 5*time.Second {
			verdict = "MISSED"
		}
		cpu := (r.cpuTo.machine - r.cpuFrom.machine).Seconds() / float64(r.n)
		fmt.Fprintf(&b, "  %-6s %-16s %s %6.2fs %-3s %6.2f/%-6.2f %10.3f\n", r.label, r.side.node, d, slo.Seconds(), verdict, r.loadStart, r.loadMax(), cpu)
		p99s[r.side.node] = append(p99s[r.side.node], d.p99)
	}
	for _, r := range results {
		if !r.side.agent {
			continue
		}
		for _, k := range results {
			if k.label == r.label && !k.side.agent {
				a, kd := r.runningDist().p99, k.runningDist().p99
				ratio := float64(a) / float64(kd)
				verdict := "met"
				if ratio > 0.5 {
					verdict = "MISSED"
				}
				fmt.Fprintf(&b, "  round %s: p99 agent %v / kubelet %v = %.2f (target ≤ 0.50: %s); p50 %.2f\n", r.label,
					a.Round(time.Millisecond), kd.Round(time.Millisecond), ratio, verdict, float64(r.runningDist().p50)/float64(k.runningDist().p50))
			}
		}
	}
	fmt.Fprintf(&b, "  CRI calls per pod start (first create → last Ready), mean over the bursts:\n")
	fmt.Fprintf(&b, "  %-28s %10s %10s\n", "method", "agent", "kubelet")
	sum := func(agent bool) (map[string]int, int) {
		m, pods := map[string]int{}, 0
		for _, r := range results {
			if r.side.agent == agent {
				for k, v := range r.calls {
					m[k] += v
				}
				pods += r.n
			}
		}
		return m, pods
	}
	a, an := sum(true)
	k, kn := sum(false)
	per := func(m map[string]int, n int, key string) float64 {
		if n == 0 {
			return 0
		}
		return float64(m[key]) / float64(n)
	}
	ta, tk := 0, 0
	for _, m := range sortedKeys(a, k) {
		fmt.Fprintf(&b, "  %-28s %10.2f %10.2f\n", m, per(a, an, m), per(k, kn, m))
		ta += a[m]
		tk += k[m]
	}
	fmt.Fprintf(&b, "  %-28s %10.2f %10.2f", "all", per(map[string]int{"": ta}, an, ""), per(map[string]int{"": tk}, kn, ""))
	t.Log(b.String())
}
