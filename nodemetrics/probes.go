package nodemetrics

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/probes"
)

// Probes is kubelet's /metrics/probes registry: prober_probe_total and
// prober_probe_duration_seconds, fed by OnProbe, and
// process_start_time_seconds. It is safe for concurrent use.
type Probes struct {
	reg      *prometheus.Registry
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu     sync.Mutex
	series map[probeKey][]string // a worker's pod and namespace, to delete its series
}

type probeKey struct {
	kind      probes.Kind
	uid       types.UID
	container string
}

// NewProbes returns an empty /metrics/probes registry.
func NewProbes() *Probes {
	p := &Probes{reg: prometheus.NewRegistry(), total: famProbeTotal.counterVec(), duration: famProbeDuration.histogramVec(),
		series: map[probeKey][]string{}}
	start := famProcessStart.gaugeVec()
	if t, ok := processStart(); ok {
		start.WithLabelValues().Set(t)
	}
	p.reg.MustRegister(p.total, p.duration, start)
	return p
}

// Gatherer is the registry.
func (p *Probes) Gatherer() prometheus.Gatherer { return p.reg }

// Handler serves /metrics/probes.
func (p *Probes) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// OnProbe is probes.WithOnProbe's listener, as kubelet's probe worker
// counts: each result under "successful", "failed" or "unknown", the
// duration of successful and unknown ones; a stopped worker's series are
// deleted.
func (p *Probes) OnProbe(r probes.ProbeRun) {
	k := probeKey{r.Kind, r.PodUID, r.Container}
	kind, uid := string(r.Kind), string(r.PodUID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Stopped {
		if s, ok := p.series[k]; ok {
			for _, res := range []string{"successful", "failed", "unknown"} {
				p.total.DeleteLabelValues(kind, res, r.Container, s[0], s[1], uid)
			}
			p.duration.DeleteLabelValues(kind, r.Container, s[0], s[1])
			delete(p.series, k)
		}
		return
	}
	p.series[k] = []string{r.Pod, r.Namespace}
	switch r.Result {
	case podsync.ProbeSuccess:
		p.total.WithLabelValues(kind, "successful", r.Container, r.Pod, r.Namespace, uid).Inc()
		p.duration.WithLabelValues(kind, r.Container, r.Pod, r.Namespace).Observe(r.Duration.Seconds())
	case podsync.ProbeFailure:
		p.total.WithLabelValues(kind, "failed", r.Container, r.Pod, r.Namespace, uid).Inc()
	default:
		p.total.WithLabelValues(kind, "unknown", r.Container, r.Pod, r.Namespace, uid).Inc()
		p.duration.WithLabelValues(kind, r.Container, r.Pod, r.Namespace).Observe(r.Duration.Seconds())
	}
}

// processStart is this process's start time in seconds since the epoch,
// from /proc/self/stat and the boot time, as component-base reads it.
func processStart() (float64, bool) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command (which may hold spaces): state is field 3,
	// starttime field 22.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, false
	}
	ticks, err := strconv.ParseFloat(fields[19], 64)
	if err != nil {
		return 0, false
	}
	procStat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(procStat), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, false
			}
			const userHZ = 100 // sysconf(_SC_CLK_TCK) on Linux
			return boot + ticks/userHZ, true
		}
	}
	return 0, false
}
