package nodemetrics

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/eviction"
	"github.com/podstart/podstart/imagegc"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// ErrConfig: New was given what it cannot serve.
var ErrConfig = errors.New("nodemetrics: bad config")

// Metrics is kubelet's /metrics registry for one node: the families of
// KubeletFamilies, fed by the hooks below, and the Go runtime's and the
// process's collectors. It is safe for concurrent use.
type Metrics struct {
	clock clock.PassiveClock
	reg   *prometheus.Registry

	runningPods                                *prometheus.GaugeVec
	runningContainers                          *prometheus.GaugeVec
	relistDuration, relistInterval             prometheus.Histogram
	plegLastSeen                               *prometheus.GaugeVec
	runtimeOps, runtimeOpsErrors               *prometheus.CounterVec
	runtimeOpsDuration                         *prometheus.HistogramVec
	runSandboxDuration                         *prometheus.HistogramVec
	runSandboxErrors                           *prometheus.CounterVec
	startedPods, startedPodsErrors             prometheus.Counter
	startedContainers, startedContainersErrors *prometheus.CounterVec
	podStart, podStartSLI, podStartTotal       prometheus.Histogram
	firstNetworkPod                            *prometheus.GaugeVec
	imageGC                                    *prometheus.CounterVec
	evictions                                  *prometheus.CounterVec

	mu          sync.Mutex
	lastRelist  time.Time
	seen        map[types.UID]time.Time // first seen; zero once observed running
	starts      map[types.UID]*startState
	excluded    map[types.UID]bool
	firstNetPod bool
}

// Option configures Metrics.
type Option func(*Metrics)

// WithClock sets the clock of durations and first-seen times (default the
// real one).
func WithClock(c clock.PassiveClock) Option { return func(m *Metrics) { m.clock = c } }

// New returns the registry of node nodeName (kubelet_node_name).
func New(nodeName string, opts ...Option) (*Metrics, error) {
	if nodeName == "" {
		return nil, fmt.Errorf("%w: no node name", ErrConfig)
	}
	m := &Metrics{
		clock: clock.RealClock{}, reg: prometheus.NewRegistry(),
		runningPods:             famRunningPods.gaugeVec(),
		runningContainers:       famRunningContainers.gaugeVec(),
		relistDuration:          famRelistDuration.histogram(),
		relistInterval:          famRelistInterval.histogram(),
		plegLastSeen:            famPLEGLastSeen.gaugeVec(),
		runtimeOps:              famRuntimeOps.counterVec(),
		runtimeOpsErrors:        famRuntimeOpsErrors.counterVec(),
		runtimeOpsDuration:      famRuntimeOpsDuration.histogramVec(),
		runSandboxDuration:      famRunSandboxDuration.histogramVec(),
		runSandboxErrors:        famRunSandboxErrors.counterVec(),
		startedPods:             famStartedPods.counter(),
		startedPodsErrors:       famStartedPodsErrors.counter(),
		startedContainers:       famStartedContainers.counterVec(),
		startedContainersErrors: famStartedContainersErrors.counterVec(),
		podStart:                famPodStart.histogram(),
		podStartSLI:             famPodStartSLI.histogram(),
		podStartTotal:           famPodStartTotal.histogram(),
		firstNetworkPod:         famFirstNetworkPod.gaugeVec(),
		imageGC:                 famImageGC.counterVec(),
		evictions:               famEvictions.counterVec(),
		seen:                    map[types.UID]time.Time{},
		starts:                  map[types.UID]*startState{},
		excluded:                map[types.UID]bool{},
	}
	for _, o := range opts {
		o(m)
	}
	node := famNodeName.gaugeVec()
	node.WithLabelValues(nodeName).Set(1)
	m.reg.MustRegister(node, m.runningPods, m.runningContainers, m.relistDuration, m.relistInterval,
		m.plegLastSeen, m.runtimeOps, m.runtimeOpsErrors, m.runtimeOpsDuration, m.runSandboxDuration,
		m.runSandboxErrors, m.startedPods, m.startedPodsErrors, m.startedContainers, m.startedContainersErrors,
		m.podStart, m.podStartSLI, m.podStartTotal, m.firstNetworkPod, m.imageGC, m.evictions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m, nil
}

// Gatherer is the registry, for tests and for callers that serve it
// their own way.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves /metrics as kubelet does (the Prometheus text format,
// or what the scraper negotiates; a family that fails is left out and
// the rest served).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// OnRelist is podworker.WithOnRelist's listener: kubelet's PLEG relist
// metrics (the interval from the previous relist's start, the duration
// even of a failed relist) and, from a relist that succeeded, the running
// pods (a READY sandbox) and the containers by state, over every pod the
// runtime has, as kubelet counts them.
func (m *Metrics) OnRelist(r podworker.Relisted) {
	m.mu.Lock()
	last := m.lastRelist
	m.lastRelist = r.Start
	m.mu.Unlock()
	if !last.IsZero() {
		m.relistInterval.Observe(r.Start.Sub(last).Seconds())
	}
	m.relistDuration.Observe(r.Duration.Seconds())
	if r.Err != nil {
		return
	}
	m.plegLastSeen.WithLabelValues().Set(float64(r.Start.Add(r.Duration).Unix()))
	running := 0
	states := map[podsync.ContainerState]int{}
	for _, p := range r.Pods {
		for _, c := range p.ContainerStatuses {
			states[c.State]++
		}
		for _, s := range p.SandboxStatuses {
			if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				running++
				break
			}
		}
	}
	// As kubelet: a state seen before and now absent keeps its last value.
	for s, n := range states {
		m.runningContainers.WithLabelValues(string(s)).Set(float64(n))
	}
	m.runningPods.WithLabelValues().Set(float64(running))
}

// OnImageGC is imagegc.WithOnPass's listener: each image removed counts
// under its reason ("age" or "space"), as kubelet_image_garbage_collected_total.
func (m *Metrics) OnImageGC(p imagegc.Pass) {
	for _, r := range p.Removed {
		if r.Reason != "" {
			m.imageGC.WithLabelValues(r.Reason).Inc()
		}
	}
}

// EvictionKiller wraps the eviction manager's Killer so each eviction
// counts under its signal (kubelet_evictions), as kubelet counts it: once
// the pod is chosen and its event written, whether the kill then succeeds
// or not. A local storage eviction (no signal) counts under kubelet's
// pseudo-signals, told apart by kubelet's messages; one whose message is
// none of them is not counted.
func (m *Metrics) EvictionKiller(k eviction.Killer) eviction.Killer {
	return evictionKiller{k, m}
}

type evictionKiller struct {
	eviction.Killer
	m *Metrics
}

func (k evictionKiller) Evict(ctx contextT, e eviction.Eviction) error {
	if s := evictionSignal(e); s != "" {
		k.m.evictions.WithLabelValues(s).Inc()
	}
	return k.Killer.Evict(ctx, e)
}

// evictionSignal is the signal kubelet counts an eviction under.
func evictionSignal(e eviction.Eviction) string {
	if e.Signal != "" {
		return string(e.Signal)
	}
	switch {
	case strings.HasPrefix(e.Message, "Usage of EmptyDir volume"):
		return "emptydirfs.limit"
	case strings.HasPrefix(e.Message, "Pod ephemeral local storage usage exceeds"):
		return "ephemeralpodfs.limit"
	case strings.HasPrefix(e.Message, "Container ") && strings.Contains(e.Message, "exceeded its local ephemeral storage limit"):
		return "ephemeralcontainerfs.limit"
	}
	return ""
}

// containerType is kubelet's metric label of a container of pod.
func containerType(pod *corev1.Pod, name string) string {
	if pod != nil {
		for _, c := range pod.Spec.InitContainers {
			if c.Name == name {
				return "init_container"
			}
		}
		for _, c := range pod.Spec.EphemeralContainers {
			if c.Name == name {
				return "ephemeral_container"
			}
		}
	}
	return "container"
}
