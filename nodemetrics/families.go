package nodemetrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Type is a metric family's type, as Prometheus' text format names it.
type Type string

// The types the node's families use.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Stability is a metric's stability level, which kubelet's registry
// (k8s.io/component-base/metrics) writes at the start of its help text.
type Stability string

// The stability levels kubelet's families use.
const (
	Alpha  Stability = "ALPHA"
	Beta   Stability = "BETA"
	Stable Stability = "STABLE"
	// Internal: kubelet's FirstNetworkPodStartSLIDuration.
	Internal Stability = "INTERNAL"
)

// Family is one metric family as kubelet v1.37.2 declares it: what this
// package serves under that name, with the same type, help text, label
// names and buckets.
type Family struct {
	Name      string
	Help      string // without the stability marker
	Stability Stability
	Type      Type
	Labels    []string
	Buckets   []float64 // histograms only
}

// FullHelp is the help text as served: kubelet's registry writes the
// stability level first ("[ALPHA] ...").
func (f Family) FullHelp() string { return "[" + string(f.Stability) + "] " + f.Help }

// Kubelet's buckets (pkg/kubelet/metrics).
var (
	defBuckets             = prometheus.DefBuckets
	podStartupBuckets      = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	runtimeDurationBuckets = prometheus.ExponentialBuckets(.005, 2.5, 14)
)

// The families of kubelet's /metrics this package serves.
var (
	famNodeName = Family{Name: "kubelet_node_name", Help: "The node's name. The count is always 1.",
		Stability: Alpha, Type: Gauge, Labels: []string{"node"}}
	famRunningPods = Family{Name: "kubelet_running_pods", Help: "Number of pods that have a running pod sandbox",
		Stability: Alpha, Type: Gauge}
	famRunningContainers = Family{Name: "kubelet_running_containers", Help: "Number of containers currently running",
		Stability: Alpha, Type: Gauge, Labels: []string{"container_state"}}
	famRelistDuration = Family{Name: "kubelet_pleg_relist_duration_seconds", Help: "Duration in seconds for relisting pods in PLEG.",
		Stability: Alpha, Type: Histogram, Buckets: defBuckets}
	famRelistInterval = Family{Name: "kubelet_pleg_relist_interval_seconds", Help: "Interval in seconds between relisting in PLEG.",
		Stability: Alpha, Type: Histogram, Buckets: defBuckets}
	famPLEGLastSeen = Family{Name: "kubelet_pleg_last_seen_seconds", Help: "Timestamp in seconds when PLEG was last seen active.",
		Stability: Alpha, Type: Gauge}
	famRuntimeOps = Family{Name: "kubelet_runtime_operations_total", Help: "Cumulative number of runtime operations by operation type.",
		Stability: Alpha, Type: Counter, Labels: []string{"operation_type"}}
	famRuntimeOpsErrors = Family{Name: "kubelet_runtime_operations_errors_total", Help: "Cumulative number of runtime operation errors by operation type.",
		Stability: Alpha, Type: Counter, Labels: []string{"operation_type"}}
	famRuntimeOpsDuration = Family{Name: "kubelet_runtime_operations_duration_seconds", Help: "Duration in seconds of runtime operations. Broken down by operation type.",
		Stability: Alpha, Type: Histogram, Labels: []string{"operation_type"}, Buckets: runtimeDurationBuckets}
	famRunSandboxDuration = Family{Name: "kubelet_run_podsandbox_duration_seconds", Help: "Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.",
		Stability: Alpha, Type: Histogram, Labels: []string{"runtime_handler"}, Buckets: defBuckets}
	famRunSandboxErrors = Family{Name: "kubelet_run_podsandbox_errors_total", Help: "Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.",
		Stability: Alpha, Type: Counter, Labels: []string{"runtime_handler"}}
	famStartedPods = Family{Name: "kubelet_started_pods_total", Help: "Cumulative number of pods started",
		Stability: Alpha, Type: Counter}
	famStartedPodsErrors = Family{Name: "kubelet_started_pods_errors_total", Help: "Cumulative number of errors when starting pods",
		Stability: Alpha, Type: Counter}
	famStartedContainers = Family{Name: "kubelet_started_containers_total", Help: "Cumulative number of containers started",
		Stability: Alpha, Type: Counter, Labels: []string{"container_type"}}
	famStartedContainersErrors = Family{Name: "kubelet_started_containers_errors_total", Help: "Cumulative number of errors when starting containers",
		Stability: Alpha, Type: Counter, Labels: []string{"container_type", "code"}}
	famPodStart = Family{Name: "kubelet_pod_start_duration_seconds", Help: "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
		Stability: Alpha, Type: Histogram, Buckets: podStartupBuckets}
	famPodStartSLI = Family{Name: "kubelet_pod_start_sli_duration_seconds", Help: "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Stability: Alpha, Type: Histogram, Buckets: podStartupBuckets}
	famPodStartTotal = Family{Name: "kubelet_pod_start_total_duration_seconds", Help: "Duration in seconds to start a pod since creation, including time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Stability: Alpha, Type: Histogram, Buckets: podStartupBuckets}
	famFirstNetworkPod = Family{Name: "kubelet_first_network_pod_start_sli_duration_seconds", Help: "Duration in seconds to start the first network pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Stability: Internal, Type: Gauge}
	famImageGC = Family{Name: "kubelet_image_garbage_collected_total", Help: "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
		Stability: Alpha, Type: Counter, Labels: []string{"reason"}}
	famEvictions = Family{Name: "kubelet_evictions", Help: "Cumulative number of pod evictions by eviction signal",
		Stability: Alpha, Type: Counter, Labels: []string{"eviction_signal"}}

	// /metrics/probes.
	famProbeTotal = Family{Name: "prober_probe_total", Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		Stability: Beta, Type: Counter, Labels: []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}}
	famProbeDuration = Family{Name: "prober_probe_duration_seconds", Help: "Duration in seconds for a probe response.",
		Stability: Alpha, Type: Histogram, Labels: []string{"probe_type", "container", "pod", "namespace"}, Buckets: defBuckets}
	famProcessStart = Family{Name: "process_start_time_seconds", Help: "Start time of the process since unix epoch in seconds.",
		Stability: Alpha, Type: Gauge}
)

// KubeletFamilies are the families of kubelet's /metrics that Metrics
// serves (besides the Go runtime's and the process's collectors, which
// kubelet's registry serves too).
func KubeletFamilies() []Family {
	return []Family{famNodeName, famRunningPods, famRunningContainers, famRelistDuration, famRelistInterval,
		famPLEGLastSeen, famRuntimeOps, famRuntimeOpsErrors, famRuntimeOpsDuration, famRunSandboxDuration,
		famRunSandboxErrors, famStartedPods, famStartedPodsErrors, famStartedContainers, famStartedContainersErrors,
		famPodStart, famPodStartSLI, famPodStartTotal, famFirstNetworkPod, famImageGC, famEvictions}
}

// ProbeFamilies are the families of kubelet's /metrics/probes that Probes
// serves.
func ProbeFamilies() []Family {
	return []Family{famProbeTotal, famProbeDuration, famProcessStart}
}

func (f Family) counterVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.Name, Help: f.FullHelp()}, f.Labels)
}

func (f Family) counter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: f.Name, Help: f.FullHelp()})
}

func (f Family) gaugeVec() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name, Help: f.FullHelp()}, f.Labels)
}

func (f Family) histogramVec() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: f.Name, Help: f.FullHelp(), Buckets: f.Buckets}, f.Labels)
}

func (f Family) histogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: f.Name, Help: f.FullHelp(), Buckets: f.Buckets})
}
